from __future__ import annotations

import json
import socket
import warnings
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from kbqa_lit.metrics import AnswerMetrics, answer_f1, hit_at_1

# (pred, gold, executable, em): a mix of single- and multi-parse gold, empty sets, literals,
# duplicates and a missing prediction (None).
QUESTIONS: list[tuple[list[str] | None, list, bool | None, float | None]] = [
    (["m.1"], [["m.1", "m.2"], ["m.3"]], True, 1.0),
    (["m.1", "m.1", "m.9"], ["m.1"], True, 0.0),
    ([], [], False, None),
    (["1990"], ["1990"], None, 1.0),
    (None, ["m.4"], None, 0.0),
    (["m.5", "m.6", "m.7"], [["m.6"], ["m.5", "m.6", "m.7", "m.8"]], True, None),
    (["m.2"], [], False, 0.0),
]


def _columns(rows: list) -> tuple[list, list, list, list]:
    return ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows])


def _as_floats(values: dict[str, torch.Tensor]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items()}


def _single_process() -> dict[str, float]:
    m = AnswerMetrics()
    m.update(*_columns(QUESTIONS))
    return _as_floats(m.compute())


def test_values_by_hand() -> None:
    m = AnswerMetrics()
    m.update([["m.1"], None], [[["m.1", "m.2"], ["m.3"]], ["1990"]])
    got = _as_floats(m.compute())
    assert got["f1"] == 1 / 3  # exactly: (2/3 + 0) / 2
    assert got["precision"] == 0.5 and got["recall"] == 0.25
    assert got["hit1"] == 0.5 and got["hit1_any"] == 0.5 and got["accuracy"] == 0.0
    assert got["executable"] == 0.0 and "em" not in got


def test_matches_functional_and_reports_all_keys() -> None:
    got = _single_process()
    assert set(got) == {"f1", "precision", "recall", "hit1", "hit1_any", "accuracy", "executable", "em"}
    preds, golds, _, _ = _columns(QUESTIONS)
    f1s = []
    for p, g in zip(preds, golds, strict=True):
        parses = g if g and isinstance(g[0], list) else [g]
        f1s.append(0.0 if p is None else max(answer_f1(p, gp) for gp in parses))
    assert got["f1"] == pytest.approx(sum(f1s) / len(f1s), abs=1e-12)
    assert got["executable"] == pytest.approx(3 / 7)
    assert got["em"] == pytest.approx(2 / 5)  # EM measured on 5 questions; the missing one scores 0
    assert got["accuracy"] == pytest.approx(2 / 7)  # both-empty Q3 and the literal Q4
    for v in got.values():
        assert 0.0 <= v <= 1.0


def test_states_are_float64_sums_and_batches_add_up() -> None:
    m = AnswerMetrics()
    for name in ("f1_sum", "hit1_sum", "em_count", "n"):
        state = getattr(m, name)
        assert state.dtype == torch.float64 and m._reductions[name] is not None
    half = len(QUESTIONS) // 2
    m.update(*_columns(QUESTIONS[:half]))
    m.update(*_columns(QUESTIONS[half:]))
    assert _as_floats(m.compute()) == pytest.approx(_single_process(), abs=1e-12)
    m.reset()
    assert float(m.n) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics warns about compute() before update()
        assert all(v == 0.0 for v in _as_floats(m.compute()).values())


def test_forward_returns_batch_values_and_accumulates() -> None:
    m = AnswerMetrics()
    batch = m(*_columns(QUESTIONS[:2]))
    assert float(batch["f1"]) == pytest.approx((2 / 3 + 2 / 3) / 2)
    m(*_columns(QUESTIONS[2:]))
    assert _as_floats(m.compute()) == pytest.approx(_single_process(), abs=1e-12)


def test_ordered_hit1() -> None:
    preds, golds = [["m.9", "m.1"]], [["m.1"]]
    ranked, unordered = AnswerMetrics(ordered=True), AnswerMetrics()
    ranked.update(preds, golds)
    unordered.update(preds, golds)
    assert float(ranked.compute()["hit1"]) == hit_at_1(preds[0], golds[0], ordered=True) == 0.0
    assert float(unordered.compute()["hit1"]) == 0.5


def test_prefix() -> None:
    m = AnswerMetrics(prefix="val/")
    m.update([["m.1"]], [["m.1"]], em=[1.0])
    assert _as_floats(m.compute()) == {
        f"val/{k}": 1.0 for k in ("f1", "precision", "recall", "hit1", "hit1_any", "accuracy", "em")
    } | {"val/executable": 0.0}


def test_bad_input() -> None:
    m = AnswerMetrics()
    with pytest.raises(ValueError):
        m.update([["m.1"]], [["m.1"], ["m.2"]])
    with pytest.raises(ValueError):
        m.update([["m.1"]], [["m.1"]], executable=[True, False])
    with pytest.raises(TypeError):
        m.update([["m.1"]], [["m.1", ["m.2"]]])
    with pytest.raises(ValueError):
        m.update()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ddp_worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        rows = QUESTIONS[:3] if rank == 0 else QUESTIONS[3:]  # uneven split
        m = AnswerMetrics()
        m.update(*_columns(rows))
        values = _as_floats(m.compute())
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(values))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow  # ~9 s: two spawned interpreters import torch and torchmetrics
def test_ddp_two_processes_equal_single_process(tmp_path: Path) -> None:
    mp.spawn(_ddp_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    expected = _single_process()
    for rank in (0, 1):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert set(got) == set(expected)
        assert got == pytest.approx(expected, abs=1e-12)
