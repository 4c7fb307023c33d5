"""ExecutionGuidedEval in real Trainer runs: a real Oxigraph store, a fixed-output fake generator."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import lightning as L
import pytest
from lightning.pytorch.loggers import CSVLogger

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.callbacks.prediction_writer import PredictionWriter
from tests.helpers.exec_eval_doubles import EXPECTED, EXPECTED_ROWS, FakeGenerator, TinyDataModule, build_kb

DOUBLES = Path(__file__).resolve().parents[1] / "helpers" / "exec_eval_doubles.py"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_kb(tmp_path_factory.mktemp("kb"))


def make_trainer(tmp_path: Path, callback: L.Callback, logger: Any = None, **kwargs: Any) -> L.Trainer:
    return L.Trainer(
        accelerator="cpu",
        devices=1,
        logger=logger if logger is not None else CSVLogger(tmp_path, name="csv"),
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_rows(rows: list[dict[str, Any]]) -> None:
    assert [r["index"] for r in rows] == list(range(7))
    for r in rows:
        chosen, answers, executable, fallback = EXPECTED_ROWS[r["qid"]]
        assert (r["chosen_beam"], sorted(r["answers"]), r["executable"], r["fallback"]) == (
            chosen,
            answers,
            executable,
            fallback,
        ), r["qid"]


# -- validate, in process -------------------------------------------------------------------
@pytest.mark.parametrize("workers", [1, 2])
def test_validate_logs_hand_computed_metrics_and_writes_rows(store_dir: Path, tmp_path: Path, workers: int) -> None:
    callback = ExecutionGuidedEval(str(store_dir), num_beams=4, max_new_tokens=32, workers=workers, timeout=5.0)
    model = FakeGenerator()
    trainer = make_trainer(tmp_path, callback)
    out = trainer.validate(model, datamodule=TinyDataModule())[0]
    for key, value in EXPECTED.items():
        assert out[f"val/{key}"] == pytest.approx(value, abs=1e-6), key
    # 12 store lookups (9 distinct beams tried, 3 names); EMPTY twice and FILMS_OF_DEE_TWO once more hit
    # the cache. With workers > 1 the look-ahead also runs some later beams, so the rate varies.
    if workers == 1:
        assert out["val/exec_cache_hit_rate"] == pytest.approx(3 / 12, abs=1e-6)
    assert model.lf_calls[0] == {"num_beams": 4, "n": 4, "max_new_tokens": 32}
    # one complete file in trainer.log_dir, rows sorted by index
    path = Path(trainer.log_dir) / "val_predictions_epoch0.jsonl"
    assert callback.last_path == path and path.is_file()
    rows = read_rows(path)
    check_rows(rows)
    q0 = rows[0]
    assert q0["question"] == "who directed Alpha?" and sorted(q0["gold"]) == ["m.d1", "m.d2"]
    assert q0["chosen_sexpr"] == "(JOIN (R film.film.directed_by) m.a)" and "SELECT" in q0["sparql"]
    assert q0["beams"][0].startswith("( join") and q0["num_beams"] == 2 and q0["f1"] == 1.0
    assert q0["errors"] == ["beam 0: no answers"] and q0["beams_tried"] == 2
    assert rows[4]["em"] is None and rows[4]["answer_text"] == "Somebody | Dee One"
    # the CSV logger got the same numbers
    with open(Path(trainer.log_dir) / "metrics.csv", encoding="utf-8") as fh:
        logged = list(csv.DictReader(fh))[-1]
    assert float(logged["val/f1"]) == pytest.approx(EXPECTED["f1"], abs=1e-6)
    assert float(logged["val/em"]) == pytest.approx(0.5)


def test_test_stage_num_return_sequences_and_explicit_dir(store_dir: Path, tmp_path: Path) -> None:
    callback = ExecutionGuidedEval(
        str(store_dir),
        num_beams=4,
        num_return_sequences=1,
        workers=1,
        predictions_dir=str(tmp_path / "preds"),
    )
    trainer = make_trainer(tmp_path, callback)
    out = trainer.test(FakeGenerator(), datamodule=TinyDataModule(batch_size=3))[0]
    assert "val/f1" not in out and set(out) >= {
        "test/f1",
        "test/hit1",
        "test/executable",
        "test/fallback_rate",
    }
    rows = read_rows(tmp_path / "preds" / "test_predictions_epoch0.jsonl")
    assert len(rows) == 7 and all(r["num_beams"] == 1 for r in rows)
    assert rows[6]["fallback"] and rows[6]["answers"] == ["m.b"]  # "Beta" by name: only EMPTY was generated


def test_without_lf_generation_every_prediction_is_the_answer_text(store_dir: Path, tmp_path: Path) -> None:
    """CoQ's "w/o LF generation" ablation: no beam search at all, the answer texts are the predictions."""
    callback = ExecutionGuidedEval(
        str(store_dir), num_beams=4, workers=1, lf_generation=False, predictions_dir=str(tmp_path / "p")
    )
    model = FakeGenerator()
    out = make_trainer(tmp_path, callback).test(model, datamodule=TinyDataModule(batch_size=3))[0]
    assert model.lf_calls == [] and float(out["test/fallback_rate"]) == 1.0 and float(out["test/executable"]) == 0.0
    rows = read_rows(tmp_path / "p" / "test_predictions_epoch0.jsonl")
    assert all(r["beams"] == [] and r["fallback"] for r in rows)
    assert rows[6]["answers"] == ["m.b"]  # the answer text "Beta", mapped to its KB id by name


