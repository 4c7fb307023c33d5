"""Hostile literals reach generated SPARQL only escaped (issue 31, scenario 8; no store needed).

10,000 seeded S-expressions whose literals hold quotes, ``}``, ``#``, newlines, backslash-u
sequences, control characters, unicode and SPARQL keywords go through ``sexpr_to_sparql``. Each
query is read by a SPARQL 1.1 lexer and must have exactly the tokens of its benign twin (the same
S-expression with placeholders for the hostile values): no comment, no extra or missing brace,
pattern or filter, and every string token decodes to the hostile value (or the day taken from it).
It must read the same when the codepoint escapes are replaced before parsing (SPARQL 1.1 §19.2
read literally, as rdflib does) and Oxigraph's parser must accept it. Text that is no S-expression
fails with :class:`SExprError` only.
"""

from __future__ import annotations

import random

import pyoxigraph
import pytest

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.semantics import full_date
from kbqa_lit.kb.lf.sexpr import Atom, Call
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.lf.terms import sparql_string
from tests.helpers.hostile import PIECES, hostile_cases, hostile_value, naive_unescape, sparql_tokens

TWINS = ("zq0", "zq1")


def _skeleton(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Tokens with strings and numbers blanked (a ``SUBSTR`` length is the literal's length)."""
    return [(kind, "" if kind in ("string", "number") else value) for kind, value in tokens]


def _expected_strings(twin_tokens: list[tuple[str, str]], values: list[str]) -> list[str]:
    """The twin's string tokens with each placeholder (or the day made of it) replaced by the hostile value's."""
    out = []
    for kind, text in twin_tokens:
        if kind != "string":
            continue
        for twin, value in zip(TWINS, values, strict=False):
            text = text.replace(full_date(twin), full_date(value)) if full_date(twin) in text else text
            text = text.replace(twin, value)
        out.append(text)
    return out


def _check_meaning(sparql: str, twin_sparql: str, values: list[str]) -> str | None:
    """Why ``sparql`` does not mean its twin with the hostile values (``None`` when it does)."""
    twin = sparql_tokens(twin_sparql)
    expected = _expected_strings(twin, values)
    for reading, text in (("token by token", sparql), ("escapes first", naive_unescape(sparql))):
        try:
            tokens = sparql_tokens(text)
        except ValueError as exc:
            return f"{reading}: {exc}"
        if any(kind == "comment" for kind, _ in tokens):
            return f"{reading}: a comment"
        if _skeleton(tokens) != _skeleton(twin):
            return f"{reading}: tokens differ from the twin's"
        strings = [value for kind, value in tokens if kind == "string"]
        if strings != expected:
            return f"{reading}: strings {strings!r} != {expected!r}"
    return None


@pytest.mark.slow  # ≈ 7 s: 20,000 conversions, 10,000 Oxigraph parses
def test_ten_thousand_hostile_sexprs_keep_their_meaning() -> None:
    parser = pyoxigraph.Store()  # empty: a query is parsed, then answers nothing at once
    bad = []
    for sexpr, twin, values in hostile_cases(10_000, seed=31):
        sparql = sexpr_to_sparql(sexpr, semantics="exclude-topic")
        why = _check_meaning(sparql, sexpr_to_sparql(twin, semantics="exclude-topic"), values)
        if why is None:
            try:
                parser.query(sparql)
            except SyntaxError as exc:
                why = f"Oxigraph: {exc}"
        if why is not None:
            bad.append((sexpr, why, sparql))
    assert not bad, f"{len(bad)} of 10000 changed meaning; first: {bad[0]}"


def test_sparql_string_round_trips_under_both_readings() -> None:
    rng = random.Random(8)
    for value in [*PIECES, *(hostile_value(rng, 10) for _ in range(2000))]:
        quoted = f'"{sparql_string(value)}"'
        assert sparql_tokens(quoted) == [("string", value)], value
        assert sparql_tokens(naive_unescape(quoted)) == [("string", value)], value


@pytest.mark.parametrize(
    "text",
    [
        "(JOIN type.object.name x} UNION {?x ?p ?o)",
        "(JOIN type.object.name> m.0)",
        "(JOIN type.object.name m.0>)",
        '(JOIN type.object.name "x"@en}#)',
        '(JOIN type.object.name "x"^^<http://a>)',
        '(JOIN type.object.name "x"^^http://a}b)',
        '(JOIN type.object.name "x")#',
        "(JOIN type.object.name 1;DROP)",
        "(JOIN type.object.name 1^^http://www.w3.org/2001/XMLSchema#int>)",
        '(JOIN type.object.name "x\ud800")',
        "(JOIN people.person\n.name m.0)",
    ],
)
def test_hostile_tokens_are_sexpr_errors(text: str) -> None:
    with pytest.raises(SExprError):
        sexpr_to_sparql(text)


@pytest.mark.parametrize(
    "text",
    [
        '"x"@en } UNION { ?x ?p ?o',
        '"x"^^http://a> } UNION { ?x ?p ?o } #',
        '"x',
        "m.0\n",
        "people.person.name\n",
        "1\n",
    ],
)
def test_a_tree_built_by_hand_is_checked_like_text(text: str) -> None:
    """``sexpr_to_sparql`` also takes a tree; an atom made outside the parser is held to the same rules."""
    with pytest.raises(SExprError):
        sexpr_to_sparql(Call("JOIN", (Atom("type.object.name"), Atom(text))))


def test_random_text_is_an_sexpr_error_or_a_query_that_parses() -> None:
    rng = random.Random(3)
    parser = pyoxigraph.Store()
    alphabet = ["(", ")", " ", "JOIN", "AND", "R", "COUNT", "type.object.name", "m.0", '"', "\\", "}", "#", "<", "x"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14)))
        try:
            sparql = sexpr_to_sparql(text)
        except SExprError:
            continue
        parser.query(sparql)
