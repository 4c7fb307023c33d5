from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sexpr import Atom, Call, parse_sexpr, schema_items, skeleton, to_sexpr_string
from tests.helpers.sexpr_strategies import sexpr_text

GOLD_COUNTS = {"grailqa": 3745, "webqsp": 2779, "cwq": 1710}


def test_round_trip_every_real_gold_sexpr(gold_sexprs):
    by_source: dict[str, int] = {}
    for source, text, _ in gold_sexprs:
        assert to_sexpr_string(parse_sexpr(text)) == text
        by_source[source] = by_source.get(source, 0) + 1
    # every gold S-expression of the three Freebase datasets here (counted from the files)
    assert by_source == GOLD_COUNTS


def test_tree_shape():
    tree = parse_sexpr("(AND music.album (JOIN (R music.artist.album) m.0abc))")
    assert tree == Call(
        "AND",
        (Atom("music.album"), Call("JOIN", (Call("R", (Atom("music.artist.album"),)), Atom("m.0abc")))),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(AND music.album (JOIN (R music.artist.album) m.0abc))", "(AND <class> (JOIN (R <rel>) <entity>))"),
        (
            "(ARGMAX (AND a.b (JOIN a.b.c g.1x)) (JOIN (R x.y.z) x.y.w))",
            "(ARGMAX (AND <class> (JOIN <rel> <entity>)) (JOIN (R <rel>) <rel>))",
        ),
        ("(COUNT (AND a.b (gt a.b.c 5)))", "(COUNT (AND <class> (gt <rel> <literal>)))"),
        ('(JOIN a.b.c "Young Forrest")', "(JOIN <rel> <literal>)"),
        ("(TC (JOIN a.b.c m.1) a.b.from NOW)", "(TC (JOIN <rel> <entity>) <rel> <literal>)"),
    ],
)
def test_skeleton(text, expected):
    assert skeleton(text) == expected


def test_schema_items_in_order_of_first_occurrence():
    items = schema_items(
        "(AND (JOIN people.person.gender m.05zppz) (JOIN (R people.sibling_relationship.sibling) "
        "(JOIN (R people.person.sibling_s) m.06w2sn5)))"
    )
    assert items.relations == (
        "people.person.gender",
        "people.sibling_relationship.sibling",
        "people.person.sibling_s",
    )
    assert items.entities == ("m.05zppz", "m.06w2sn5")
    assert items.classes == () and items.literals == ()
    typed = schema_items(
        "(AND film.film (lt film.film.initial_release_date 1998^^http://www.w3.org/2001/XMLSchema#gYear))"
    )
    assert typed.classes == ("film.film",)
    assert typed.literals == ("1998^^http://www.w3.org/2001/XMLSchema#gYear",)


def test_skeleton_of_every_real_gold_sexpr_keeps_structure(gold_sexprs):
    for _, text, _ in gold_sexprs:
        sk = skeleton(text)
        assert sk.count("(") == text.count("(") - sum(t.count("(") for t in _quoted(text))
        items = schema_items(text)
        n_atoms = sk.count("<rel>") + sk.count("<class>") + sk.count("<entity>") + sk.count("<literal>")
        assert n_atoms >= len(items.relations) + len(items.classes) + len(items.entities)


def _quoted(text: str) -> list[str]:
    import re

    return re.findall(r'"(?:[^"\\]|\\.)*"', text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("(JOIN a.b.c m.1", "never closed"),
        ("(JOIN a.b.c m.1))", "after the expression"),
        (")", "unexpected ')'"),
        ("(OR a.b c.d)", "unknown operator 'OR'"),
        ("(WITH a.b c.d)", "unknown operator 'WITH'"),
        ("(PLUS a.b c.d)", "unknown operator 'PLUS'"),
        ("(JOIN a.b.c)", "JOIN takes 2"),
        ("(R a.b.c a.b.d)", "R takes 1"),
        ("(AND a.b)", "at least 2"),
        ("(TC a.b a.b.c)", "TC takes 3"),
        ("(COUNT m.1)", "expected a class"),
        ("(JOIN m.1 a.b)", "expected a relation"),
        ('(JOIN a.b.c "unterminated)', "unexpected character"),
        ("(JOIN a.b.c x})", "unknown token"),
        ("(gt a.b.c m.1)", "compares with a literal"),
        ("(JOIN a.b.c 1^^javascript:alert)", "malformed typed literal"),
        ('(JOIN a.b.c "x"@en}', "bad language tag"),
        ("(())", "expected an operator"),
    ],
)
def test_malformed_input_raises_the_typed_error(text, message):
    with pytest.raises(SExprError, match=re.escape(message)):
        parse_sexpr(text)


def test_non_string_input_is_a_typed_error():
    with pytest.raises(SExprError):
        parse_sexpr(None)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(sexpr_text)
def test_printer_and_parser_are_inverse(text):
    tree = parse_sexpr(text)
    assert to_sexpr_string(tree) == text
    assert parse_sexpr(to_sexpr_string(tree)) == tree


_MUTATION_TOKENS = [
    "(",
    ")",
    "AND",
    "JOIN",
    "R",
    "COUNT",
    "ARGMAX",
    "OR",
    "TC",
    "gt",
    '"',
    "m.0x",
    "a.b.c",
    " ",
    "^^",
    "@en",
    "NOW",
    "\\",
    "{",
    "}",
    "\n",
]


def _mutate(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        pos = rng.randrange(len(chars) + 1)
        if op < 0.4 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op < 0.8:
            chars[pos:pos] = list(rng.choice(_MUTATION_TOKENS))
        elif chars:
            i, j = sorted(rng.sample(range(len(chars)), 2)) if len(chars) > 1 else (0, 0)
            chars[i], chars[j] = chars[j], chars[i]
    return "".join(chars)


def test_fuzz_ten_thousand_mutations_only_raise_the_typed_error(gold_sexprs):
    rng = random.Random(1234)
    seeds = [text for _, text, _ in gold_sexprs]
    parsed = failed = 0
    for _ in range(10_000):
        text = _mutate(rng.choice(seeds), rng)
        try:
            tree = parse_sexpr(text)
        except SExprError:
            failed += 1
            continue
        parsed += 1
        assert parse_sexpr(to_sexpr_string(tree)) == tree
    assert parsed > 100 and failed > 1000  # the mutations exercise both outcomes
