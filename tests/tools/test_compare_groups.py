"""Per-group metrics of prediction files (``kbqa compare --group-by``): ExecutionGuidedEval rows and kbqa eval input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.tools.compare_groups import file_sources, group_metrics


def _gold(path: Path) -> Path:
    rows = [
        {
            "qid": f"q{hop}{i}",
            "question": "q",
            "answers": [{"id": f"m.{hop}{i}", "name": "a", "kind": "entity"}],
            "meta": {"hops": hop},
        }
        for hop in (1, 2)
        for i in range(2)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_callback_rows_keep_their_own_scores(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold.jsonl")
    rows = [  # only the evaluated questions count (q21 was not evaluated)
        {"qid": "q10", "answers": [], "f1": 1.0, "precision": 1.0, "recall": 1.0, "hit1": 1.0, "hit1_any": 1.0},
        {"qid": "q11", "answers": [], "f1": 0.5, "precision": 0.5, "recall": 0.5, "hit1": 0.0, "hit1_any": 1.0},
        {"qid": "q20", "answers": [], "f1": 0.0, "precision": 0.0, "recall": 0.0, "hit1": 0.0, "hit1_any": 0.0},
    ]
    groups = group_metrics(file_sources([_lines(tmp_path / "test_predictions_epoch0.jsonl", rows)], gold), "hops")
    by_hop = groups["sources"]["test_predictions_epoch0.jsonl"]
    assert {k: (v["n"], v["f1"], v["hit1"]) for k, v in by_hop.items()} == {"1": (2, 0.75, 0.5), "2": (1, 0.0, 0.0)}


def test_eval_predictions_are_scored_like_kbqa_eval(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold.jsonl")
    preds = _lines(tmp_path / "preds.jsonl", [{"qid": "q10", "answers": ["m.10"]}, {"qid": "q20", "answers": ["x"]}])
    by_hop = group_metrics(file_sources([preds], gold), "hops")["sources"]["preds.jsonl"]
    assert {k: (v["n"], v["f1"]) for k, v in by_hop.items()} == {"1": (2, 0.5), "2": (2, 0.0)}  # missing → 0


def test_predictions_of_another_dataset_are_refused(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold.jsonl")
    other = _lines(tmp_path / "p.jsonl", [{"qid": "other-1", "f1": 1.0, "hit1": 1.0}])
    with pytest.raises(UserInputError, match="none of its questions is in the gold file"):
        group_metrics(file_sources([other], gold), "hops")
    with pytest.raises(UserInputError, match="no such prediction file"):
        group_metrics(file_sources([tmp_path / "missing.jsonl"], gold), "hops")
    bad = _lines(tmp_path / "bad.jsonl", [{"qid": "q10", "answers": "m.10"}])
    with pytest.raises(DataFormatError, match="bad.jsonl"):
        group_metrics(file_sources([bad], gold), "hops")
