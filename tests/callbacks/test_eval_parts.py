"""The parts ExecutionGuidedEval is built from: constrained decoding modes, prediction rows, epoch timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.callbacks.constrained_decoding import MODES, ConstrainedDecoding
from kbqa_lit.callbacks.eval_rows import metrics_from_rows, unique_sorted
from kbqa_lit.callbacks.eval_timing import EpochTimer
from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval


def _row(index: int, f1: float, fallback: bool = False) -> dict:
    return {
        "index": index, "f1": f1, "precision": f1, "recall": f1, "hit1": f1, "hit1_any": f1,
        "em": None, "executable": not fallback, "fallback": fallback,
    }  # fmt: skip


def test_unknown_mode_is_refused_and_none_builds_no_processor() -> None:
    assert MODES == ("none", "grammar", "schema", "connected", "datamodule")
    with pytest.raises(ValueError, match="constrained must be"):
        ConstrainedDecoding("strict", num_beams=2, max_new_tokens=8)
    assert ConstrainedDecoding("none", 2, 8).processor(None, {}, [], None) is None


def test_callback_follows_changed_decoding_settings(tmp_path: Path) -> None:
    cb = ExecutionGuidedEval(store=str(tmp_path / "kb"), num_beams=3, constrained="none")
    assert (cb._decoder(128).mode, cb._decoder(128).num_beams) == ("none", 3)
    cb.constrained, cb.num_beams = "grammar", 4
    d = cb._decoder(64)
    assert (d.mode, d.num_beams, d.max_new_tokens) == ("grammar", 4, 64)


def test_rows_are_unique_by_index_and_rescored(tmp_path: Path) -> None:
    rows, dropped = unique_sorted([_row(2, 1.0), _row(0, 0.0, fallback=True), _row(2, 0.5)])
    assert [r["index"] for r in rows] == [0, 2] and dropped == 1 and rows[1]["f1"] == 1.0
    metrics = metrics_from_rows(rows)
    assert metrics["f1"] == pytest.approx(0.5) and metrics["fallback_rate"] == pytest.approx(0.5)
    out = tmp_path / "sub" / "preds.jsonl"
    write_jsonl_atomic(rows, out)
    assert [json.loads(line)["index"] for line in out.read_text().splitlines()] == [0, 2]
    assert [p.name for p in out.parent.iterdir()] == ["preds.jsonl"]  # no temporary file left


def test_epoch_timer_splits_execution_out_of_selection() -> None:
    timer = EpochTimer()
    assert timer.summary(0.0) == {}
    timer.start(execute_seconds=10.0)
    timer.add_batch(generate=2.0, select=1.5, bookkeeping=0.25, questions=4)
    timing = timer.summary(execute_seconds=11.0)
    assert timing["time_generate_s"] == 2.0 and timing["time_execute_s"] == pytest.approx(1.0)
    assert timing["time_denormalise_s"] == pytest.approx(0.5) and timing["questions"] == 4
