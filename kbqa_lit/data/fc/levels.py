"""Generalisation levels of questions against a training split (GrailQA's i.i.d. / compositional / zero-shot).

GrailQA's dev file gives ``level`` for some rows only (500 of 3,745; the converter keeps it in
``meta["level"]``) and none is meaningful against a split of our own making, so the levels of the
FC figures are computed against the training split actually used, as in GrailQA (Gu et al. 2021)
and the synthetic world (:class:`~kbqa_lit.data.synthetic.splits.TrainCoverage`, one rule):

- ``zero-shot``: the gold S-expression uses a relation or class no training question uses;
- ``compositional``: every relation and class occurs in training, but no training question uses
  all of its relations together;
- ``i.i.d.``: some training question uses all of its relations.

:func:`question_level` keeps a level the row gives (``given="keep"``, the issue's rule: computed
"where the file has none") or always computes (``given="ignore"``). The given levels were
computed against GrailQA's own train split: on the 80/10/10 split of the dev file by
``configs/fc/pipeline_grailqa.yaml`` (seed 0), 5 of the 68 test rows with a given level get the
same level computed against our training part (the computed test levels: 307 i.i.d., 2
compositional, 59 zero-shot).
"""

from __future__ import annotations

from collections.abc import Iterable

from kbqa_lit.data.gold import gold_items
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.synthetic.splits import TrainCoverage
from kbqa_lit.errors import UserInputError, check_choice

LEVELS = ("i.i.d.", "compositional", "zero-shot")
_SPELLINGS = {"iid": "i.i.d.", "i.i.d.": "i.i.d.", "compositional": "compositional", "zero-shot": "zero-shot"}


def train_coverage(train: Iterable[KBQAExample]) -> TrainCoverage:
    """The relation sets and schema items of the training questions (rows without a parseable gold skipped).

    Args:
        train: The training split.
    """
    relation_sets: list[frozenset[str]] = []
    class_sets: list[frozenset[str]] = []
    for ex in train:
        items = gold_items(ex)
        if items is not None:
            relation_sets.append(frozenset(items.relations))
            class_sets.append(frozenset(items.classes))
    return TrainCoverage(relation_sets, class_sets)


def question_level(ex: KBQAExample, coverage: TrainCoverage, given: str = "keep") -> str | None:
    """The level of one question: ``i.i.d.``, ``compositional`` or ``zero-shot`` (``None`` without a gold).

    Args:
        ex: The question (its gold S-expression is read: levels are scored after the fact).
        coverage: The training split's coverage (:func:`train_coverage`).
        given: ``keep`` a ``meta["level"]`` the row has, or ``ignore`` it and compute.

    Raises:
        UserInputError: On an unknown ``given`` or an unknown given level.
    """
    check_choice("given", given, ("keep", "ignore"))
    stated = ex.meta.get("level")
    if given == "keep" and stated:
        if stated not in _SPELLINGS:
            raise UserInputError(f"{ex.qid}: unknown level {stated!r} (expected one of {', '.join(LEVELS)})")
        return _SPELLINGS[stated]
    items = gold_items(ex)
    if items is None:
        return None
    return _SPELLINGS[coverage.level(frozenset(items.relations), frozenset(items.classes))]


def split_levels(
    test: Iterable[KBQAExample], train: Iterable[KBQAExample], given: str = "keep"
) -> dict[str, str | None]:
    """The level of every test question (by qid) against ``train``; see :func:`question_level`.

    Args:
        test: The questions to label.
        train: The training split.
        given: See :func:`question_level`.
    """
    coverage = train_coverage(train)
    return {ex.qid: question_level(ex, coverage, given) for ex in test}
