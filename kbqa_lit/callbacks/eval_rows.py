"""Per-question rows of :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval`: counts, gathering, files.

- :class:`SelectionCounts`: the sum states the answer metrics do not hold (fallbacks, execution-cache
  hits and misses), synced across ranks like them;
- :func:`gather_rows`: every rank's rows on every rank (a collective under DDP);
- :func:`unique_sorted` and :func:`metrics_from_rows`: one row per example index, and the logged
  metrics recomputed from such rows when ranks overlapped;
- the prediction file is written with :func:`kbqa_lit.atomic.write_jsonl_atomic` (a temporary file, renamed);
- :func:`log_wandb_table`: the first rows as a W&B table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_warn
from torchmetrics import Metric

from kbqa_lit.data.gold import gold_sexprs
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.metrics.functional import QuestionScore, mean_scores, sum_scores
from kbqa_lit.metrics.lf_match import logical_form_em
from kbqa_lit.pipelines.selection.execution_guided import Selection, names_of


class SelectionCounts(Metric):
    """Sum states the answer metrics do not hold: fallbacks and execution-cache hits/misses."""

    full_state_update = False
    fallback: torch.Tensor
    path_fallback: torch.Tensor
    path_override: torch.Tensor
    answer_type: torch.Tensor
    n: torch.Tensor
    cache_hits: torch.Tensor
    cache_misses: torch.Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in ("fallback", "path_fallback", "path_override", "answer_type", "n", "cache_hits", "cache_misses"):
            self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(
        self,
        fallback: int = 0,
        n: int = 0,
        cache_hits: int = 0,
        cache_misses: int = 0,
        path_fallback: int = 0,
        path_override: int = 0,
        answer_type: int = 0,
    ) -> None:
        """Add counts."""
        for name, value in (
            ("fallback", fallback),
            ("path_fallback", path_fallback),
            ("path_override", path_override),
            ("answer_type", answer_type),
            ("n", n),
            ("cache_hits", cache_hits),
            ("cache_misses", cache_misses),
        ):
            setattr(self, name, getattr(self, name) + float(value))

    def compute(self) -> dict[str, torch.Tensor]:
        """The per-question rates of the fallbacks, overrides and answer-type changes; the cache hit rate."""
        lookups = self.cache_hits + self.cache_misses
        return {
            "fallback_rate": self.fallback / self.n.clamp(min=1.0),
            "path_fallback_rate": self.path_fallback / self.n.clamp(min=1.0),
            "path_override_rate": self.path_override / self.n.clamp(min=1.0),
            "answer_type_rate": self.answer_type / self.n.clamp(min=1.0),
            "exec_cache_hit_rate": self.cache_hits / lookups.clamp(min=1.0),
        }


def gather_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All ranks' rows on every rank (the local rows when not distributed)."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return list(rows)
    world = torch.distributed.get_world_size()
    if world == 1:
        return list(rows)
    parts: list[list[dict[str, Any]] | None] = [None] * world
    torch.distributed.all_gather_object(parts, rows)
    return [row for part in parts for row in (part or [])]


def unique_sorted(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Rows sorted by example index, one per index; also how many duplicates were dropped."""
    by_index: dict[int, dict[str, Any]] = {}
    for row in rows:
        by_index.setdefault(int(row["index"]), row)
    return [by_index[i] for i in sorted(by_index)], len(rows) - len(by_index)


