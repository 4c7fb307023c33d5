"""FC-KBQA composer input: segment order and format, cut only by the length limit."""

from __future__ import annotations

from kbqa_lit.data.fc.composer_inputs import Pair, composer_input, pair_text

PAIRS = [
    Pair("class-relation", "film.film", "film.film.genre", 2.0),
    Pair("class-relation", "film.film", "(R film.director.film)", 1.0),
    Pair("relation-relation", "a.b.c", "a.b.d", 3.0),
    Pair("relation-entity", "film.film.genre", "m.x", 2.5),
]


def test_the_paper_format():
    text = composer_input(
        "what  genre is X?", PAIRS, ["m.x", "m.y"], ["(JOIN <rel> <entity>)", "(JOIN <rel> (JOIN <rel> <entity>))"]
    )
    assert text == (
        "what genre is X?; [CL]film.film [REL]film.film.genre; [CL]film.film [REL](R film.director.film); "
        "[REL]a.b.c [REL]a.b.d; [REL]film.film.genre [ENT]m.x; [ENT]m.y; "
        "[LF](JOIN <rel> <entity>); [LF](JOIN <rel> (JOIN <rel> <entity>))"
    )
    assert pair_text(PAIRS[3], {"m.x": "Jazz"}) == "[REL]film.film.genre [ENT]Jazz"


def test_cut_only_by_the_length_limit():
    full = composer_input("q?", PAIRS, [], ["(COUNT <class>)"])
    assert composer_input("q?", PAIRS, [], ["(COUNT <class>)"], max_tokens=100) == full
    n = len(full.replace(";", " ; ").split())  # words plus one per separator
    assert composer_input("q?", PAIRS, [], ["(COUNT <class>)"], max_tokens=n) == full
    # one token short: the kind with the most pairs (class-relation) loses its worst pair
    cut = composer_input("q?", PAIRS, [], ["(COUNT <class>)"], max_tokens=n - 1)
    assert "(R film.director.film)" not in cut and "[CL]film.film [REL]film.film.genre" in cut
    # the question and the skeletons stay, whatever the limit
    assert (
        composer_input("q?", PAIRS, ["m.z"], ["(COUNT <class>)"], max_tokens=1) == "q?; [ENT]m.z; [LF](COUNT <class>)"
    )
    # a tokenizer's count
    chars = composer_input("q?", PAIRS, [], [], max_tokens=40, count_tokens=len)
    assert len(chars) <= 40 + 3
