"""The automaton of well-formed decompositions: exactly the JSON the decomposer is trained to write."""

from __future__ import annotations

import pytest

from kbqa_lit.data.keqing.decomposition import SubQuestion, chain_decomposition, render_decomposition
from kbqa_lit.data.keqing.decomposition_grammar import DecompositionAutomaton
from kbqa_lit.errors import UserInputError

TEXTS = ["who directed [mask]", "who directed [mask]?", 'what did [mask] "write"']


def accepted(automaton: DecompositionAutomaton, text: str) -> bool | None:
    """``True`` accepted, ``False`` a valid prefix only, ``None`` left the automaton."""
    state = automaton.start()
    for char in text:
        state = automaton.step(state, char)
        if state is None:
            return None
    return automaton.accepts(state)


@pytest.fixture
def automaton() -> DecompositionAutomaton:
    return DecompositionAutomaton(TEXTS, ["[E0]", "[E1]"], max_subquestions=3)


def test_it_accepts_rendered_chains_of_known_wordings(automaton):
    two = render_decomposition(chain_decomposition(["who directed [mask]?", 'what did [mask] "write"'], "[E0]"))
    assert accepted(automaton, two) is True
    assert accepted(automaton, " " + two) is True  # one leading space
    assert accepted(automaton, two[:-1]) is False  # a prefix, not done
    three = render_decomposition(chain_decomposition(["who directed [mask]"] * 3, "[E1]"))
    assert accepted(automaton, three) is True


def test_it_rejects_what_would_not_parse_or_match(automaton):
    ok = chain_decomposition(["who directed [mask]", "who directed [mask]"], "[E0]")
    assert accepted(automaton, render_decomposition(ok).replace("directed", "direct")) is None  # no such wording
    assert accepted(automaton, render_decomposition(ok).replace('"question_id": 1', '"question_id": 0')) is None
    assert accepted(automaton, render_decomposition(chain_decomposition(["who directed [mask]"], "[E2]"))) is None
    early = [SubQuestion("who directed [mask]", 0, (-1,), ("<ANSWER>-0",))]  # its own answers
    assert accepted(automaton, render_decomposition(early)) is None
    four = render_decomposition(chain_decomposition(["who directed [mask]"] * 4, "[E0]"))
    assert accepted(automaton, four) is None  # more than max_subquestions
    assert accepted(automaton, "[]") is None


def test_it_needs_texts_and_seeds():
    with pytest.raises(UserInputError, match="needs texts, entity seeds"):
        DecompositionAutomaton([], ["[E0]"])
    with pytest.raises(UserInputError, match="needs texts, entity seeds"):
        DecompositionAutomaton(TEXTS, [])
