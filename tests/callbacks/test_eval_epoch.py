"""EvalEpoch: an evaluation epoch's sums, rows and clock, added per batch and finished once."""

from __future__ import annotations

from dataclasses import asdict

import pytest
import torch

from kbqa_lit.callbacks.eval_epoch import EvalEpoch
from kbqa_lit.metrics.functional import score_question
from kbqa_lit.pipelines.selection.execution_guided import Selection


def _selection(executable: bool, *, path_fallback: bool = False) -> Selection:
    return Selection(
        answers=["m.a"] if executable or path_fallback else [],
        chosen_beam=0 if executable else None,
        chosen_sexpr=None,
        sparql=None,
        executable=executable,
        fallback=not executable and not path_fallback,
        beams_tried=1,
        path_fallback=path_fallback,
    )


def _batch(epoch: EvalEpoch, indices: list[int], right: list[bool], sels: list[Selection]) -> None:
    scores = [
        score_question(["m.a"] if ok else ["m.b"], [["m.a"]], executable=sel.executable)
        for ok, sel in zip(right, sels, strict=True)
    ]
    rows = [
        {"index": i, "fallback": sel.fallback, **asdict(s)} for i, s, sel in zip(indices, scores, sels, strict=True)
    ]
    epoch.add(rows, scores, sels, (0.5, 0.25, 0.0))


def test_an_epoch_adds_up_its_batches_and_starts_over() -> None:
    epoch = EvalEpoch()
    epoch.start(torch.device("cpu"), (10, 5), execute_seconds=1.0)
    _batch(epoch, [3, 1], [True, False], [_selection(True), _selection(False)])
    _batch(epoch, [2], [True], [_selection(False, path_fallback=True)])
    result = epoch.finish((14, 6), execute_seconds=1.5, paths=True, types=False, owner="test")
    v = result.values
    assert [r["index"] for r in result.rows] == [1, 2, 3] and result.duplicates == 0
    assert v["f1"] == pytest.approx(2 / 3) and v["executable"] == pytest.approx(1 / 3)
    assert v["fallback_rate"] == pytest.approx(1 / 3) and v["path_fallback_rate"] == pytest.approx(1 / 3)
    assert v["exec_cache_hit_rate"] == pytest.approx(4 / 5)  # 4 hits, 1 miss in this epoch
    assert "answer_type_rate" not in v  # the answer-type check was off
    assert result.timing["questions"] == 3 and result.timing["time_generate_s"] == pytest.approx(1.0)
    assert result.timing["time_execute_s"] == pytest.approx(0.5)
    assert epoch.rows == []  # finished: the next epoch starts empty
    epoch.start(torch.device("cpu"), (0, 0), execute_seconds=0.0)
    assert epoch.finish((0, 0), 0.0, paths=False, types=False, owner="test").rows == []


def test_a_question_seen_twice_is_counted_once_with_a_warning() -> None:
    epoch = EvalEpoch()
    epoch.start(torch.device("cpu"), (0, 0), execute_seconds=0.0)
    _batch(epoch, [0, 0], [True, True], [_selection(True), _selection(True)])
    with pytest.warns(UserWarning, match="owner-name: 1 question"):
        result = epoch.finish((0, 0), 0.0, paths=False, types=False, owner="owner-name")
    assert result.duplicates == 1 and len(result.rows) == 1 and "path_fallback_rate" not in result.values
