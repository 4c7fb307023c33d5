from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given, settings

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.iri import NS
from kbqa_lit.kb.lf.sparql import SEMANTICS, sexpr_to_sparql
from tests.helpers.sexpr_strategies import sexpr_text

XSD = "http://www.w3.org/2001/XMLSchema#"


def _nt(triples: list[tuple[str, str, str]]) -> str:
    lines = []
    for s, p, o in triples:
        obj = o if o.startswith('"') else f"<{NS}{o}>"
        lines.append(f"<{NS}{s}> <{NS}{p}> {obj} .")
    return "\n".join(lines) + "\n"


def _store(triples: list[tuple[str, str, str]]) -> ox.Store:
    store = ox.Store()
    store.load(_nt(triples).encode(), ox.RdfFormat.N_TRIPLES)
    return store


def _answers(store: ox.Store, expr: str, **kw) -> set[str]:
    out = set()
    for solution in store.query(sexpr_to_sparql(expr, **kw)):
        term = solution[0]
        if term is None:
            continue
        out.add(term.value[len(NS) :] if isinstance(term, ox.NamedNode) else term.value)
    return out


# A small family + film world: a's spouse is b, b's spouse is a; films with typed years.
FAMILY = [
    ("m.a", "people.person.spouse", "m.b"),
    ("m.b", "people.person.spouse", "m.a"),
    ("m.a", "people.person.nationality", "m.uk"),
    ("m.b", "people.person.nationality", "m.fr"),
    ("m.a", "type.object.type", "people.person"),
    ("m.b", "type.object.type", "people.person"),
    ("m.uk", "type.object.name", '"United Kingdom"@en'),
    ("m.uk", "type.object.name", '"Royaume-Uni"@fr'),
    ("m.uk", "type.object.name", '"UK"'),
]
FILMS = [
    ("m.f1", "film.film.release_year", f'"1999"^^<{XSD}gYear>'),
    ("m.f2", "film.film.release_year", f'"2005"^^<{XSD}gYear>'),
    ("m.f3", "film.film.release_year", f'"2005-06-01"^^<{XSD}date>'),
    ("m.f4", "film.film.release_year", f'"2010-01-01T00:00:00"^^<{XSD}dateTime>'),
    ("m.f1", "film.film.runtime", f'"90"^^<{XSD}integer>'),
    ("m.f2", "film.film.runtime", f'"120.5"^^<{XSD}float>'),
    ("m.f3", "film.film.runtime", f'"120.5"^^<{XSD}float>'),
    ("m.f4", "film.film.runtime", f'"100"^^<{XSD}integer>'),
    ("m.f1", "film.film.directed_by", "m.d"),
    ("m.f2", "film.film.directed_by", "m.d"),
    ("m.f3", "film.film.directed_by", "m.d"),
    ("m.f4", "film.film.directed_by", "m.e"),
    *[(f"m.f{i}", "type.object.type", "film.film") for i in range(1, 5)],
]


def test_every_real_gold_sexpr_converts_to_sparql_that_oxigraph_runs(gold_sexprs):
    store = ox.Store()
    for _, text, _ in gold_sexprs:
        for semantics in SEMANTICS:
            query = sexpr_to_sparql(text, semantics=semantics)
            assert "ns:" not in query and " OR " not in query
            list(store.query(query))  # parses and runs


def test_answer_semantics_differ_as_documented():
    store = _store(FAMILY)
    spouse_of_spouse = "(JOIN (R people.person.spouse) (JOIN (R people.person.spouse) m.a))"
    assert _answers(store, spouse_of_spouse, semantics="plain") == {"m.a"}
    assert _answers(store, spouse_of_spouse, semantics="exclude-topic") == set()
    assert _answers(store, spouse_of_spouse, semantics="simple-path") == set()
    # exclude-topic only drops the constants; simple-path also forbids revisiting a hop's node
    loop = [("m.x", "r.r.knows", "m.y"), ("m.y", "r.r.knows", "m.z"), ("m.z", "r.r.knows", "m.y")]
    store = _store(loop)
    three = "(JOIN (R r.r.knows) (JOIN (R r.r.knows) (JOIN (R r.r.knows) m.x)))"
    assert _answers(store, three, semantics="plain") == {"m.y"}
    assert _answers(store, three, semantics="exclude-topic") == {"m.y"}
    assert _answers(store, three, semantics="simple-path") == set()


def test_literal_answers_are_english_or_untagged():
    store = _store(FAMILY)
    names = "(JOIN (R type.object.name) (JOIN (R people.person.nationality) m.a))"
    assert _answers(store, names) == {"United Kingdom", "UK"}


def test_class_constraint_and_language_tagged_join():
    store = _store(FAMILY)
    assert _answers(
        store,
        '(AND people.person (JOIN people.person.nationality (JOIN type.object.name "United Kingdom"@en)))',
    ) == {"m.a"}
    assert _answers(store, '(JOIN people.person.nationality (JOIN type.object.name "UK"))') == {"m.a"}


