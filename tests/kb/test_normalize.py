"""Normalised S-expressions: exact inverse on real gold data, property tests, fuzzy and ambiguous labels."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.denormalize import denormalize_all, denormalize_sexpr, invert_labels, label_similarity
from kbqa_lit.kb.lf.normalize import normalize_sexpr, schema_to_words, words_to_schema
from kbqa_lit.kb.lf.sexpr import ENTITY_RE, Atom, Role, atoms_with_roles, map_atoms, parse_sexpr, to_sexpr_string
from tests.helpers.sexpr_strategies import sexpr_text

XSD = "http://www.w3.org/2001/XMLSchema#"


def _entities(sexpr: str) -> list[str]:
    return list(dict.fromkeys(a.text for a, role in atoms_with_roles(parse_sexpr(sexpr)) if role == "entity"))


def _shares_a_label(sexpr: str, labels: Mapping[str, str]) -> bool:
    named = [labels[e] for e in _entities(sexpr) if labels.get(e)]
    return len(set(named)) < len(named)


# ----------------------------------------------------------------------------- real gold data


def test_inverse_on_every_real_gold_sexpr(gold_sexprs):
    counts: Counter[str] = Counter()
    failures = []
    for source, sexpr, labels in gold_sexprs:
        counts[f"{source}/total"] += 1
        normalised = normalize_sexpr(sexpr, labels)
        assert not any(f"[ {e} ]" in normalised for e in _entities(sexpr) if labels.get(e))
        back = denormalize_sexpr(normalised, label_to_ids=invert_labels(labels))
        if back == sexpr:
            counts[f"{source}/exact"] += 1
            continue
        if _shares_a_label(sexpr, labels):
            counts[f"{source}/ambiguous"] += 1
            variants = denormalize_all(normalised, label_to_ids=invert_labels(labels))
            assert sexpr in variants, (sexpr, variants)
            continue
        failures.append((source, sexpr, normalised, back))
    print("normalise→denormalise on gold S-expressions:", dict(sorted(counts.items())))
    assert not failures, failures[:5]
    for source in ("grailqa", "webqsp", "cwq"):
        assert counts[f"{source}/total"] > 0
    # Measured on ../shared/data: 3,745/3,745 GrailQA, 2,776/2,779 WebQSP, 1,710/1,710 CWQ exact;
    # the 3 WebQSP misses give two entities one label ("ALF" twice, "Indiana Jones");
    # denormalize_all recovers them.
    assert counts["grailqa/ambiguous"] + counts["webqsp/ambiguous"] + counts["cwq/ambiguous"] <= 10


def test_gold_entities_without_labels_are_written_by_id(gold_sexprs):
    unlabeled = 0
    for _, sexpr, labels in gold_sexprs:
        normalised = normalize_sexpr(sexpr, labels)
        for ent in _entities(sexpr):
            if not labels.get(ent):
                unlabeled += 1
                assert f"[ {ent} ]" in normalised
                assert denormalize_sexpr(normalised, invert_labels(labels)) == sexpr or _shares_a_label(sexpr, labels)
    assert unlabeled > 0  # CWQ's common.topic.notable_types targets such as m.01mp have no label


def test_examples_of_the_scheme():
    labels = {"m.06w2sn5": "Justin Bieber", "m.05zppz": "Male"}
    sexpr = (
        "(AND (JOIN people.person.gender m.05zppz) "
        "(JOIN (R people.sibling_relationship.sibling) (JOIN (R people.person.sibling_s) m.06w2sn5)))"
    )
    assert normalize_sexpr(sexpr, labels) == (
        "( and ( join [ people , person , gender ] [ Male ] ) ( join ( reverse"
        " [ people , sibling relationship , sibling ] ) ( join ( reverse [ people , person , sibling s ] )"
        " [ Justin Bieber ] ) ) )"
    )
    assert normalize_sexpr("(ARGMAX music.album music.album.release_date)", {}) == (
        "( argmax [ music , album ] [ music , album , release date ] )"
    )
    assert normalize_sexpr(f"(lt film.film.initial_release_date 1998^^{XSD}gYear)", {}) == (
        "( less than [ film , film , initial release date ] 1998 year )"
    )
    assert normalize_sexpr("(TC (JOIN a.b m.0x) a.b.from NOW)", {}) == (
        "( time constraint ( join [ a , b ] [ m.0x ] ) [ a , b , from ] NOW )"
    )
    assert normalize_sexpr("(COUNT (AND a.b (ge a.b.c 13)))", {}) == (
        "( count ( and [ a , b ] ( greater equal [ a , b , c ] 13 ) ) )"
    )


@pytest.mark.parametrize(
    "schema_id",
    [
        "people.person.place_of_birth",
        "location.location_symbol_relationship.Kind_of_symbol",
        "location.country.iso3166_1_alpha2",
        "user.uoa_it.uoa_it.uoa_technology_type.uoa_category",
        "a.b__c",
        "_a._b",
        "a.b_",
        "food.dish.type_of_dish1",
    ],
)
def test_schema_words_are_exactly_invertible(schema_id):
    assert words_to_schema(schema_to_words(schema_id)) == schema_id


def test_schema_words_read_case_and_capitals():
    assert schema_to_words("location.location_symbol_relationship.Kind_of_symbol") == (
        "location , location symbol relationship , Kind of symbol"
    )


# ----------------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    "literal",
    [
        '"Young Forrest"',
        '"Animation"@en',
        '"216 O St."@en',
        '"as Robby Ray Stewart"@en',
        '"1.8"',
        '"say \\"hi\\" [ now ]"',
        '"a , b ]"',
        '"x"@en-GB',
        "13",
        "-0.5",
        "084",
        "NOW",
        f"1998^^{XSD}gYear",
        f"2002-07^^{XSD}gYearMonth",
        f"1966-01-12^^{XSD}date",
        f"2010-09-22T21:57:22Z^^{XSD}dateTime",
        f"2.3e+06^^{XSD}float",
        f"-3.0^^{XSD}float",
        f"20299592^^{XSD}integer",
        f"true^^{XSD}boolean",
        f"5^^{XSD}year",
        f"m.0abc^^{XSD}string",
        "7^^http://example.org/dt#unit",
    ],
)
def test_literals_survive_the_round_trip(literal):
    sexpr = f"(JOIN (R a.b.c) (JOIN a.b.d {literal}))"
    assert denormalize_sexpr(normalize_sexpr(sexpr, {})) == sexpr
    cmp = f"(AND x.y (gt x.y.z {literal}))"
    assert denormalize_sexpr(normalize_sexpr(cmp, {})) == cmp


def test_typed_literal_word_forms():
    assert normalize_sexpr(f"(JOIN a.b 2010-09-22T21:57:22Z^^{XSD}dateTime)", {}) == (
        "( join [ a , b ] 2010-09-22T21:57:22Z date time )"
    )
    assert normalize_sexpr(f"(JOIN a.b true^^{XSD}boolean)", {}) == "( join [ a , b ] true boolean )"
    # no word form: written as it is
    assert normalize_sexpr(f"(JOIN a.b 5^^{XSD}year)", {}) == f"( join [ a , b ] 5^^{XSD}year )"


# ----------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("label", "by_id"),
    [
        ("My Life [Abridged] [Audible Audio Edition]", False),
        ("Guanine [DHPG]) Treatment", False),
        ("X - [43510800,43626624]", False),
        ('Kongar-ol Ondar and Paul "Earthquake" Pena', False),
        ("President of  Ethiopia", False),
        ("Heard and McDonald Islands\xa0Time Zone", False),
        ("Washington, D.C.", False),
        ("a , b", True),  # would read as a schema id
        ("ends with]", False),
        ("ends with ]", True),
        ("ends with a ] ) here", True),  # a closing bracket inside
        ("x ]", True),
        ("m.0zzz", True),  # id-shaped
        (" padded", True),
        ("", True),
    ],
)
def test_awkward_labels_round_trip(label, by_id):
    labels = {"m.0abc": label}
    sexpr = "(AND a.b (JOIN (R a.b.c) m.0abc))"
    normalised = normalize_sexpr(sexpr, labels)
    assert ("[ m.0abc ]" in normalised) is by_id
    assert denormalize_sexpr(normalised, invert_labels(labels)) == sexpr


def test_entity_id_in_brackets_maps_to_itself_without_labels():
    assert denormalize_sexpr("( join [ a , b ] [ g.121lm_nv ] )") == "(JOIN a.b g.121lm_nv)"


def test_lenient_reading_of_model_output():
    l2i = {"Justin Bieber": ["m.06w2sn5"]}
    assert denormalize_sexpr("(join (reverse [people , person , nationality]) [Justin Bieber])", l2i) == (
        "(JOIN (R people.person.nationality) m.06w2sn5)"
    )
    assert denormalize_sexpr("( GREATER EQUAL [ a , b ] 3 )") == "(ge a.b 3)"
    assert denormalize_sexpr("( JOIN people.person.nationality m.06w2sn5 )") == (
        "(JOIN people.person.nationality m.06w2sn5)"
    )
    assert denormalize_sexpr("( time constraint [ a , b ] [ a , b , c ] now )") == "(TC a.b a.b.c NOW)"
    assert denormalize_sexpr("( join [ a , b ] [ justin  BIEBER ] )", l2i) == "(JOIN a.b m.06w2sn5)"


# ----------------------------------------------------------------------------- fuzzy and ambiguous


def test_fuzzy_match_finds_a_misspelt_label():
    candidates = [
        ("m.06w2sn5", "Justin Bieber"),
        ("m.0gxnnwc", "Justin Timberlake"),
        ("m.09c7w0", "United States"),
    ]
    text = "( join ( reverse [ people , person , nationality ] ) [ Justin Beiber ] )"
    assert denormalize_sexpr(text, candidates=candidates) == "(JOIN (R people.person.nationality) m.06w2sn5)"
    assert denormalize_sexpr("( join [ a , b ] [ Bieber Justin ] )", candidates=candidates) == "(JOIN a.b m.06w2sn5)"
    assert denormalize_sexpr("( join [ a , b ] [ Untied States ] )", {"United States": ["m.09c7w0"]}) == (
        "(JOIN a.b m.09c7w0)"
    )


def test_hopeless_label_raises():
    candidates = [("m.06w2sn5", "Justin Bieber")]
    with pytest.raises(SExprError, match="no entity matches"):
        denormalize_sexpr("( join [ a , b ] [ Zzyzx Road ] )", candidates=candidates)
    with pytest.raises(SExprError, match="no entity matches"):
        denormalize_sexpr("( join [ a , b ] [ Justin Bieber ] )")
    with pytest.raises(SExprError):
        denormalize_sexpr("( join [ a , b ] [ Justin ] )", candidates=candidates, fuzzy_threshold=0.95)


def test_label_similarity():
    assert label_similarity("Justin Bieber", "justin  bieber") == 1.0
    assert label_similarity("Justin Beiber", "Justin Bieber") > 0.9
    assert label_similarity("The", "The Beatles") < 0.8
    assert label_similarity("Zzyzx", "Justin Bieber") < 0.3


def test_ambiguous_labels_first_by_default_and_all_readings_enumerated():
    # WebQTrn-856: the character ALF and the TV programme ALF.
    labels = {"m.01klc1": "ALF", "m.0sgqfm0": "ALF"}
    gold = (
        "(JOIN (R tv.regular_tv_appearance.actor) (AND (JOIN tv.regular_tv_appearance.character m.0sgqfm0) "
        "(JOIN (R tv.tv_program.regular_cast) m.01klc1)))"
    )
    text = normalize_sexpr(gold, labels)
    l2i = invert_labels(labels)
    assert l2i == {"ALF": ["m.01klc1", "m.0sgqfm0"]}
    first = denormalize_sexpr(text, l2i)
    assert first.count("m.01klc1") == 2
    variants = denormalize_all(text, l2i)
    assert variants[0] == first
    assert len(variants) == 4 and gold in variants
    assert len(denormalize_all(text, l2i, max_variants=2)) == 2


def test_candidates_extend_the_label_map():
    l2i = {"Paris": ["m.05qtj"]}
    candidates = [("m.0dprg", "Paris"), ("m.0f8l9c", "France")]
    text = "( and ( join [ a , b ] [ Paris ] ) ( join [ a , c ] [ France ] ) )"
    assert denormalize_all(text, l2i, candidates) == [
        "(AND (JOIN a.b m.05qtj) (JOIN a.c m.0f8l9c))",
        "(AND (JOIN a.b m.0dprg) (JOIN a.c m.0f8l9c))",
    ]


# ----------------------------------------------------------------------------- malformed text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("( join [ a , b ] [ m.0x ]", "never closed"),
        ("( join [ a , b ] [ m.0x ] ) )", "unexpected text"),
        ("( frobnicate [ a , b ] )", "unknown operator"),
        ("( join [ a , b ] [ ] )", "empty brackets"),
        ("( join [ a , b ] [ m.0x )", "never closed"),
        ('( join [ a , b ] "open )', "unterminated"),
        ("( join [ a , b ] 13 furlongs parsecs )", "typed literal"),
        ("( join [ a , b ] banana )", "unknown token"),
        ("( join [ a , b ] )", "JOIN takes"),
        ("( reverse [ m.0x ] )", "R takes"),
        ("( join [ 1 , b ] [ m.0x ] )", "relation or class"),
        ("[ m.0x ]", "expected a class"),
        (") join (", "unexpected ')'"),
    ],
)
def test_malformed_text_raises_the_typed_error(text, message):
    with pytest.raises(SExprError, match=re.escape(message)):
        denormalize_sexpr(text)


def test_non_string_is_a_typed_error():
    with pytest.raises(SExprError):
        denormalize_sexpr(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- properties

_segment = st.from_regex(r"[A-Za-z0-9_]{1,10}", fullmatch=True)
_first_segment = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,9}", fullmatch=True)
schema_ids = st.builds(
    lambda first, rest: ".".join([first, *rest]), _first_segment, st.lists(_segment, min_size=1, max_size=4)
).filter(lambda s: not ENTITY_RE.match(s))
labels_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=25) | st.sampled_from(
    ["[ x ]", "a , b", "x ]", "]", "[", '"q"', "m.0abc", "a ] ) b", "  ", "ALF"]
)
_quoted_body = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters='\\"'), max_size=15)
literals = st.one_of(
    _quoted_body.map(lambda s: f'"{s}"'),
    st.tuples(_quoted_body, _quoted_body).map(lambda p: f'"{p[0]}\\"{p[1]}"'),
    st.tuples(_quoted_body, st.from_regex(r"[a-z]{2}(-[A-Z]{2})?", fullmatch=True)).map(lambda p: f'"{p[0]}"@{p[1]}'),
    st.integers(-(10**9), 10**9).map(str),
    st.just("NOW"),
    st.tuples(
        st.from_regex(r"[A-Za-z0-9_.:+\-]{1,12}", fullmatch=True),
        st.sampled_from(["date", "dateTime", "gYear", "gYearMonth", "integer", "float", "boolean", "year", "x1"]),
    ).map(lambda p: f"{p[0]}^^{XSD}{p[1]}"),
    st.from_regex(r"[0-9]{1,4}", fullmatch=True).map(lambda v: f"{v}^^http://example.org/dt#u"),
)


@settings(max_examples=150, deadline=None)
@given(structure=sexpr_text, data=st.data())
def test_property_round_trip_with_random_ids_labels_and_literals(structure, data):
    replacements: dict[tuple[Role, str], str] = {}

    def swap(atom: Atom, role: Role) -> Atom:
        key = (role, atom.text)
        if key not in replacements:
            if role in ("relation", "class"):
                replacements[key] = data.draw(schema_ids)
            elif role == "literal":
                replacements[key] = data.draw(literals) if atom.text != "NOW" else "NOW"
            else:
                replacements[key] = atom.text
        return Atom(replacements[key])

    tree = map_atoms(parse_sexpr(structure), swap)
    sexpr = to_sexpr_string(tree)
    try:
        parse_sexpr(sexpr)
    except SExprError:  # e.g. a literal where TC needs a time: not a valid input to begin with
        return
    entities = list(dict.fromkeys(a.text for a, r in atoms_with_roles(tree) if r == "entity"))
    names = data.draw(st.lists(labels_text, min_size=len(entities), max_size=len(entities), unique=True))
    labels = dict(zip(entities, names, strict=True))
    normalised = normalize_sexpr(sexpr, labels)
    assert denormalize_sexpr(normalised, invert_labels(labels)) == sexpr
    assert denormalize_all(normalised, invert_labels(labels))[0] == sexpr


def test_mutated_gold_text_only_raises_the_typed_error(gold_sexprs):
    rng = random.Random(7)
    pieces = [*'()[]" ,.^@\\mg0aZ_-', "NOW", "year", " , ", " ]", "[ ", "less", "join"]
    outcomes: Counter[str] = Counter()
    for _ in range(3000):
        _, sexpr, labels = rng.choice(gold_sexprs)
        text = normalize_sexpr(sexpr, labels)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(text) + 1)
            roll = rng.random()
            if roll < 0.4:
                text = text[:pos] + text[pos + 1 :]
            elif roll < 0.8:
                text = text[:pos] + rng.choice(pieces) + text[pos:]
            else:
                text = text[:pos]
        try:
            parse_sexpr(denormalize_sexpr(text, invert_labels(labels), candidates=list(labels.items())))
            outcomes["read"] += 1
        except SExprError:
            outcomes["error"] += 1
    assert outcomes["read"] and outcomes["error"]
