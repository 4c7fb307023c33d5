"""End-to-end figures of CoQ's refinement and pattern stage, from the examples ``PatternWriter`` writes.

The classifier's logged ``val/rel_{precision,recall,f1}`` are *item-level over the retrieved
candidates*: a gold relation the retriever never proposed is not an item, so it is not counted as
missed. The figures here are end to end, per question against the gold S-expression:

- ``relations`` / ``entities``: micro precision, recall and F1 of ``meta["refined_relations"]`` /
  ``meta["refined_entities"]`` against the gold relations / entities (a gold item the retriever
  missed counts as a false negative), and ``retrieved``: the share of gold items that were among
  the candidates at all (``meta["relation_candidates"]`` / ``meta["entity_candidates"]``, when
  the file has them);
- ``patterns_per_question``: the mean number of ``meta["patterns"]``;
- ``with_gold_pattern``: the share of questions with gold pairs whose patterns contain one of
  them (a (relation, entity) pair joined directly in the gold S-expression).

Questions without a gold S-expression count in ``questions`` and ``patterns_per_question`` only.
``python benchmarks/coq_stage_figures.py PATTERNS.jsonl`` prints them; ``PatternWriter`` prints them at
the end of ``kbqa predict`` and logs them (:func:`figure_metrics`) to the trainer's loggers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kbqa_lit.data.coq.generator_inputs import gold_patterns
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.coq.classifier_inputs import gold_entities, gold_relations


@dataclass
class _Counts:
    """Micro counts of one kind of item (relations or entities)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    gold: int = 0
    retrieved: int = 0
    with_candidates: int = 0

    def add(self, predicted: Sequence[str], gold: Sequence[str], candidates: Sequence[str] | None) -> None:
        pred_set, gold_set = set(predicted), set(gold)
        self.tp += len(pred_set & gold_set)
        self.fp += len(pred_set - gold_set)
        self.fn += len(gold_set - pred_set)
        self.gold += len(gold_set)
        if candidates is not None:
            self.with_candidates += len(gold_set)
            self.retrieved += len(gold_set & set(candidates))

    def figures(self) -> dict[str, float | int | None]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        retrieved = self.retrieved / self.with_candidates if self.with_candidates else None
        return {
            "gold": self.gold,
            "retrieved": None if retrieved is None else round(retrieved, 4),
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
        }


def _ids(scored: Any) -> list[str]:
    """Ids of ``[[id, prob], ...]`` (or of plain ids)."""
    return [str(x[0]) if isinstance(x, list | tuple) else str(x) for x in scored or []]


def _pairs(patterns: Any) -> set[tuple[str, str]]:
    return {(str(p.get("relation")), str(p.get("entity"))) for p in patterns or [] if isinstance(p, dict)}


def schema_stage_figures(examples: Iterable[KBQAExample]) -> dict[str, Any]:
    """The end-to-end figures of the refinement and pattern stage (see the module docstring).

    Args:
        examples: Examples written by ``PatternWriter`` (``meta["refined_relations"]``,
            ``meta["refined_entities"]``, ``meta["patterns"]``), with gold S-expressions.

    Returns:
        ``{"questions", "questions_with_gold", "patterns_per_question", "with_gold_pattern",
        "relations": {...}, "entities": {...}}``.
    """
    rels, ents = _Counts(), _Counts()
    n = with_gold = with_gold_pairs = hits = n_patterns = 0
    for ex in examples:
        n += 1
        meta = ex.meta
        n_patterns += len(meta.get("patterns") or [])
        if not ex.s_expression:
            continue
        with_gold += 1
        rel_cands = meta.get("relation_candidates")
        ent_cands = meta.get("entity_candidates")
        rels.add(
            _ids(meta.get("refined_relations")), gold_relations(ex), None if rel_cands is None else _ids(rel_cands)
        )
        ents.add(_ids(meta.get("refined_entities")), gold_entities(ex), None if ent_cands is None else list(ent_cands))
        gold_pairs = set(gold_patterns(ex.s_expression))
        if gold_pairs:
            with_gold_pairs += 1
            hits += bool(gold_pairs & _pairs(meta.get("patterns")))
    return {
        "questions": n,
        "questions_with_gold": with_gold,
        "patterns_per_question": round(n_patterns / n, 4) if n else 0.0,
        "with_gold_pattern": round(hits / with_gold_pairs, 4) if with_gold_pairs else None,
        "relations": rels.figures(),
        "entities": ents.figures(),
    }


def figure_metrics(figures: dict[str, Any], prefix: str = "predict/") -> dict[str, float]:
    """The figures as flat logger metrics (``predict/rel_f1_e2e``...; figures that are ``None`` left out)."""
    out: dict[str, float] = {}
    for key in ("patterns_per_question", "with_gold_pattern"):
        if figures.get(key) is not None:
            out[prefix + key] = float(figures[key])
    for kind, short in (("relations", "rel"), ("entities", "ent")):
        for key in ("precision", "recall", "f1", "retrieved"):
            value = figures[kind].get(key)
            if value is not None:
                out[f"{prefix}{short}_{key}_e2e"] = float(value)
    return out


__all__ = ["figure_metrics", "schema_stage_figures"]