def test_count_argmax_argmin_and_ties():
    store = _store(FILMS)
    assert _answers(store, "(COUNT (JOIN film.film.directed_by m.d))") == {"3"}
    assert _answers(store, "(ARGMAX film.film film.film.runtime)", ties="all") == {"m.f2", "m.f3"}
    assert len(_answers(store, "(ARGMAX film.film film.film.runtime)", keep_ties=False)) == 1
    assert _answers(store, "(ARGMIN film.film film.film.runtime)") == {"m.f1"}
    # a relation chain: the director whose films include the longest one
    films = "(JOIN (R film.film.directed_by) (JOIN type.object.type film.film))"
    chain = f"(ARGMAX {films} (JOIN (R film.film.directed_by) film.film.runtime))"
    assert _answers(store, chain) == {"m.d"}
    # nested ARGMAX under a JOIN
    nested = "(JOIN (R film.film.directed_by) (ARGMIN film.film film.film.runtime))"
    assert _answers(store, nested) == {"m.d"}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (f"(AND film.film (gt film.film.release_year 2004^^{XSD}gYear))", {"m.f2", "m.f3", "m.f4"}),
        (f"(AND film.film (ge film.film.release_year 2005^^{XSD}gYear))", {"m.f2", "m.f3", "m.f4"}),
        (f"(AND film.film (lt film.film.release_year 2005^^{XSD}gYear))", {"m.f1"}),
        (f"(AND film.film (le film.film.release_year 2005-06-01^^{XSD}date))", {"m.f1", "m.f2", "m.f3"}),
        ("(AND film.film (gt film.film.runtime 100))", {"m.f2", "m.f3"}),
        (f"(AND film.film (le film.film.runtime 100^^{XSD}integer))", {"m.f1", "m.f4"}),
        ('(AND film.film (lt film.film.runtime "100.0"))', {"m.f1"}),
        (f"(JOIN film.film.release_year 1999^^{XSD}gYear)", {"m.f1"}),
    ],
)
def test_comparatives_across_date_types_and_numbers(expr, expected):
    assert _answers(_store(FILMS), expr) == expected


def test_time_constraint_with_from_and_to():
    xs = f"^^<{XSD}gYear>"
    kb = [
        ("m.p", "sports.pro_athlete.teams", "m.r1"),
        ("m.p", "sports.pro_athlete.teams", "m.r2"),
        ("m.p", "sports.pro_athlete.teams", "m.r3"),
        ("m.r1", "sports.roster.team", "m.t1"),
        ("m.r1", "sports.roster.from", f'"2001"{xs}'),
        ("m.r1", "sports.roster.to", f'"2005"{xs}'),
        ("m.r2", "sports.roster.team", "m.t2"),
        ("m.r2", "sports.roster.from", f'"2006-03-01"^^<{XSD}date>'),
        ("m.r3", "sports.roster.team", "m.t3"),
        ("m.r3", "sports.roster.from", f'"1990"{xs}'),
        ("m.r3", "sports.roster.to", f'"1995"{xs}'),
    ]
    store = _store(kb)

    def teams(time: str) -> set[str]:
        expr = f"(JOIN (R sports.roster.team) (TC (JOIN (R sports.pro_athlete.teams) m.p) sports.roster.from {time}))"
        return _answers(store, expr)

    assert teams("2003") == {"m.t1"}
    assert teams("2005") == {"m.t1"}
    assert teams("2010") == {"m.t2"}  # open-ended: no `to`
    assert teams("NOW") == {"m.t2"}
    assert teams(f"1992-01-01^^{XSD}date") == {"m.t3"}
    assert teams("1980") == set()


def test_quoted_strings_cannot_inject_sparql():
    nasty = 'x" } ; DROP ALL ; { "'
    escaped = nasty.replace("\\", "\\\\").replace('"', '\\"')
    query = sexpr_to_sparql(f'(JOIN a.b.name "{escaped}")')
    assert "DROP ALL" in query  # present only inside the string literal
    store = ox.Store()
    list(store.query(query))  # still one well-formed SELECT
    kb = [("m.1", "a.b.name", '"x\\" } ; DROP ALL ; { \\""')]
    assert _answers(_store(kb), f'(JOIN a.b.name "{escaped}")') == {"m.1"}


@pytest.mark.parametrize(
    "bad",
    ["(COUNT (JOIN a.b.c (COUNT a.b)))", '(TC a.b a.b.from "soon")', "(JOIN a.b.c m.1> . }"],
)
def test_unconvertible_input_raises_the_typed_error(bad):
    with pytest.raises(SExprError):
        sexpr_to_sparql(bad)


def test_unknown_semantics_is_a_typed_error():
    with pytest.raises(SExprError, match="unknown answer semantics"):
        sexpr_to_sparql("(JOIN a.b.c m.1)", semantics="whatever")


@settings(max_examples=300, deadline=None)
@given(sexpr_text)
def test_conversion_always_yields_sparql_that_oxigraph_parses(text):
    store = _store(FILMS)
    for semantics in SEMANTICS:
        list(store.query(sexpr_to_sparql(text, semantics=semantics)))
