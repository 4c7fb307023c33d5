"""FC-KBQA's component figures: what detection, linking, the skeleton parser and the pairs got right.

Scored after the fact against the gold S-expressions (the answer key is read here only, never by
the stages): per question, then averaged over the questions that have a gold S-expression.

- ``relation_recall@k`` / ``class_recall@k``: the share of the gold relations (classes) among the
  detected top-k (``meta["fc"]["relations"]``/``["classes"]``, best first);
- ``entity_accuracy``: every gold topic entity was linked;
- ``skeleton_top1`` / ``skeleton_top2``: the gold skeleton is the first candidate / one of the two;
- ``pair_coverage``: the share of the gold pairs (:func:`~kbqa_lit.data.fc.gold_pairs.gold_pairs`)
  among the built ones (micro: over all gold pairs); ``pairs_per_question``: the pair-set size.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbqa_lit.data.fc.composer_examples import predicted_components
from kbqa_lit.data.fc.gold_pairs import gold_pairs
from kbqa_lit.data.fc.skeletons import lf_skeleton
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sexpr import schema_items


def _recall(gold: Sequence[str], found: Sequence[str]) -> float | None:
    return sum(g in found for g in gold) / len(gold) if gold else None


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def detection_figures(
    golds: Sequence[KBQAExample], annotated: Sequence[KBQAExample], ks: Sequence[int] = (1, 5, 10)
) -> dict[str, float]:
    """The component figures of annotated examples (see the module docstring), aligned with their golds."""
    per: dict[str, list[float | None]] = {f"{kind}_recall@{k}": [] for kind in ("relation", "class") for k in ks}
    per.update({"entity_accuracy": [], "skeleton_top1": [], "skeleton_top2": [], "pairs_per_question": []})
    covered = total = 0
    for gold, ex in zip(golds, annotated, strict=True):
        comp = predicted_components(ex)
        if comp is None or not gold.s_expression:
            continue
        try:
            items, skeleton, pairs = (
                schema_items(gold.s_expression),
                lf_skeleton(gold.s_expression),
                gold_pairs(gold.s_expression),
            )
        except SExprError:
            continue
        for k in ks:
            per[f"relation_recall@{k}"].append(_recall(items.relations, comp.relations[:k]))
            per[f"class_recall@{k}"].append(_recall(items.classes, comp.classes[:k]))
        per["entity_accuracy"].append(float(set(gold.topic_entities) <= set(comp.entities)))
        per["skeleton_top1"].append(float(comp.skeletons[:1] == [skeleton]))
        per["skeleton_top2"].append(float(skeleton in comp.skeletons[:2]))
        per["pairs_per_question"].append(float(len(comp.pairs)))
        built = {(p.kind, p.first, p.second) for p in comp.pairs}
        covered += sum((p.kind, p.first, p.second) in built for p in pairs)
        total += len(pairs)
    out = {name: round(_mean(values), 4) for name, values in per.items()}
    out["pair_coverage"] = round(covered / total, 4) if total else 0.0
    out["questions"] = float(len(per["skeleton_top1"]))
    return out


__all__ = ["detection_figures"]
