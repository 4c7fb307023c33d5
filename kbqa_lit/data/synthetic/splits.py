"""Split the synthetic questions into train, dev and test, and label test generalisation levels.

Questions of i.i.d. templates are divided per template (so each template is in train) in the
proportions of the size's targets; dev and the i.i.d. part of test therefore only hold relation
combinations that train has. Held-out templates go to test only, and each test question's level
is computed against train, as in GrailQA (Gu et al. 2021):

- ``zero-shot``: the S-expression uses a relation or class that no train question uses;
- ``compositional``: every relation and class occurs in train, but no single train question uses
  all of the question's relations together;
- ``iid``: some train question uses all of its relations.

A held-out question whose computed level is ``iid`` is dropped (its template was meant to test
generalisation), so the labels always hold.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.synthetic.questions import Draft
from kbqa_lit.data.synthetic.sizes import SizeSpec
from kbqa_lit.kb.lf.sexpr import schema_items

SPLITS = ("train", "dev", "test")
LEVELS = ("iid", "compositional", "zero-shot")


class TrainCoverage:
    """What the train questions use: all schema items, and each question's relation set.

    Args:
        relation_sets: The relation set of every train question.
        class_sets: The class set of every train question.
    """

    def __init__(self, relation_sets: Iterable[frozenset[str]], class_sets: Iterable[frozenset[str]]) -> None:
        self.relation_sets = sorted(set(relation_sets), key=lambda s: (len(s), sorted(s)))
        self.items: set[str] = set()
        for s in self.relation_sets:
            self.items |= s
        for c in class_sets:
            self.items |= c

    def level(self, relations: frozenset[str], classes: frozenset[str]) -> str:
        """The generalisation level of a question with these relations and classes."""
        if (relations | classes) - self.items:
            return "zero-shot"
        if any(relations <= seen for seen in self.relation_sets):
            return "iid"
        return "compositional"


def _by_template(drafts: Sequence[Draft]) -> dict[str, list[Draft]]:
    groups: dict[str, list[Draft]] = {}
    for d in drafts:
        groups.setdefault(d.template.id, []).append(d)
    return groups


class _Divider:
    """Split each template's questions into (train, dev, test) counts in the size's proportions.

    Rounding is cumulative over templates, so the split totals hit the targets; every template
    with questions keeps at least one in train.
    """

    def __init__(self, spec: SizeSpec) -> None:
        self.spec = spec
        self.seen = self.dev = self.test = 0

    def __call__(self, n: int) -> tuple[int, int, int]:
        total = self.spec.iid_total
        self.seen += n
        n_dev = max(0, round(self.seen * self.spec.dev / total) - self.dev)
        n_test = max(0, round(self.seen * self.spec.test_iid / total) - self.test)
        while n_dev + n_test > n - 1 and n_dev + n_test > 0:
            if n_dev >= n_test:
                n_dev -= 1
            else:
                n_test -= 1
        self.dev += n_dev
        self.test += n_test
        return n - n_dev - n_test, n_dev, n_test


def assign_splits(
    iid: Sequence[Draft], heldout: Sequence[Draft], spec: SizeSpec, rng: random.Random
) -> dict[str, list[KBQAExample]]:
    """Assign splits, label test questions and number every question.

    Args:
        iid: Questions of i.i.d. templates.
        heldout: Questions of compositional and zero-shot templates (test only).
        spec: The size's targets (for the train/dev/test proportions).
        rng: The world's seeded generator (shuffles within templates and within splits).

    Returns:
        ``{"train": [...], "dev": [...], "test": [...]}`` of examples with qids
        ``syn-<split>-NNNNN`` and ``meta["split"]`` (test also ``meta["generalization"]``).
    """
    parts: dict[str, list[Draft]] = {s: [] for s in SPLITS}
    divide = _Divider(spec)
    for _, group in _by_template(iid).items():
        group = list(group)
        rng.shuffle(group)
        n_train, n_dev, _ = divide(len(group))
        parts["train"].extend(group[:n_train])
        parts["dev"].extend(group[n_train : n_train + n_dev])
        parts["test"].extend(group[n_train + n_dev :])
    coverage = TrainCoverage((d.relations for d in parts["train"]), (d.classes for d in parts["train"]))
    levels: dict[int, str] = {id(d): coverage.level(d.relations, d.classes) for d in parts["test"]}
    for d in heldout:
        level = coverage.level(d.relations, d.classes)
        if level != "iid":
            parts["test"].append(d)
            levels[id(d)] = level
    out: dict[str, list[KBQAExample]] = {}
    for split in SPLITS:
        drafts = parts[split]
        rng.shuffle(drafts)
        out[split] = [
            d.to_example(f"syn-{split}-{i:05d}", split, levels[id(d)] if split == "test" else None)
            for i, d in enumerate(drafts, 1)
        ]
    return out


def generalization_level(train: Iterable[KBQAExample], relations: Iterable[str], classes: Iterable[str] = ()) -> str:
    """The level of a question with these relations and classes against train examples (for checks).

    Args:
        train: Train examples with gold S-expressions.
        relations: The question's relations.
        classes: The question's classes.

    Returns:
        ``"iid"``, ``"compositional"`` or ``"zero-shot"``.
    """
    rel_sets, class_sets = [], []
    for ex in train:
        if ex.s_expression:
            items = schema_items(ex.s_expression)
            rel_sets.append(frozenset(items.relations))
            class_sets.append(frozenset(items.classes))
    return TrainCoverage(rel_sets, class_sets).level(frozenset(relations), frozenset(classes))
