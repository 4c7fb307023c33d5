"""Per-group metrics of prediction files for ``kbqa compare --group-by KEY [--predictions FILE... --gold FILE]``.

The grouping is ``kbqa eval --group-by``'s (:func:`kbqa_lit.tools.eval_tool.group_summaries`): the
metrics per value of the gold examples' ``meta[KEY]`` (MetaQA's ``hops``, ``qtype``). A prediction
file is either

- what :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval` writes
  (``test_predictions_epoch<E>.jsonl``: one row per evaluated question with its own ``f1``,
  ``hit1``...): those per-question scores are used as they are — the numbers the run logged — for
  the questions in the file (a run with ``limit_test_batches`` scored only those); or
- ``kbqa eval``'s input (``{"qid", "answers", ...}`` without scores): scored by ``kbqa eval``'s
  scorer, every gold question counting (a missing prediction scores 0).

Without ``--predictions``, :func:`test_run_sources` takes them from the ``kbqa test`` runs among the
compared runs: the newest ``test_predictions_epoch*.jsonl`` in the run's ExecutionGuidedEval
``predictions_dir`` (else the run directory), scored against the run's own
``data.init_args.test_file`` (or ``--gold``), relative paths resolved against the folder the run
started in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.metrics.functional import QuestionScore
from kbqa_lit.tools.common import iter_json_lines
from kbqa_lit.tools.eval_tool import GoldQuestion, _read_gold, _read_preds, evaluate, group_summaries
from kbqa_lit.tracking.lineage import run_cwd, run_stage
from kbqa_lit.tracking.runs import RunRecord

SCORE_KEYS = ("f1", "precision", "recall", "hit1", "hit1_any")
#: What ExecutionGuidedEval names its prediction files, after the stage (``test``).
PREDICTIONS_GLOB = "_predictions_epoch*.jsonl"


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


@dataclass(frozen=True)
class GroupSource:
    """One prediction file to group, the gold file it answers, and its label in the report."""

    label: str
    predictions: Path
    gold: Path


def file_sources(predictions: Sequence[Path], gold: Path) -> list[GroupSource]:
    """Sources for ``--predictions FILE... --gold FILE``, labelled by file name (with its folder when two clash)."""
    out = []
    for path in predictions:
        clash = sum(p.name == path.name for p in predictions) > 1
        out.append(GroupSource(f"{path.parent.name}/{path.name}" if clash else path.name, path, gold))
    return out


def _resolve(path: str, run: RunRecord) -> Path:
    cwd = run_cwd(run)
    return Path(path) if Path(path).is_absolute() or cwd is None else cwd / path


def test_run_sources(runs: Sequence[RunRecord], gold: Path | None = None) -> list[GroupSource]:
    """Sources from the ``kbqa test`` runs among ``runs`` (see the module docstring).

    Raises:
        UserInputError: When no test run left a prediction file, or one has no gold file to score it by.
    """
    out = []
    for run in runs:
        if run_stage(run) != "test":
            continue
        folders = [
            _resolve(value, run)
            for key, value in run.params.items()
            if re.fullmatch(r"trainer\.callbacks(?:\[\d+\])?\.init_args\.predictions_dir", key) and value
        ]
        files = [f for folder in [*folders, run.path] for f in folder.glob(f"test{PREDICTIONS_GLOB}")]
        if not files:
            continue
        test_file = run.params.get("data.init_args.test_file")
        gold_path = gold or (_resolve(test_file, run) if isinstance(test_file, str) and test_file else None)
        if gold_path is None:
            raise UserInputError(f"{run.name}: no data.init_args.test_file in its config; give --gold FILE")
        newest = max(files, key=lambda f: (f.stat().st_mtime, f.name))
        out.append(GroupSource(run.name, newest, gold_path))
    if not out:
        raise UserInputError(
            f"--group-by: no kbqa test run among the runs left a test{PREDICTIONS_GLOB} file "
            "(ExecutionGuidedEval writes one); give --predictions FILE... --gold FILE"
        )
    return out


def group_metrics(sources: Sequence[GroupSource], key: str, gold_format: str = "jsonl") -> dict:
    """Per prediction file, the metrics per value of the gold examples' ``meta[key]``.

    Args:
        sources: Prediction files (ExecutionGuidedEval rows or ``kbqa eval`` predictions) with their gold files.
        key: The ``meta`` key to group by (``hops``).
        gold_format: ``kbqa eval --format`` of the gold files.

    Returns:
        ``{"key", "files": {label: {"predictions", "gold"}}, "sources": {label: {value: {"n", "f1", "hit1", ...}}}}``.

    Raises:
        UserInputError: For a missing file, or predictions that match no gold question.
        DataFormatError: For a malformed line, naming file and line.
    """
    golds: dict[Path, dict[str, GoldQuestion]] = {}
    groups: dict[str, Any] = {}
    for source in sources:
        if not source.predictions.is_file():
            raise UserInputError(f"no such prediction file: {source.predictions}")
        if source.gold not in golds:
            golds[source.gold] = _read_gold(source.gold, gold_format)
        gold = golds[source.gold]
        scored = _scored_rows(source.predictions, gold)
        if scored is None:
            preds, _unknown, any_lf, _any_exec = _read_preds(source.predictions, gold)
            scored = evaluate(gold, preds, with_em=any_lf, gold_path=source.gold)
        groups[source.label] = group_summaries(scored, key)
    files = {s.label: {"predictions": str(s.predictions), "gold": str(s.gold)} for s in sources}
    return {"key": key, "files": files, "sources": groups}
