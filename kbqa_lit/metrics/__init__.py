"""Metrics: set F1, Hit@1 (ranked / random-pick and any-hit), logical-form EM.

- :mod:`kbqa_lit.metrics.functional`: pure functions over answer collections (the arithmetic);
- :mod:`kbqa_lit.metrics.answer_metrics`: :class:`AnswerMetrics`, a torchmetrics ``Metric`` with
  sum-reduced states (same numbers under DDP as in one process);
- :mod:`kbqa_lit.metrics.lf_match`: :func:`logical_form_em` over S-expression graphs.

``AnswerMetrics`` is imported lazily, so the pure functions do not pull in torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbqa_lit.metrics.functional import (
    QuestionScore,
    answer_f1,
    answer_precision,
    answer_recall,
    best_over_parses,
    hit_at_1,
    hit_at_1_any,
    score_question,
)
from kbqa_lit.metrics.lf_match import canonical_form, load_reverse_properties, logical_form_em

if TYPE_CHECKING:
    from kbqa_lit.metrics.answer_metrics import AnswerMetrics

__all__ = [
    "AnswerMetrics",
    "QuestionScore",
    "answer_f1",
    "answer_precision",
    "answer_recall",
    "best_over_parses",
    "canonical_form",
    "hit_at_1",
    "hit_at_1_any",
    "load_reverse_properties",
    "logical_form_em",
    "score_question",
]


def __getattr__(name: str) -> Any:
    if name == "AnswerMetrics":
        from kbqa_lit.metrics.answer_metrics import AnswerMetrics

        return AnswerMetrics
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
