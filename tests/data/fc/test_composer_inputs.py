"""FC-KBQA composer input: the paper's §4.5 format (default) and ours with relation–entity pairs; the length cut."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.composer_inputs import INPUT_FORMATS, Pair, composer_input, pair_text
from kbqa_lit.errors import UserInputError

PAIRS = [
    Pair("class-relation", "film.film", "film.film.genre", 2.0),
    Pair("class-relation", "film.film", "(R film.director.film)", 1.0),
    Pair("relation-relation", "a.b.c", "a.b.d", 3.0),
    Pair("relation-entity", "film.film.genre", "m.x", 2.5),
]
SKELETONS = ["(JOIN <rel> <entity>)", "(JOIN <rel> (JOIN <rel> <entity>))"]


def test_the_paper_format_is_the_default():
    """§4.5: ``query; [CL]c [REL]r; [REL]r1 [REL]r2; [ENT]e; [LF]l1; [LF]l2``: no relation–entity pair, every entity."""
    text = composer_input("what  genre is X?", PAIRS, ["m.x", "m.y"], SKELETONS)
    assert text == (
        "what genre is X?; [CL]film.film [REL]film.film.genre; [CL]film.film [REL](R film.director.film); "
        "[REL]a.b.c [REL]a.b.d; [ENT]m.x; [ENT]m.y; "
        "[LF](JOIN <rel> <entity>); [LF](JOIN <rel> (JOIN <rel> <entity>))"
    )
    assert composer_input("what  genre is X?", PAIRS, ["m.x", "m.y"], SKELETONS, input_format="paper") == text
    assert INPUT_FORMATS[0] == "paper"
    named = composer_input("q?", PAIRS, ["m.x"], [], {"m.x": "Jazz"})
    assert named == (
        "q?; [CL]film.film [REL]film.film.genre; [CL]film.film [REL](R film.director.film); [REL]a.b.c [REL]a.b.d; "
        "[ENT]Jazz"
    )


def test_the_entity_pairs_format_keeps_relation_entity_pairs():
    """Ours: relation–entity pairs after the relation–relation ones; a paired entity gets no bare segment."""
    text = composer_input("what  genre is X?", PAIRS, ["m.x", "m.y"], SKELETONS, input_format="entity-pairs")
    assert text == (
        "what genre is X?; [CL]film.film [REL]film.film.genre; [CL]film.film [REL](R film.director.film); "
        "[REL]a.b.c [REL]a.b.d; [REL]film.film.genre [ENT]m.x; [ENT]m.y; "
        "[LF](JOIN <rel> <entity>); [LF](JOIN <rel> (JOIN <rel> <entity>))"
    )
    assert pair_text(PAIRS[3], {"m.x": "Jazz"}) == "[REL]film.film.genre [ENT]Jazz"
    with pytest.raises(UserInputError, match="input_format"):
        composer_input("q?", PAIRS, input_format="pairs")  # type: ignore[arg-type]


def test_items_come_in_the_order_given():
    """Best first is the caller's order (detection's); the composer input does not re-sort."""
    worse_first = [PAIRS[1], PAIRS[0]]
    assert composer_input("q?", worse_first) == (
        "q?; [CL]film.film [REL](R film.director.film); [CL]film.film [REL]film.film.genre"
    )
    assert composer_input("q?", [], ["m.b", "m.a", "m.b"]) == "q?; [ENT]m.b; [ENT]m.a"


def test_the_paper_format_is_cut_over_its_two_pair_kinds():
    full = composer_input("q?", PAIRS, [], ["(COUNT <class>)"])
    assert full == (
        "q?; [CL]film.film [REL]film.film.genre; [CL]film.film [REL](R film.director.film); [REL]a.b.c [REL]a.b.d; "
        "[LF](COUNT <class>)"
    )
    n = len(full.replace(";", " ; ").split())  # words plus one per separator: 14
    assert composer_input("q?", PAIRS, [], ["(COUNT <class>)"], max_tokens=n) == full
    # one short: class-relation (2 pairs) loses its worst; then a 1-1 tie: class-relation first, then relation-relation
    assert composer_input("q?", PAIRS, [], ["(COUNT <class>)"], max_tokens=n - 1) == (
        "q?; [CL]film.film [REL]film.film.genre; [REL]a.b.c [REL]a.b.d; [LF](COUNT <class>)"
    )
    assert composer_input("q?", PAIRS, [], ["(COUNT <class>)"], max_tokens=n - 5) == (
        "q?; [REL]a.b.c [REL]a.b.d; [LF](COUNT <class>)"
    )
    assert composer_input("q?", PAIRS, ["m.x"], ["(COUNT <class>)"], max_tokens=1) == (
        "q?; [ENT]m.x; [LF](COUNT <class>)"  # the entities stay, the relation–entity pair was never written
    )


def test_cut_only_by_the_length_limit():
    def text(**kw):
        return composer_input(
            "q?", PAIRS, kw.pop("entities", []), ["(COUNT <class>)"], input_format="entity-pairs", **kw
        )

    full = text()
    assert text(max_tokens=100) == full
    n = len(full.replace(";", " ; ").split())  # words plus one per separator
    assert text(max_tokens=n) == full
    # one token short: the kind with the most pairs (class-relation) loses its worst pair
    cut = text(max_tokens=n - 1)
    assert "(R film.director.film)" not in cut and "[CL]film.film [REL]film.film.genre" in cut
    # the question and the skeletons stay, whatever the limit
    assert text(entities=["m.z"], max_tokens=1) == "q?; [ENT]m.z; [LF](COUNT <class>)"
    # a tokenizer's count
    chars = composer_input("q?", PAIRS, [], [], max_tokens=40, count_tokens=len, input_format="entity-pairs")
    assert len(chars) <= 40 + 3
