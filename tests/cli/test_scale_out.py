"""Scale-out through the CLI: the trainer YAMLs, exact evaluation under DDP, exact resume after a kill.

Every run is ``python -m kbqa_lit fit|validate --config configs/quickstart.yaml --config <fragment>`` in a
subprocess, on a 33-question slice of the synthetic world's dev split (training on its first 32).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from jsonargparse import ArgumentParser
from lightning.pytorch.strategies import FSDPStrategy, Strategy
from transformers.models.llama.modeling_llama import LlamaDecoderLayer
from transformers.models.t5.modeling_t5 import T5Block

from tests.cli.scale_out_helpers import KILL_ENV, KILLED_EXIT

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
QUICKSTART = REPO / "configs" / "quickstart.yaml"
TRAINER = REPO / "configs" / "trainer"
#: Metrics that must be equal on 1 and 2 processes. Left out: ``exec_cache_hit_rate`` (each process has its
#: own cache) and ``val/loss`` (a mean of per-batch token means: it depends on how questions are batched).
EXACT = ("val/f1", "val/hit1", "val/hit1_any", "val/em", "val/executable", "val/fallback_rate")
TINY_T5 = {"d_model": 64, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4, "d_kv": 16}


# ---------------------------------------------------------------------------------------------- trainer YAMLs


def _strategy(path: Path) -> Any:
    doc = yaml.safe_load(path.read_text())
    parser = ArgumentParser()
    parser.add_argument("--strategy", type=str | Strategy)
    return parser.instantiate(parser.parse_object({"strategy": doc["trainer"]["strategy"]})).strategy


@pytest.mark.parametrize(
    ("name", "strategy"),
    [("deepspeed_stage_2.yaml", "deepspeed_stage_2"), ("deepspeed_stage_3_offload.yaml", "deepspeed_stage_3_offload")],
)
def test_deepspeed_gpu_yamls_name_lightnings_stock_strategies(name: str, strategy: str) -> None:
    trainer = yaml.safe_load((TRAINER / name).read_text())["trainer"]
    assert trainer == {"accelerator": "gpu", "devices": "auto", "strategy": strategy, "precision": "bf16-mixed"}
    assert (TRAINER / name).read_text().startswith("# ")  # the header says when to use it


def test_fsdp_yaml_wraps_t5_and_llama_blocks() -> None:
    strategy = _strategy(TRAINER / "fsdp.yaml")
    assert isinstance(strategy, FSDPStrategy)
    policy = strategy.kwargs["auto_wrap_policy"]
    assert policy._module_classes == {T5Block, LlamaDecoderLayer}
    assert strategy.kwargs["use_orig_params"] is True  # LoRA: frozen and trained weights share a unit
    assert yaml.safe_load((TRAINER / "fsdp.yaml").read_text())["trainer"]["precision"] == "bf16-mixed"


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="deepspeed is not installed")
def test_deepspeed_cpu_yaml_builds_the_cpu_strategy() -> None:
    from kbqa_lit.strategies import DeepSpeedCPUStrategy

    strategy = _strategy(TRAINER / "deepspeed_cpu_stage_2.yaml")
    assert isinstance(strategy, DeepSpeedCPUStrategy)
    assert strategy.config["zero_optimization"]["stage"] == 2
    trainer = yaml.safe_load((TRAINER / "deepspeed_cpu_stage_2.yaml").read_text())["trainer"]
    assert (trainer["accelerator"], trainer["devices"], trainer["precision"]) == ("cpu", 2, "32-true")


# ---------------------------------------------------------------------------------------------- runs


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic world, its store, and a 33-question dev slice (train.jsonl: its first 32)."""
    from kbqa_lit.data.synthetic import build_world
    from kbqa_lit.kb.store.loaders import build_store

    root = tmp_path_factory.mktemp("scale_out")
    build_world(root / "world", seed=0, size="small")
    build_store(str(root / "kb"), [str(root / "world" / "kb.nt")], "nt", overwrite=True)
    dev = (root / "world" / "dev.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "slice").mkdir()
    (root / "slice" / "dev.jsonl").write_text("".join(dev[:33]), encoding="utf-8")
    (root / "slice" / "train.jsonl").write_text("".join(dev[:32]), encoding="utf-8")
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    env.update(HF_HUB_OFFLINE="1", WANDB_MODE="offline", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    env.pop(KILL_ENV, None)
    return env


def kbqa(args: list[str], log: Path, expect: int = 0, **env: str) -> None:
    """Run ``python -m kbqa_lit ARGS`` (stdout and stderr to ``log``) and check its exit status."""
    with log.open("w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "kbqa_lit", *args],
            cwd=REPO,
            env={**_env(), **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    assert proc.returncode == expect, log.read_text()[-4000:]


def fragment(
    path: Path, base: Path, root: Path, *, model: dict[str, Any], trainer: dict[str, Any], **data: Any
) -> Path:
    """A YAML to put on top of quickstart.yaml: the slice, the store, a run folder ``root``."""
    callbacks: list[dict[str, Any]] = [
        {
            "class_path": "kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval",
            "init_args": {
                "store": str(base / "kb"),
                "build_from": None,
                "num_beams": 2,
                "max_new_tokens": 48,
                "workers": 1,
                "timeout": 10.0,
                "predictions_dir": str(root / "predictions"),
            },
        }
    ]
    every = trainer.pop("checkpoint_every_n_train_steps", None)
    if every is not None:
        callbacks += [
            {
                "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                "init_args": {
                    "dirpath": str(root / "checkpoints"),
                    "monitor": None,
                    "mode": "max",
                    "save_last": True,
                    "save_top_k": 0,
                    "every_n_train_steps": every,
                },
            },
            {"class_path": "scale_out_helpers.KillAtStep"},
        ]
    doc = {
        "model": {"init_args": {"model_config": model, "warmup_steps": 5}},
        "data": {
            "init_args": {
                "data_dir": str(base / "slice"),
                "synthetic_seed": None,
                "vocab_size": 600,
                "eval_batch_size": 16,
                "linking_store": str(base / "kb"),
                "linking_build_from": None,
                **data,
            }
        },
        "trainer": {
            "default_root_dir": str(root),
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "log_every_n_steps": 1,
            "logger": {
                "class_path": "lightning.pytorch.loggers.CSVLogger",
                "init_args": {"save_dir": str(root), "name": "logs"},
            },
            "callbacks": callbacks,
            **trainer,
        },
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def csv_rows(root: Path) -> list[dict[str, str]]:
    """Rows of the newest CSV log of a run folder (a resumed run logs into a new version)."""
    versions = sorted((root / "logs").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[1]))
    assert versions, f"no CSV log under {root}"
    return list(csv.DictReader(versions[-1].open()))


def logged(rows: list[dict[str, str]], key: str) -> dict[int, float]:
    """``step → value`` of one logged metric."""
    return {int(r["step"]): float(r[key]) for r in rows if r.get(key)}


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------- DDP exactness


@pytest.fixture(scope="module")
def trained_checkpoint(slice_dir: Path) -> Path:
    """A tiny T5 that has memorised the 32 training questions (f1 ≈ 0.95; some beams execute, some fall back)."""
    root = slice_dir / "trained"
    cfg = fragment(
        slice_dir / "train.yaml",
        slice_dir,
        root,
        model={**TINY_T5, "dropout_rate": 0.0},
        trainer={"max_epochs": 40, "limit_val_batches": 0, "checkpoint_every_n_train_steps": 80},  # 2 steps/epoch
        batch_size=16,
    )
    args = ["fit", "--config", str(QUICKSTART), "--config", str(cfg), "--model.init_args.learning_rate", "0.01"]
    kbqa(args, root.with_suffix(".log"))
    ckpt = root / "checkpoints" / "last.ckpt"
    assert ckpt.is_file(), "fit wrote no checkpoint"
    return ckpt


@pytest.mark.slow  # three `kbqa` subprocesses, one of them on 2 processes (≈ 60 s)
def test_ddp_validation_equals_one_process(slice_dir: Path, trained_checkpoint: Path) -> None:
    results = {}
    for name, extra in {
        "one": [],
        "ddp": ["--trainer.devices", "2", "--trainer.strategy", "ddp", "--trainer.accelerator", "cpu"],
    }.items():
        root = slice_dir / f"validate_{name}"
        cfg = fragment(
            slice_dir / f"validate_{name}.yaml", slice_dir, root, model={**TINY_T5, "dropout_rate": 0.0}, trainer={}
        )
        args = ["validate", "--config", str(QUICKSTART), "--config", str(cfg), "--ckpt_path", str(trained_checkpoint)]
        kbqa([*args, *extra], root.with_suffix(".log"))
        files = sorted((root / "predictions").glob("val_predictions_epoch*.jsonl"))
        assert len(files) == 1, files  # ONE prediction file, written by rank 0
        metrics = {k: v for row in csv_rows(root) for k, v in row.items() if k in EXACT and v}
        results[name] = (jsonl(files[0]), {k: float(v) for k, v in metrics.items()})

    rows_one, metrics_one = results["one"]
    rows_ddp, metrics_ddp = results["ddp"]
    assert [r["index"] for r in rows_ddp] == list(range(33))  # complete, every question once, in order
    assert rows_ddp == rows_one  # same beams, chosen beam, SPARQL, answers, scores
    assert set(metrics_one) == set(EXACT) and metrics_ddp == metrics_one
    # the checkpoint is good enough for the metrics to mean something: executed beams and fallbacks both occur
    assert metrics_one["val/f1"] > 0.3 and 0 < metrics_one["val/executable"] < 1, metrics_one


# ---------------------------------------------------------------------------------------------- resume


@pytest.mark.slow  # three `kbqa fit` subprocesses (≈ 60 s)
def test_resume_after_a_kill_mid_epoch_ends_like_an_uninterrupted_run(slice_dir: Path) -> None:
    """4 steps per epoch, 6 epochs (24 steps), validation after epochs 1, 3, 5, last.ckpt every 3 steps, dropout 0.1.

    The killed run dies after step 11 (epoch 2); its last checkpoint is from step 9, one batch into
    epoch 2. Exactness needs, besides the weights, the optimiser and the scheduler (Lightning): the
    fit-loop counters (Lightning), the LengthBucketSampler order of epoch 2 (rebuilt from
    PL_GLOBAL_SEED + epoch), the position in that epoch and the random state that dropout draws from
    (the GenerationDataModule's ResumableDataLoader state, saved in the checkpoint).
    """
    roots = {name: slice_dir / f"resume_{name}" for name in ("full", "resumed")}
    configs = {
        name: fragment(
            slice_dir / f"resume_{name}.yaml",
            slice_dir,
            root,
            model={"d_model": 32, "d_ff": 64, "num_layers": 1, "num_decoder_layers": 1, "num_heads": 2, "d_kv": 16},
            trainer={"max_epochs": 6, "check_val_every_n_epoch": 2, "checkpoint_every_n_train_steps": 3},
            batch_size=8,
        )
        for name, root in roots.items()
    }

    def fit(name: str, log: str, *extra: str, **env: str) -> None:
        kbqa(["fit", "--config", str(QUICKSTART), "--config", str(configs[name]), *extra], roots[name] / log, **env)

    roots["full"].mkdir()
    roots["resumed"].mkdir()
    fit("full", "fit.log")
    fit("resumed", "killed.log", expect=KILLED_EXIT, **{KILL_ENV: "11"})
    killed = torch.load(roots["resumed"] / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert killed["global_step"] == 9 and killed["epoch"] == 2  # a mid-epoch checkpoint
    loader_state = killed["GenerationDataModule"]["train_loader"]
    assert (loader_state["epoch"], loader_state["batches"]) == (2, 1)
    fit("resumed", "resume.log", "--ckpt_path", "last")
    assert "not resumable" not in (roots["resumed"] / "resume.log").read_text()

    full = torch.load(roots["full"] / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    resumed = torch.load(roots["resumed"] / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert full["global_step"] == resumed["global_step"] == 24
    for key, value in full["state_dict"].items():
        torch.testing.assert_close(resumed["state_dict"][key], value, rtol=0, atol=1e-6, msg=key)

    rows_full, rows_resumed = csv_rows(roots["full"]), csv_rows(roots["resumed"])
    loss_full, loss_resumed = logged(rows_full, "train/loss"), logged(rows_resumed, "train/loss")
    assert len(loss_resumed) >= 14  # the resumed run logged every step after step 9
    assert loss_resumed == pytest.approx({s: loss_full[s] for s in loss_resumed}, rel=1e-6, abs=1e-7)
    for key in (*EXACT, "val/loss"):
        values = logged(rows_resumed, key)
        assert len(values) == 2, (key, values)  # after epochs 3 and 5
        assert values == pytest.approx({s: logged(rows_full, key)[s] for s in values}, rel=1e-6, abs=1e-7), key
    for epoch in (3, 5):
        name = f"val_predictions_epoch{epoch}.jsonl"
        assert jsonl(roots["resumed"] / "predictions" / name) == jsonl(roots["full"] / "predictions" / name)
