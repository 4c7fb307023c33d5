"""Per-group metrics of prediction files for ``kbqa compare --group-by KEY --predictions FILE --gold FILE``.

The grouping is ``kbqa eval --group-by``'s (:func:`kbqa_lit.tools.eval_tool.group_summaries`): the
metrics per value of the gold examples' ``meta[KEY]`` (MetaQA's ``hops``, ``qtype``). A prediction
file is either

- what :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval` writes
  (``test_predictions_epoch<E>.jsonl``: one row per evaluated question with its own ``f1``,
  ``hit1``...): those per-question scores are used as they are — the numbers the run logged — for
  the questions in the file (a run with ``limit_test_batches`` scored only those); or
- ``kbqa eval``'s input (``{"qid", "answers", ...}`` without scores): scored by ``kbqa eval``'s
  scorer, every gold question counting (a missing prediction scores 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.metrics.functional import QuestionScore
from kbqa_lit.tools.common import iter_json_lines
from kbqa_lit.tools.eval_tool import GoldQuestion, _read_gold, _read_preds, evaluate, group_summaries

SCORE_KEYS = ("f1", "precision", "recall", "hit1", "hit1_any")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _row_score(row: dict[str, Any], path: Path, lineno: int) -> QuestionScore:
    try:
        values = {k: float(row.get(k, 0.0)) for k in SCORE_KEYS}
    except (TypeError, ValueError):
        raise DataFormatError(path, lineno, f"scores {', '.join(SCORE_KEYS)} must be numbers") from None
    em = row.get("em")
    executable = row.get("executable")
    return QuestionScore(
        **values,
        em=float(em) if _is_number(em) else None,
        executable=executable if isinstance(executable, bool) else None,
    )


def _scored_rows(path: Path, gold: dict[str, GoldQuestion]) -> list[tuple[GoldQuestion, QuestionScore]] | None:
    """Per-question scores the file carries (ExecutionGuidedEval rows), or ``None`` when it has none."""
    scored: list[tuple[GoldQuestion, QuestionScore]] = []
    unknown: list[str] = []
    for lineno, row in iter_json_lines(path):
        if not (_is_number(row.get("f1")) and _is_number(row.get("hit1"))):
            return None
        qid = str(row.get("qid"))
        if qid not in gold:
            unknown.append(qid)
            continue
        scored.append((gold[qid], _row_score(row, path, lineno)))
    if unknown and not scored:
        raise UserInputError(
            f"{path}: none of its questions is in the gold file (first qid {unknown[0]!r}); "
            "give --gold the file the run evaluated (its data.init_args.test_file or val_file)"
        )
    return scored


def _label(path: Path, paths: Sequence[Path]) -> str:
    same = [p for p in paths if p.name == path.name]
    return f"{path.parent.name}/{path.name}" if len(same) > 1 else path.name


def group_metrics(predictions: Sequence[Path], gold_path: Path, key: str, gold_format: str = "jsonl") -> dict:
    """Per prediction file, the metrics per value of the gold examples' ``meta[key]``.

    Args:
        predictions: Prediction files (ExecutionGuidedEval rows or ``kbqa eval`` predictions).
        gold_path: The gold dataset the predictions answer.
        key: The ``meta`` key to group by (``hops``).
        gold_format: ``kbqa eval --format`` of the gold file.

    Returns:
        ``{"key", "gold", "sources": {file label: {value: {"n", "f1", "hit1", ...}}}}``.

    Raises:
        UserInputError: For a missing file, or predictions that match no gold question.
        DataFormatError: For a malformed line, naming file and line.
    """
    gold = _read_gold(gold_path, gold_format)
    sources: dict[str, Any] = {}
    for path in predictions:
        if not path.is_file():
            raise UserInputError(f"no such prediction file: {path}")
        scored = _scored_rows(path, gold)
        if scored is None:
            preds, _unknown, any_lf, _any_exec = _read_preds(path, gold)
            scored = evaluate(gold, preds, with_em=any_lf, gold_path=gold_path)
        sources[_label(path, predictions)] = group_summaries(scored, key)
    return {"key": key, "gold": str(gold_path), "sources": sources}