def metrics_from_rows(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The logged metrics recomputed from per-question rows (used when ranks overlapped)."""
    scores = [
        QuestionScore(
            f1=r["f1"],
            precision=r["precision"],
            recall=r["recall"],
            hit1=r["hit1"],
            hit1_any=r["hit1_any"],
            em=r["em"],
            executable=r["executable"],
        )
        for r in rows
    ]
    out = mean_scores(sum_scores(scores))
    out["fallback_rate"] = sum(1.0 for r in rows if r["fallback"]) / max(len(rows), 1)
    out["path_fallback_rate"] = sum(1.0 for r in rows if r.get("path_fallback")) / max(len(rows), 1)
    out["path_override_rate"] = sum(1.0 for r in rows if r.get("path_override")) / max(len(rows), 1)
    out["answer_type_rate"] = sum(1.0 for r in rows if r.get("answer_type")) / max(len(rows), 1)
    return out


def log_wandb_table(trainer: L.Trainer, key: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Log ``rows`` (prediction rows) as a W&B table under ``key`` to each ``WandbLogger``."""
    if not rows:
        return
    from lightning.pytorch.loggers import WandbLogger

    columns = [
        "qid", "question", "gold", "beams", "chosen_beam", "chosen_sexpr", "sparql",
        "answers", "f1", "hit1", "executable", "fallback",
    ]  # fmt: skip
    data = [
        [
            r["qid"],
            r["question"],
            " | ".join(r["gold"]),
            "\n".join(r["beams"]),
            -1 if r["chosen_beam"] is None else r["chosen_beam"],
            r["chosen_sexpr"] or "",
            r["sparql"] or "",
            " | ".join(r["answers"]),
            r["f1"],
            r["hit1"],
            r["executable"],
            r["fallback"],
        ]
        for r in rows
    ]
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger):
            logger.log_table(key, columns=columns, data=data)


def comparable_answers(kb: Any, answers: list[str], ex: KBQAExample) -> list[str]:
    """The answers in the gold's terms: KB ids, or their names where the gold has names only.

    WebQSP's answer-names files (``meta["answers_by_name"]``) give the gold answers as names;
    predicted ids are mapped to their ``type.object.name`` (ids without one stay ids).
    """
    if not ex.meta.get("answers_by_name") or kb is None:
        return answers
    names = names_of(kb, answers)
    return [names.get(a, a) for a in answers]


def lf_em(sel: Selection, ex: KBQAExample, reverse: Any = None) -> float | None:
    """Logical-form exact match of the chosen beam with any gold parse (``None`` when there is none to compare)."""
    golds = gold_sexprs(ex)
    if not golds:
        return None
    if sel.chosen_sexpr is None:
        return 0.0
    try:
        return 1.0 if any(logical_form_em(sel.chosen_sexpr, g, reverse) for g in golds) else 0.0
    except SExprError as exc:
        rank_zero_warn(f"question {ex.qid}: the gold S-expression does not parse ({exc}); EM not measured")
        return None


#: Beams and errors kept per row of the prediction file.
ROW_BEAMS = 5
ROW_ERRORS = 5
_ERROR_CHARS = 300


def prediction_row(
    index: int, ex: KBQAExample, beams: list[str], text: str | None, sel: Selection, score: QuestionScore
) -> dict[str, Any]:
    """One question's row of the prediction file: the gold, the linking, the beams, the choice, the scores."""
    return {
        "index": index,
        "qid": ex.qid,
        "question": ex.question,
        "gold": [a.id for a in ex.answers],
        "gold_names": [a.name for a in ex.answers],
        "gold_sexpr": ex.s_expression,
        "linking": ex.meta.get("linking", "gold"),
        "linked": dict(ex.topic_entities),
        "beams": beams[:ROW_BEAMS],
        "num_beams": len(beams),
        "chosen_beam": sel.chosen_beam,
        "chosen_sexpr": sel.chosen_sexpr,
        "sparql": sel.sparql,
        "answers": sel.answers,
        "answer_text": text,
        "f1": score.f1,
        "precision": score.precision,
        "recall": score.recall,
        "hit1": score.hit1,
        "hit1_any": score.hit1_any,
        "em": score.em,
        "executable": sel.executable,
        "fallback": sel.fallback,
        "path_fallback": sel.path_fallback,
        "path_override": sel.path_override,
        "answer_type": sel.answer_type,
        "beams_tried": sel.beams_tried,
        "errors": [e[:_ERROR_CHARS] for e in sel.errors[:ROW_ERRORS]],
    }


__all__ = [
    "comparable_answers",
    "lf_em",
    "ROW_BEAMS",
    "ROW_ERRORS",
    "prediction_row",
    "SelectionCounts",
    "gather_rows",
    "log_wandb_table",
    "metrics_from_rows",
    "unique_sorted",
]