def test_test_stage_times_its_parts_on_rank_zero_only_in_the_logger(store_dir: Path, tmp_path: Path) -> None:
    callback = ExecutionGuidedEval(str(store_dir), num_beams=4, workers=1, predictions_dir=str(tmp_path / "p"))
    trainer = make_trainer(tmp_path, callback)
    out = trainer.test(FakeGenerator(), datamodule=TinyDataModule(batch_size=3))[0]
    timing = callback.last_timing
    assert timing["questions"] == 7 and isinstance(timing["questions_per_s"], float)  # durations: benchmarks/
    parts = ("time_generate_s", "time_denormalise_s", "time_execute_s", "time_bookkeeping_s")
    assert all(timing[k] >= 0 for k in parts) and sum(timing[k] for k in parts) <= timing["time_total_s"]
    assert not any(k.startswith("test/time") or k == "test/questions_per_s" for k in out)  # not a synced metric
    with open(Path(trainer.log_dir) / "metrics.csv", encoding="utf-8") as fh:
        logged = {k: v for row in csv.DictReader(fh) for k, v in row.items() if v}
    assert float(logged["test/questions_per_s"]) == pytest.approx(timing["questions_per_s"])
    rows = read_rows(tmp_path / "p" / "test_predictions_epoch0.jsonl")
    assert not any("time" in key for r in rows for key in r)  # rows stay equal across DDP and one process


def test_stages_select_what_runs(store_dir: Path, tmp_path: Path) -> None:
    callback = ExecutionGuidedEval(str(store_dir), stages=["test"])
    model = FakeGenerator()
    out = make_trainer(tmp_path, callback).validate(model, datamodule=TinyDataModule())[0]
    assert out == {} and model.lf_calls == [] and not list(tmp_path.rglob("*.jsonl"))
    with pytest.raises(ValueError, match="unknown stages"):
        ExecutionGuidedEval(str(store_dir), stages=["valid"])
    with pytest.raises(ValueError, match="num_return_sequences"):
        ExecutionGuidedEval(str(store_dir), num_beams=2, num_return_sequences=3)


def test_fit_skips_files_in_sanity_check_and_resets_per_epoch(store_dir: Path, tmp_path: Path) -> None:
    callback = ExecutionGuidedEval(str(store_dir), num_beams=4)
    trainer = make_trainer(tmp_path, callback, max_epochs=2, limit_train_batches=1, num_sanity_val_steps=1)
    trainer.fit(FakeGenerator(), datamodule=TinyDataModule())
    files = sorted(p.name for p in Path(trainer.log_dir).glob("*.jsonl"))
    assert files == ["val_predictions_epoch0.jsonl", "val_predictions_epoch1.jsonl"]
    for name in files:
        check_rows(read_rows(Path(trainer.log_dir) / name))  # each epoch complete, nothing carried over
    assert trainer.callback_metrics["val/f1"].item() == pytest.approx(EXPECTED["f1"], abs=1e-6)
    assert callback.kb is None  # torn down


