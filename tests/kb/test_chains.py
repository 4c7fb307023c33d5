"""Logical chains: reading them from S-expressions and writing them as text."""

from __future__ import annotations

import pytest

from kbqa_lit.kb.lf.chains import Hop, chain_from_sexpr, chain_text, chain_to_sexpr, parse_chain


def test_join_chain_reads_from_the_seed_outwards():
    sexpr = "(JOIN (R metaqa.movie.written_by) (JOIN metaqa.movie.directed_by (JOIN (R metaqa.movie.directed_by) m.x)))"
    seed, chain = chain_from_sexpr(sexpr)
    assert seed == "m.x"
    assert chain == (
        Hop("metaqa.movie.directed_by", True),
        Hop("metaqa.movie.directed_by", False),
        Hop("metaqa.movie.written_by", True),
    )
    assert chain_text(chain) == "metaqa.movie.directed_by> <metaqa.movie.directed_by metaqa.movie.written_by>"
    assert parse_chain(chain_text(chain)) == chain
    assert chain_to_sexpr(seed, chain) == sexpr


@pytest.mark.parametrize(
    "sexpr",
    [
        "(AND (JOIN a.b.c m.x) (JOIN d.e.f m.y))",
        "(COUNT (JOIN a.b.c m.x))",
        '(JOIN a.b.c (JOIN d.e.f "1990"^^http://www.w3.org/2001/XMLSchema#gYear))',
        "(JOIN (R a.b.c) common.topic)",
    ],
)
def test_not_a_chain_is_none(sexpr):
    assert chain_from_sexpr(sexpr) is None


@pytest.mark.parametrize("text", ["", "a.b.c", "<a.b.c>", "a.b> c.d"])
def test_bad_chain_text_is_refused(text):
    with pytest.raises(ValueError):
        parse_chain(text)
