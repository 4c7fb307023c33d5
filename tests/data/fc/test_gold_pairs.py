"""Gold pairs of S-expressions, in the pair builder's conventions (hand-checked cases)."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.gold_pairs import first_hops, gold_pairs, reverse_hop
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sexpr import parse_sexpr


def _pairs(expr: str) -> set[tuple[str, str, str]]:
    return {(p.kind, p.first, p.second) for p in gold_pairs(expr)}


def test_class_relation_and_relation_entity() -> None:
    assert _pairs("(AND music.album (JOIN (R music.artist.album) m.a))") == {
        ("class-relation", "music.album", "(R music.artist.album)"),
        ("relation-entity", "music.artist.album", "m.a"),
    }
    assert all(isinstance(p, Pair) and p.score == 1.0 for p in gold_pairs("(JOIN r.a.b m.a)"))


def test_chains_and_backward_chains_as_the_builder_writes_them() -> None:
    expr = "(JOIN (R film.film.directed_by) (JOIN (R film.performance.film) (JOIN film.performance.actor m.x)))"
    assert _pairs(expr) == {
        ("relation-relation", "film.performance.film", "film.film.directed_by"),  # two backward hops: forward pair
        ("relation-relation", "(R film.performance.film)", "film.performance.actor"),
        ("relation-entity", "film.performance.actor", "m.x"),
    }


def test_hops_leaving_one_node_and_relation_paths() -> None:
    year = "1981^^http://www.w3.org/2001/XMLSchema#gYear"
    assert _pairs(f"(AND (JOIN film.film.directed_by m.x) (gt film.film.release_year {year}))") == {
        ("relation-relation", "(R film.film.directed_by)", "film.film.release_year"),
        ("relation-entity", "film.film.directed_by", "m.x"),
    }
    assert ("relation-relation", "music.artist.album", "music.album.release_date") in _pairs(
        "(ARGMAX (JOIN (R music.artist.album) m.g) music.album.release_date)"
    )
    assert _pairs("(ARGMIN film.film (JOIN film.film.directed_by people.person.height))") == {
        ("relation-relation", "film.film.directed_by", "people.person.height")
    }
    assert first_hops(parse_sexpr("(AND film.film (JOIN a.b.c m.x) (JOIN (R d.e.f) m.y))")) == ["a.b.c", "(R d.e.f)"]
    assert reverse_hop("a.b.c") == "(R a.b.c)" and reverse_hop("(R a.b.c)") == "a.b.c"
    with pytest.raises(SExprError):
        gold_pairs("(JOIN a.b.c")
