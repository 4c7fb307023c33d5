"""Generalisation levels against a training split: i.i.d., compositional, zero-shot."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.levels import question_level, split_levels, train_coverage
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError


def _ex(qid: str, sexpr: str | None, level: str | None = None) -> KBQAExample:
    return KBQAExample(qid=qid, question="?", s_expression=sexpr, meta={"level": level} if level else {})


TRAIN = [
    _ex("t1", "(JOIN people.person.place_of_birth m.01)"),
    _ex("t2", "(AND film.film (JOIN film.film.directed_by m.02))"),
    _ex("t3", "(JOIN (R location.location.containedby) (JOIN people.person.nationality m.03))"),
    _ex("t4", "not an expression ("),
]


def test_levels_follow_relations_and_their_compositions() -> None:
    test = [
        _ex("iid", "(JOIN people.person.place_of_birth m.09)"),  # same relation set as t1
        _ex("iid2", "(JOIN people.person.nationality (JOIN location.location.containedby m.09))"),
        _ex("comp", "(JOIN people.person.place_of_birth (JOIN film.film.directed_by m.09))"),  # each seen, not together
        _ex("zero", "(JOIN people.person.spouse m.09)"),  # an unseen relation
        _ex("zero_class", "(AND music.album (JOIN film.film.directed_by m.09))"),  # an unseen class
        _ex("none", None),
    ]
    assert split_levels(test, TRAIN) == {
        "iid": "i.i.d.",
        "iid2": "i.i.d.",
        "comp": "compositional",
        "zero": "zero-shot",
        "zero_class": "zero-shot",
        "none": None,
    }


def test_a_given_level_is_kept_or_ignored() -> None:
    coverage = train_coverage(TRAIN)
    ex = _ex("g", "(JOIN people.person.spouse m.09)", level="i.i.d.")
    assert question_level(ex, coverage) == "i.i.d."
    assert question_level(ex, coverage, given="ignore") == "zero-shot"
    assert question_level(_ex("s", "(JOIN people.person.spouse m.09)", level="iid"), coverage) == "i.i.d."
    with pytest.raises(UserInputError, match="unknown level"):
        question_level(_ex("b", None, level="easy"), coverage)
    with pytest.raises(UserInputError, match="given"):
        question_level(ex, coverage, given="sometimes")
