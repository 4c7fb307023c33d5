"""Answer-set metrics as pure functions over collections of answer strings.

Every function takes a prediction and a gold answer collection (strings: entity ids such as
``m.0abc`` or literal lexical values) and returns a float in ``[0, 1]``. Duplicates are
ignored: both sides are treated as sets (except the first element of a *ranked* prediction for
:func:`hit_at_1` with ``ordered=True``).

Conventions (those of the official WebQSP ``eval.py``, ``CalculatePRF1``):

=====================  =========  =========  ======  ======  ==========
case                   precision  recall     F1      hit1    hit1_any
=====================  =========  =========  ======  ======  ==========
gold ∅, pred ∅         1          1          1       1       1
gold ∅, pred ≠ ∅       0          1          0       0       0
gold ≠ ∅, pred ∅       1          0          0       0       0
=====================  =========  =========  ======  ======  ==========

Precision of an empty prediction and recall of an empty gold set are vacuously 1, as in the
official script; F1 is 0 whenever exactly one side is empty. A *missing* prediction (no output
at all for a question) is different from an empty one: callers score it with
:meth:`QuestionScore.missing_prediction`, which is all zeros.

Two Hit@1 variants, named apart because papers mean different things by "Hits@1":

- ``hit1`` (:func:`hit_at_1`): for a ranked prediction, whether the first answer is gold; for
  an unordered answer set (e.g. the result of executing a logical form), the expectation
  ``|P ∩ G| / |P|`` of picking one predicted answer at random. Chain-of-Question (CoQ) and
  TFS-KBQA report this random-pick Hit@1 on WebQSP/CWQ (following the TIARA/WebQSP
  ``legacy_eval`` that draws ``random.choice`` from the predicted set); the expectation is the
  noise-free value of that draw.
- ``hit1_any`` (:func:`hit_at_1_any`): whether *any* predicted answer is gold. Some
  retrieval-based papers (those following GraftNet/NSM-style evaluation when the "top" answer
  is a set) effectively report this; it is never below ``hit1``.

WebQSP annotates several parses per question; :func:`best_over_parses` scores the prediction
against each parse's answers and keeps the parse with the best F1 (ties: the first such parse,
as the official script does), reporting that parse's precision, recall, F1 and Hit@1 values.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "QuestionScore",
    "answer_f1",
    "answer_precision",
    "answer_recall",
    "best_over_parses",
    "hit_at_1",
    "hit_at_1_any",
    "mean_scores",
    "score_question",
    "sum_scores",
]

#: Keys of :func:`sum_scores`: one running sum per metric plus the counts ``em_count`` and ``n``.
SUM_KEYS = (
    "f1",
    "precision",
    "recall",
    "hit1",
    "hit1_any",
    "accuracy",
    "executable",
    "em",
    "em_count",
    "n",
)


def _as_set(answers: Iterable[str]) -> frozenset[str]:
    if isinstance(answers, str):
        raise TypeError("answers must be a collection of strings, not a single string")
    return frozenset(answers)


def _prf(pred: Iterable[str], gold: Iterable[str]) -> tuple[float, float, float]:
    p, g = _as_set(pred), _as_set(gold)
    if not g:
        return (1.0, 1.0, 1.0) if not p else (0.0, 1.0, 0.0)
    if not p:
        return 1.0, 0.0, 0.0
    tp = len(p & g)
    if tp == 0:
        return 0.0, 0.0, 0.0
    precision, recall = tp / len(p), tp / len(g)
    return precision, recall, 2 * precision * recall / (precision + recall)


def answer_precision(pred: Iterable[str], gold: Iterable[str]) -> float:
    """Share of distinct predicted answers that are gold (1 for an empty prediction, see module).

    Args:
        pred: Predicted answers.
        gold: Gold answers.

    Returns:
        ``|P ∩ G| / |P|`` with the WebQSP conventions for empty sets.

    """
    return _prf(pred, gold)[0]


def answer_recall(pred: Iterable[str], gold: Iterable[str]) -> float:
    """Share of distinct gold answers that are predicted (1 for an empty gold set, see module).

    Args:
        pred: Predicted answers.
        gold: Gold answers.

    Returns:
        ``|P ∩ G| / |G|`` with the WebQSP conventions for empty sets.

    """
    return _prf(pred, gold)[1]


def answer_f1(pred: Iterable[str], gold: Iterable[str]) -> float:
    """Set F1 of predicted against gold answers.

    Args:
        pred: Predicted answers (duplicates ignored).
        gold: Gold answers (duplicates ignored).

    Returns:
        The harmonic mean of precision and recall; 1 when both sets are empty, 0 when exactly
        one is empty.

    """
    return _prf(pred, gold)[2]


def hit_at_1(pred: Collection[str], gold: Iterable[str], ordered: bool = False) -> float:
    """Return Hit@1: whether the top predicted answer is gold.

    Args:
        pred: Predicted answers. With ``ordered=True`` a ranked sequence whose first element is
            the top answer; otherwise an unordered collection.
        gold: Gold answers.
        ordered: Whether ``pred`` is ranked. When ``False`` the result is the expectation
            ``|P ∩ G| / |P|`` of a uniformly random pick from the distinct predicted answers.

    Returns:
        1 when both sides are empty, 0 when exactly one is empty, otherwise as above.

    Raises:
        TypeError: When ``ordered=True`` and ``pred`` is not a sequence (a set has no order).

    """
    if ordered and not isinstance(pred, Sequence):
        raise TypeError(f"ordered=True needs a ranked sequence, got {type(pred).__name__}")
    g = _as_set(gold)
    p = _as_set(pred)
    if not g or not p:
        return 1.0 if not g and not p else 0.0
    if ordered:
        return 1.0 if pred[0] in g else 0.0  # type: ignore[index]
    return len(p & g) / len(p)


def hit_at_1_any(pred: Iterable[str], gold: Iterable[str]) -> float:
    """Whether any predicted answer is gold (1 when both sides are empty).

    Args:
        pred: Predicted answers.
        gold: Gold answers.

    Returns:
        1.0 or 0.0.

    """
    p, g = _as_set(pred), _as_set(gold)
    if not g or not p:
        return 1.0 if not g and not p else 0.0
    return 1.0 if p & g else 0.0


@dataclass(frozen=True)
class QuestionScore:
    """The scores of one question.

    Attributes:
        f1: Set F1 (of the best parse when there are several).
        precision: Precision of that parse.
        recall: Recall of that parse.
        hit1: Hit@1 (ranked first answer, or random-pick expectation) against that parse.
        hit1_any: Whether any predicted answer is gold for that parse.
        parse_index: Index of the gold parse the scores come from (``None`` for a missing
            prediction).
        em: Logical-form exact match (1.0/0.0), or ``None`` when it is not measured.
        executable: Whether the prediction came from an executable logical form, or ``None``
            when unknown.
        missing: Whether there was no prediction at all (all scores are then 0).

    """

    f1: float
    precision: float
    recall: float
    hit1: float
    hit1_any: float
    parse_index: int | None = 0
    em: float | None = None
    executable: bool | None = None
    missing: bool = False

    @property
    def accuracy(self) -> float:
        """1.0 when the predicted set equals a gold set (F1 == 1), else 0.0."""
        return 1.0 if self.f1 == 1.0 else 0.0

    @classmethod
    def missing_prediction(cls, em: float | None = None) -> QuestionScore:
        """Scores of a question without any prediction: all zeros.

        Args:
            em: Logical-form EM to record (0.0 when EM is measured, else ``None``).

        """
        return cls(0.0, 0.0, 0.0, 0.0, 0.0, parse_index=None, em=em, executable=False, missing=True)

    def to_dict(self) -> dict[str, Any]:
        """Return the scores as a JSON-ready dict, with ``accuracy`` included."""
        out = asdict(self)
        out["accuracy"] = self.accuracy
        return out


def best_over_parses(
    pred: Collection[str], golds: Sequence[Iterable[str]], ordered: bool = False
) -> dict[str, float | int]:
    """Score a prediction against every gold parse and keep the parse with the best F1.

    Args:
        pred: Predicted answers (ranked when ``ordered``).
        golds: One gold answer collection per parse. An empty list is read as one empty gold
            set.
        ordered: Passed to :func:`hit_at_1`.

    Returns:
        ``{"f1", "precision", "recall", "hit1", "hit1_any", "accuracy", "parse_index"}`` of the
        best parse (the first one on ties, like the official WebQSP script).

    """
    parses: list[Iterable[str]] = list(golds) or [()]
    best: dict[str, float | int] | None = None
    for i, gold in enumerate(parses):
        g = _as_set(gold)
        precision, recall, f1 = _prf(pred, g)
        if best is None or f1 > best["f1"]:
            best = {
                "f1": f1,
                "precision": precision,
                "recall": recall,
                "hit1": hit_at_1(pred, g, ordered=ordered),
                "hit1_any": hit_at_1_any(pred, g),
                "accuracy": 1.0 if f1 == 1.0 else 0.0,
                "parse_index": i,
            }
    assert best is not None
    return best


def score_question(
    pred: Collection[str] | None,
    golds: Sequence[Iterable[str]],
    ordered: bool = False,
    em: float | None = None,
    executable: bool | None = None,
) -> QuestionScore:
    """Score one question: best parse for answer metrics, plus optional EM and executability.

    Args:
        pred: Predicted answers, or ``None`` for a missing prediction (all zeros).
        golds: One gold answer collection per parse (a single-parse dataset passes one).
        ordered: Whether ``pred`` is ranked (see :func:`hit_at_1`).
        em: Logical-form exact match of this question, or ``None`` when not measured.
        executable: Whether the prediction came from an executable logical form, or ``None``.

    Returns:
        The question's :class:`QuestionScore`.

    """
    if pred is None:
        return QuestionScore.missing_prediction(em=None if em is None else 0.0)
    best = best_over_parses(pred, golds, ordered=ordered)
    return QuestionScore(
        f1=float(best["f1"]),
        precision=float(best["precision"]),
        recall=float(best["recall"]),
        hit1=float(best["hit1"]),
        hit1_any=float(best["hit1_any"]),
        parse_index=int(best["parse_index"]),
        em=em,
        executable=executable,
    )


def sum_scores(scores: Iterable[QuestionScore]) -> dict[str, float]:
    """Sum per-question scores (the additive state that :func:`mean_scores` turns into averages).

    Args:
        scores: Per-question scores.

    Returns:
        A dict over :data:`SUM_KEYS`: sums of each metric (``executable`` counts questions flagged
        executable; ``em`` sums EM where measured), ``em_count`` (questions with EM) and ``n``.

    """
    sums = dict.fromkeys(SUM_KEYS, 0.0)
    for s in scores:
        sums["f1"] += s.f1
        sums["precision"] += s.precision
        sums["recall"] += s.recall
        sums["hit1"] += s.hit1
        sums["hit1_any"] += s.hit1_any
        sums["accuracy"] += s.accuracy
        sums["executable"] += 1.0 if s.executable else 0.0
        if s.em is not None:
            sums["em"] += float(s.em)
            sums["em_count"] += 1.0
        sums["n"] += 1.0
    return sums


def mean_scores(sums: Mapping[str, float]) -> dict[str, float]:
    """Turn sums from :func:`sum_scores` (possibly added up over processes) into averages.

    Args:
        sums: A dict over :data:`SUM_KEYS`.

    Returns:
        ``f1``, ``precision``, ``recall``, ``hit1``, ``hit1_any``, ``accuracy`` and
        ``executable`` divided by the number of questions (0 when there are none), and ``em``
        divided by the number of questions where EM was measured, only when there were any.

    """
    n = max(float(sums["n"]), 1.0)
    out = {k: float(sums[k]) / n for k in SUM_KEYS[:7]}
    if float(sums["em_count"]) > 0:
        out["em"] = float(sums["em"]) / float(sums["em_count"])
    return out
