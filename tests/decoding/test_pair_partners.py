"""The paper's pair constraint: the start set, then only the partners of the last relation or class written.

FC-KBQA (Zhang et al. 2023) decodes with the detected entities, the classes of ``P_c-r`` and the
skeleton's keywords at the start, then after each component only the partners of the last one.
These tests fail under the earlier defaults (``partners: any``, ``chain_heads: 2``), which stay
reachable as named options (:data:`OURS`).
"""

from __future__ import annotations

import pytest

from kbqa_lit.decoding.grammar import BaseRules, SExprGrammar
from kbqa_lit.decoding.pairs import PAIR_PARTNERS, PairRules
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.normalize import schema_to_words

SLOTS = ("[E0]", "[E1]")
R1, R2, R3, R4 = (
    "film.film.directed_by",
    "people.person.place_of_birth",
    "location.location.containedby",
    "music.artist.genre",
)
FILM, PERSON = "film.film", "people.person"
W = {x: schema_to_words(x) for x in (R1, R2, R3, R4, FILM, PERSON)}
#: Our extended decoding (the earlier defaults).
OURS = {"partners": "any", "chain_heads": 2}
#: r1–r2, r2–r3, r1–r4 (r4 is a partner of r1 only); film pairs with r1; r3 touches the entity.
PAIRS = {
    "class_relation": [(FILM, R1)],
    "relation_relation": [(R1, R2), (R2, R3), (R1, R4)],
    "relation_entity": [(R3, "m.a")],
    "entity_labels": ["Alpha Beta"],
    "bare_entities": ["[E0]"],
}


def _grammar(**settings) -> SExprGrammar:
    return SExprGrammar([BaseRules(SLOTS), PairRules(**PAIRS, **settings)])


def _accepts(g: SExprGrammar, text: str) -> bool:
    return g.accepts(text.split())


def test_the_defaults_are_the_papers() -> None:
    rules = PairRules()
    assert (rules.partners, rules.mode) == ("last", "bag") and PAIR_PARTNERS == ("last", "any")


@pytest.mark.parametrize("mode", ["trie", "bag"])
def test_after_r1_then_r2_only_the_partners_of_r2(mode) -> None:
    rules = PairRules(**PAIRS, mode=mode)
    written = [("relation", W[R1]), ("relation", W[R2])]
    assert rules.allowed_relations(written) == {W[R1], W[R3]}  # not r4 (r1's partner), not the start set
    assert rules.allowed_relations(written[:1]) == {W[R2], W[R4]}
    # ours: the start set and the partners of every relation written before
    assert PairRules(**PAIRS, mode=mode, **OURS).allowed_relations(written) >= {W[R1], W[R3], W[R4]}
    chain = "( and [ {c} ] ( join ( reverse [ {a} ] ) ( join ( reverse [ {b} ] ) ( join [ {x} ] [E0] ) ) ) )"
    via_r3 = chain.format(c=W[FILM], a=W[R1], b=W[R2], x=W[R3])
    via_r4 = chain.format(c=W[FILM], a=W[R1], b=W[R2], x=W[R4])
    assert _accepts(_grammar(mode=mode), via_r3)
    assert not _accepts(_grammar(mode=mode), via_r4)  # r4 follows r2, which it is not paired with
    assert _accepts(_grammar(mode=mode, **OURS), via_r4)


