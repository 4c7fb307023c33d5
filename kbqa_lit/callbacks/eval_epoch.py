"""One evaluation epoch of :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval`: what it adds up.

:class:`EvalEpoch` holds the epoch's answer metrics and selection counts (torchmetrics sum states,
synced across ranks), its prediction rows and its clock. The callback calls :meth:`EvalEpoch.start`
at the epoch's start, :meth:`EvalEpoch.add` once per batch and :meth:`EvalEpoch.finish` at its end,
which syncs the metrics and gathers the rows of every rank (collectives: every rank must call it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from lightning.pytorch.utilities import rank_zero_warn

from kbqa_lit.callbacks.eval_rows import SelectionCounts, gather_rows, metrics_from_rows, unique_sorted
from kbqa_lit.callbacks.eval_timing import EpochTimer
from kbqa_lit.metrics.answer_metrics import AnswerMetrics
from kbqa_lit.metrics.functional import QuestionScore
from kbqa_lit.pipelines.selection.execution_guided import Selection


@dataclass
class EpochResult:
    """What a finished epoch gives: metrics (floats, the same on every rank), rows, duplicates, timing.

    Attributes:
        values: The epoch's metrics by name (``f1``, ``hit1``, ..., the rates).
        rows: Every rank's rows, one per example index, in index order.
        duplicates: Rows dropped because a question was evaluated on more than one rank.
        timing: This process's seconds per part (:meth:`~kbqa_lit.callbacks.eval_timing.EpochTimer.summary`).
    """

    values: dict[str, float]
    rows: list[dict[str, Any]]
    duplicates: int
    timing: dict[str, float] = field(default_factory=dict)


class EvalEpoch:
    """The sums, rows and clock of the current evaluation epoch (see the module docstring)."""

    def __init__(self) -> None:
        self.metrics = AnswerMetrics(ordered=False)
        self.counts = SelectionCounts()
        self.rows: list[dict[str, Any]] = []
        self.timer = EpochTimer()
        self._cache_start = (0, 0)

    def start(self, device: torch.device, cache_counts: tuple[int, int], execute_seconds: float) -> None:
        """Reset for a new epoch; the metric states live on ``device`` (CUDA for NCCL collectives).

        Args:
            device: Where the sum states live.
            cache_counts: The execution cache's ``(hits, misses)`` now.
            execute_seconds: The selector's execution clock now.
        """
        self.reset()
        self.metrics.to(device)
        self.counts.to(device)
        self._cache_start = cache_counts
        self.timer.start(execute_seconds)

    def add(
        self,
        rows: list[dict[str, Any]],
        scores: list[QuestionScore],
        selections: Sequence[Selection],
        seconds: tuple[float, float, float],
    ) -> None:
        """Add one batch: its rows, scores and selections, and its ``(generate, select, bookkeeping)`` seconds."""
        self.rows.extend(rows)
        self.metrics.update(scores=scores)
        self.counts.update(
            fallback=sum(int(s.fallback) for s in selections),
            path_fallback=sum(int(s.path_fallback) for s in selections),
            path_override=sum(int(s.path_override) for s in selections),
            answer_type=sum(int(s.answer_type) for s in selections),
            n=len(selections),
        )
        self.timer.add_batch(*seconds, len(selections))

    def finish(
        self, cache_counts: tuple[int, int], execute_seconds: float, *, paths: bool, types: bool, owner: str
    ) -> EpochResult:
        """Sync the sums, gather the rows (collectives) and reset.

        Args:
            cache_counts: The execution cache's ``(hits, misses)`` now.
            execute_seconds: The selector's execution clock now.
            paths: Whether the KB-path fallback was on (its rates are reported only then).
            types: Whether the answer-type check was on (its rate is reported only then).
            owner: The name the duplicate-rows warning gives.
        """
        self.metrics.update(scores=[])  # every rank has updated once, even one without batches
        self.counts.update(
            cache_hits=cache_counts[0] - self._cache_start[0], cache_misses=cache_counts[1] - self._cache_start[1]
        )
        values = {k: float(v) for k, v in self.metrics.compute().items()}  # collective
        values.update({k: float(v) for k, v in self.counts.compute().items()})  # collective
        rows, duplicates = unique_sorted(gather_rows(self.rows))  # collective
        if duplicates:
            rank_zero_warn(
                f"{owner}: {duplicates} question(s) were evaluated on more than one rank "
                "(a padding DistributedSampler?); metrics are recomputed from the unique questions. "
                "Use an unrepeated sampler so every question reaches exactly one rank."
            )
            values.update(metrics_from_rows(rows))
        if not paths:
            values.pop("path_fallback_rate", None)
            values.pop("path_override_rate", None)
        if not types:
            values.pop("answer_type_rate", None)
        result = EpochResult(values, rows, duplicates, self.timer.summary(execute_seconds))
        self.reset()
        return result

    def reset(self) -> None:
        """Drop the sums and rows."""
        self.metrics.reset()
        self.counts.reset()
        self.rows = []


__all__ = ["EpochResult", "EvalEpoch"]