def test_missing_datamodule_is_a_clear_error(store_dir: Path, tmp_path: Path) -> None:
    dm = TinyDataModule()
    trainer = make_trainer(tmp_path, ExecutionGuidedEval(str(store_dir)))
    with pytest.raises(RuntimeError, match=r"examples\(split\)"):
        trainer.validate(FakeGenerator(), dataloaders=dm.val_dataloader())


# -- predict --------------------------------------------------------------------------------
@pytest.mark.parametrize("from_outputs", [False, True])
def test_prediction_writer(store_dir: Path, tmp_path: Path, from_outputs: bool) -> None:
    writer = PredictionWriter(str(store_dir), num_beams=4, predictions_dir=str(tmp_path / "p"))
    model = FakeGenerator(predict_returns_outputs=from_outputs)
    make_trainer(tmp_path, writer).predict(model, datamodule=TinyDataModule())
    check_rows(read_rows(tmp_path / "p" / "predict_predictions_epoch0.jsonl"))
    assert (model.lf_calls == []) == from_outputs  # outputs with "beams" are used as they are


# -- W&B offline ----------------------------------------------------------------------------
def test_wandb_offline_run_contains_val_metrics(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightning.pytorch.loggers import WandbLogger

    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger(project="kbqa-test", save_dir=str(tmp_path), offline=True)
    callback = ExecutionGuidedEval(str(store_dir), num_beams=4, log_table_rows=3)
    trainer = make_trainer(tmp_path, callback, logger=logger)
    trainer.validate(FakeGenerator(), datamodule=TinyDataModule())
    run_dir = Path(logger.experiment.dir).parent
    wandb = pytest.importorskip("wandb", reason="the wandb extra is not installed (pip install kbqa_lit[wandb])")

    wandb.finish()
    assert callback.last_path == tmp_path / "val_predictions_epoch0.jsonl"  # WandbLogger: log_dir = save_dir
    assert run_dir.name.startswith("offline-run-") and list(run_dir.glob("run-*.wandb"))
    wandb_bin = Path(sys.executable).with_name("wandb")
    res = subprocess.run(
        [str(wandb_bin), "leet", "inspect", "--summary", "--json", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)["summary"]
    for key, value in EXPECTED.items():
        assert summary[f"val/{key}"] == pytest.approx(value, abs=1e-6), key
    table = summary["val/predictions"]
    assert table["_type"] == "table-file" and (table["nrows"], table["ncols"]) == (3, 12)


# -- DDP ------------------------------------------------------------------------------------
def _run_job(store_dir: Path, out: Path, devices: int, sampler: str) -> list[dict[str, Any]]:
    env = dict(os.environ, WANDB_MODE="offline", PYTHONWARNINGS="ignore")
    args = ["--store", str(store_dir), "--out", str(out), "--devices", str(devices), "--sampler", sampler]
    res = subprocess.run(
        [sys.executable, str(DOUBLES), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=out.parent,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(devices)]


@pytest.fixture(scope="module")
def one_process(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference: the same job script on one process."""
    (one,) = _run_job(store_dir, tmp_path_factory.mktemp("one") / "out", 1, "unrepeated")
    return one


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["unrepeated", "lightning"])
def test_ddp_two_processes_equal_one_process(
    store_dir: Path, tmp_path: Path, sampler: str, one_process: dict[str, Any]
) -> None:
    one = one_process
    two = _run_job(store_dir, tmp_path / "two", 2, sampler)
    assert [r["world_size"] for r in two] == [2, 2]
    # Lightning's DistributedSampler pads 7 questions to 8: one is seen twice and dropped again
    assert [r["duplicates"] for r in two] == ([1, 1] if sampler == "lightning" else [0, 0])
    rows_one = read_rows(Path(one["path"]))
    rows_two = read_rows(Path(two[0]["path"]))
    assert Path(two[0]["path"]).parent == Path(two[0]["log_dir"])
    check_rows(rows_one)
    assert rows_two == rows_one  # one complete file, identical rows
    assert len(list((tmp_path / "two").rglob("*.jsonl"))) == 1
    for key, value in EXPECTED.items():
        assert one["metrics"][key] == pytest.approx(value, abs=1e-9)
        for rank in two:  # every rank logged the same synced value
            assert rank["metrics"][key] == pytest.approx(value, abs=1e-9), (rank["rank"], key)
            assert rank["logged"][f"val/{key}"] == pytest.approx(value, abs=1e-6), (rank["rank"], key)
