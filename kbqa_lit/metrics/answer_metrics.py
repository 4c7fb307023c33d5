"""``AnswerMetrics``: question-averaged answer metrics as a torchmetrics ``Metric``.

Every state is a float64 sum reduced with ``"sum"`` across processes, so the averages computed
after a DDP sync are exactly those of one process that saw all questions (up to float64
summation order). The arithmetic per question is :func:`kbqa_lit.metrics.functional.score_question`;
this class only keeps the sums of :func:`~kbqa_lit.metrics.functional.sum_scores` as states and
divides them with :func:`~kbqa_lit.metrics.functional.mean_scores`, like ``kbqa eval`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torchmetrics import Metric

from kbqa_lit.metrics.functional import SUM_KEYS, QuestionScore, mean_scores, score_question, sum_scores

#: State name of each key of :func:`~kbqa_lit.metrics.functional.sum_scores`.
_STATE = {key: key if key in ("em_count", "n") else f"{key}_sum" for key in SUM_KEYS}


def _as_parses(gold: Any) -> list[Sequence[str]]:
    """Read one question's gold as a list of parses (a flat list of strings is one parse)."""
    if isinstance(gold, str):
        raise TypeError("a question's gold answers must be a list of strings or a list of lists")
    items = list(gold)
    if not items:
        return [()]
    if all(isinstance(x, str) for x in items):
        return [items]
    if any(isinstance(x, str) for x in items):
        raise TypeError("a question's gold mixes answer strings and parse lists")
    return [list(x) for x in items]


class AnswerMetrics(Metric):
    """Mean F1, precision, recall, Hit@1 (two variants), accuracy, executability and LF EM.

    Args:
        ordered: Whether predictions are ranked lists (``hit1`` = first answer is gold) rather
            than unordered sets (``hit1`` = random-pick expectation ``|P ∩ G| / |P|``).
        prefix: Prepended to every key of :meth:`compute` (e.g. ``"val/"`` gives ``val/f1``, the
            stage-prefixed names the project logs).
        **kwargs: Passed to :class:`torchmetrics.Metric` (e.g. ``sync_on_compute``).

    Example:
        >>> m = AnswerMetrics()
        >>> m.update([["m.1"]], [[["m.1", "m.2"], ["m.3"]]])
        >>> round(float(m.compute()["f1"]), 4)
        0.6667

    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    f1_sum: torch.Tensor
    precision_sum: torch.Tensor
    recall_sum: torch.Tensor
    hit1_sum: torch.Tensor
    hit1_any_sum: torch.Tensor
    accuracy_sum: torch.Tensor
    executable_sum: torch.Tensor
    em_sum: torch.Tensor
    em_count: torch.Tensor
    n: torch.Tensor

    def __init__(self, ordered: bool = False, prefix: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ordered = ordered
        self.prefix = prefix
        for name in _STATE.values():
            self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(
        self,
        preds: Sequence[Sequence[str] | None] | None = None,
        golds: Sequence[Sequence[Sequence[str]]] | Sequence[Sequence[str]] | None = None,
        executable: Sequence[bool | None] | None = None,
        em: Sequence[float | None] | None = None,
        *,
        scores: Iterable[QuestionScore] | None = None,
    ) -> None:
        """Add a batch of questions.

        Args:
            preds: Predicted answers per question; ``None`` marks a missing prediction (all 0).
            golds: Gold answers per question: a list of strings (one parse) or a list of
                parses (lists of strings; the best parse by F1 is scored).
            executable: Per question, whether the prediction came from an executable logical
                form (``None`` = unknown, counted as not executable).
            em: Per question, logical-form EM in ``[0, 1]``, or ``None`` when not measured.
            scores: Already computed per-question scores, instead of the arguments above.

        Raises:
            ValueError: When the per-question lists differ in length or both forms are given.

        """
        if scores is not None:
            if preds is not None or golds is not None:
                raise ValueError("pass either preds/golds or scores, not both")
            batch = list(scores)
        else:
            if preds is None or golds is None:
                raise ValueError("update needs preds and golds (or scores=...)")
            n = len(preds)
            for name, seq in (("golds", golds), ("executable", executable), ("em", em)):
                if seq is not None and len(seq) != n:
                    raise ValueError(f"{name} has {len(seq)} entries for {n} predictions")
            batch = [
                score_question(
                    preds[i],
                    _as_parses(golds[i]),
                    ordered=self.ordered,
                    em=None if em is None else em[i],
                    executable=None if executable is None else executable[i],
                )
                for i in range(n)
            ]
        for key, value in sum_scores(batch).items():
            state = getattr(self, _STATE[key])
            setattr(self, _STATE[key], state + torch.tensor(value, dtype=torch.float64, device=state.device))

    def update_scores(self, scores: Iterable[QuestionScore]) -> None:
        """Add already computed per-question scores (same as ``update(scores=...)``)."""
        self.update(scores=scores)

    def compute(self) -> dict[str, torch.Tensor]:
        """Return question averages (float64 scalars).

        Returns:
            ``f1``, ``precision``, ``recall``, ``hit1``, ``hit1_any``, ``accuracy`` and
            ``executable`` (share of questions flagged executable), each divided by the number
            of questions, and ``em`` (averaged over the questions where EM was measured) when
            any was. All are 0 before any question was added.

        """
        sums = {key: float(getattr(self, state)) for key, state in _STATE.items()}
        return {
            f"{self.prefix}{key}": torch.tensor(value, dtype=torch.float64, device=self.n.device)
            for key, value in mean_scores(sums).items()
        }