def test_the_start_set_is_the_entities_the_classes_of_pcr_and_the_entity_relations() -> None:
    rules = PairRules(**PAIRS)
    assert rules.allowed_relations([]) == rules.start_relations == {W[R3]}  # P_r-e: ( join [ r3 ] [ e ] )
    assert rules.classes == {W[FILM]}
    assert PairRules(**PAIRS, **OURS).start_relations == {W[R1], W[R2], W[R3]}  # chain heads (ours)
    g = _grammar()
    assert _accepts(g, f"( join [ {W[R3]} ] [ Alpha Beta ] )")
    assert _accepts(g, f"( join [ {W[R3]} ] [E0] )")
    assert not _accepts(g, f"( join [ {W[R3]} ] [ Gamma ] )")  # not a detected entity
    assert not _accepts(g, f"( join [ {W[R3]} ] [E1] )")
    assert _accepts(g, f"( and [ {W[FILM]} ] ( join [ {W[R1]} ] [E0] ) )")  # a class of P_c-r, then its partner
    assert not _accepts(g, f"( and [ {W[PERSON]} ] ( join [ {W[R1]} ] [E0] ) )")  # a class in no pair
    head = f"( join ( reverse [ {W[R2]} ] ) ( join [ {W[R3]} ] [E0] ) )"
    assert not _accepts(g, head)  # r2 is one P_r-r pair from P_r-e: not in the paper's start set
    assert _accepts(_grammar(**OURS), head)
    assert _accepts(_grammar(chain_heads=1), head)  # the chain heads are an option under last too


def test_after_a_class_only_its_relations() -> None:
    after_class = f"( and [ {W[FILM]} ] ( join [ {W[R3]} ] [E0] ) )"  # r3 is in the start set, not film's partner
    assert not _accepts(_grammar(), after_class)
    assert _accepts(_grammar(**OURS), after_class)


def test_the_last_component_is_the_last_written_across_nested_calls() -> None:
    """After ``( join [ r1 ] ( join [ r2 ] [E0] ) )`` closes, the inner r2 (written later) decides, not r1."""
    tail = "( and [ {c} ] ( join [ {a} ] ( join [ {b} ] [E0] ) ) ( join [ {x} ] [E0] ) )"
    assert _accepts(_grammar(), tail.format(c=W[FILM], a=W[R1], b=W[R2], x=W[R3]))
    assert not _accepts(_grammar(), tail.format(c=W[FILM], a=W[R1], b=W[R2], x=W[R4]))
    assert _accepts(_grammar(**OURS), tail.format(c=W[FILM], a=W[R1], b=W[R2], x=W[R4]))


def test_bad_settings_are_typed_errors() -> None:
    with pytest.raises(UserInputError, match="partners"):
        PairRules(partners="first")  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="chain_heads"):
        PairRules(chain_heads=-1)


class _ReadsEverything(PairRules):
    """The same rules without ``reduce_items``: the grammar keeps every item (the reference)."""

    reduce_items = None


def _walks(g: SExprGrammar, seed: int, n: int = 300, length: int = 30) -> list[list[str]]:
    """Random word sequences the grammar allows (closed words only: the pairs' grammar has no literals here)."""
    import random

    rng, walks = random.Random(seed), []
    for _ in range(n):
        state, words = g.start(), []
        while len(words) < length and not g.complete(state):
            options = sorted(g.options(state).words)
            if not options:
                break
            words.append(rng.choice(options))
            state = g.step(state, words[-1])
        walks.append(words)
    return walks


@pytest.mark.parametrize("settings", [{}, {"mode": "trie"}, OURS])
def test_reduced_items_answer_as_every_item_and_merge_states(settings) -> None:
    reduced = _grammar(**settings)
    full = SExprGrammar([BaseRules(SLOTS), _ReadsEverything(**PAIRS, **settings)])
    assert reduced._reduce is not None and full._reduce is None
    states: dict[str, set] = {"reduced": set(), "full": set()}
    for words in _walks(full, seed=0):
        a, b = reduced.start(), full.start()
        for word in words:
            assert reduced.options(a) == full.options(b), words
            assert reduced.closing_word(a) == full.closing_word(b), words
            a, b = reduced.step(a, word), full.step(b, word)
            states["reduced"].add(a)
            states["full"].add(b)
        assert reduced.complete(a) == full.complete(b)
    assert len(states["reduced"]) <= len(states["full"])
    if settings.get("partners", "last") == "last":  # beams that differ in atoms before the last component now meet
        assert len(states["reduced"]) < len(states["full"])
