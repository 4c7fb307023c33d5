"""How close predicted decompositions come to the gold ones: the decomposition stage's figures.

Per question of a split, against the dataset's gold decomposition and S-expression (read from the
split's file, never by the decomposer):

- ``parsed``: share of questions with a usable predicted decomposition (status ``ok``);
- ``same_steps``: share whose number of sub-questions equals the gold decomposition's;
- ``names_topic``: share that name one of the gold topic entities (case-insensitive);
- ``relation_recall``: micro recall of the gold S-expression's relations, as phrases
  (:func:`~kbqa_lit.pipelines.coq.decomposition.training_rows.relation_phrase`), among the
  ``[SCHEMA]`` relations the decomposer wrote.

``python benchmarks/coq_decomposition_figures.py WORLD/test.jsonl DECOMPOSED/test.jsonl`` prints them.
"""

from __future__ import annotations

from collections.abc import Iterable

from kbqa_lit.data.gold import gold_items
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.coq.decomposition.training_rows import relation_phrase


def _gold_phrases(ex: KBQAExample) -> set[str]:
    items = gold_items(ex)
    return set() if items is None else {relation_phrase(r) for r in items.relations}


def decomposition_figures(predicted: Iterable[KBQAExample], gold: Iterable[KBQAExample]) -> dict[str, float]:
    """The figures of the module docstring for the predicted examples, matched to ``gold`` by ``qid``.

    Raises:
        UserInputError: When a predicted question is not in ``gold``, or there is none.
    """
    by_qid = {ex.qid: ex for ex in gold}
    n = parsed = same = named = hits = total = 0
    for ex in predicted:
        ref = by_qid.get(ex.qid)
        if ref is None:
            raise UserInputError(f"question {ex.qid!r} is not in the gold file")
        n += 1
        text = ex.decomposition or ""
        parsed += int(ex.meta.get("decomposition_status") == "ok" and bool(text))
        same += int(bool(text) and text.count("[SUBQ]") == (ref.decomposition or "").count("[SUBQ]"))
        named += int(any(str(name).lower() in text.lower() for name in ref.topic_entities.values()))
        wanted = _gold_phrases(ref)
        written = set((ex.meta.get("decomposition_schema") or {}).get("relations") or [])
        hits += len(wanted & written)
        total += len(wanted)
    if not n:
        raise UserInputError("no predicted decomposition to score")
    return {
        "questions": float(n),
        "parsed": parsed / n,
        "same_steps": same / n,
        "names_topic": named / n,
        "relation_recall": hits / total if total else 0.0,
    }


__all__ = ["decomposition_figures"]
