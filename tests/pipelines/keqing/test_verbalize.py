"""Relation words, node names, triples and chains as text."""

from __future__ import annotations

from kbqa_lit.kb.lf.chains import Hop
from kbqa_lit.pipelines.keqing.verbalize import (
    chain_words,
    hop_words,
    names_text,
    node_name,
    relation_words,
    triple_text,
)

LABELS = {"m.a": "Alpha", "m.d": "Dee"}


def test_relation_words_are_the_last_segment_with_spaces() -> None:
    assert relation_words("metaqa.movie.directed_by") == "directed by"
    assert relation_words("film.film.release__year") == "release year"
    assert relation_words("plain") == "plain"


def test_names_fall_back_to_the_id() -> None:
    assert node_name("m.a", LABELS.get) == "Alpha"
    assert node_name("m.zz", LABELS.get) == "m.zz" and node_name("1999") == "1999"
    assert triple_text(("m.a", "metaqa.movie.directed_by", "m.d"), LABELS.get) == "(Alpha, directed by, Dee)"


def test_chains_and_name_lists_in_words() -> None:
    fwd, back = Hop("metaqa.movie.directed_by", True), Hop("metaqa.movie.directed_by", False)
    assert hop_words(back) == "directed by (inverse)"
    assert chain_words((fwd, back)) == "directed by → directed by (inverse)"
    assert names_text([], LABELS.get) == "none"
    assert names_text(["m.a", "m.d"], LABELS.get) == "Alpha, Dee"
    assert names_text([f"m.{i}" for i in range(8)], limit=5) == "m.0, m.1, m.2, m.3, m.4 and 3 more"
