"""Where an evaluation epoch's time goes: beam search, denormalisation, execution, bookkeeping.

:class:`EpochTimer` accumulates one process's seconds per part of a validation / test / predict
epoch of :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval`; :func:`log_timing` sends
them to the loggers (rank 0, not as synced metrics) with one summary line.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import lightning as L
from lightning.pytorch.utilities import rank_zero_info

#: The parts an epoch's time is split into (logged as ``{prefix}/time_<part>_s``).
PARTS = ("time_generate_s", "time_denormalise_s", "time_execute_s", "time_bookkeeping_s")


class EpochTimer:
    """Seconds per part of the current epoch on this process."""

    def __init__(self) -> None:
        self._times: dict[str, float] = {}

    def start(self, execute_seconds: float) -> None:
        """Start an epoch; ``execute_seconds`` is the selector's execution clock now."""
        self._times = dict.fromkeys(("generate", "select", "bookkeeping", "questions"), 0.0)
        self._times["start"] = time.perf_counter()
        self._times["execute_start"] = execute_seconds

    def add_batch(self, generate: float, select: float, bookkeeping: float, questions: int) -> None:
        """Add one batch's seconds (selection includes the wait for the store) and question count."""
        if self._times:
            self._times["generate"] += generate
            self._times["select"] += select
            self._times["bookkeeping"] += bookkeeping
            self._times["questions"] += questions

    def summary(self, execute_seconds: float) -> dict[str, float]:
        """The epoch so far (``{}`` before :meth:`start`); ``execute_seconds`` as in :meth:`start`."""
        if not self._times:
            return {}
        t = self._times
        total = time.perf_counter() - t["start"]
        execute = execute_seconds - t["execute_start"]
        return {
            "time_generate_s": t["generate"],
            "time_denormalise_s": max(t["select"] - execute, 0.0),
            "time_execute_s": execute,
            "time_bookkeeping_s": t["bookkeeping"],
            "time_total_s": total,
            "questions": t["questions"],
            "questions_per_s": t["questions"] / total if total > 0 else 0.0,
        }


def log_timing(trainer: L.Trainer, prefix: str, timing: Mapping[str, float], to_loggers: bool = True) -> None:
    """Send ``timing`` (an :meth:`EpochTimer.summary`) to the loggers and print one summary line."""
    if not timing or not timing["questions"]:
        return
    if to_loggers:
        for logger in trainer.loggers:
            logger.log_metrics({f"{prefix}/{k}": v for k, v in timing.items()}, step=trainer.global_step)
    total = max(timing["time_total_s"], 1e-9)
    parts = ", ".join(f"{k[5:-2]} {timing[k]:.2f} s ({100 * timing[k] / total:.1f}%)" for k in PARTS)
    rank_zero_info(
        f"{prefix}: {int(timing['questions'])} questions on rank 0 in {total:.2f} s "
        f"({timing['questions_per_s']:.2f} questions/s): {parts}"
    )


__all__ = ["PARTS", "EpochTimer", "log_timing"]
