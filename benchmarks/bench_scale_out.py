"""Scale-out on the CPU: validation and training epochs on 1 process vs 2 (DDP, DeepSpeed ZeRO-2).

Every run is a ``python -m kbqa_lit fit|validate`` subprocess on the synthetic world (built in a temp
folder); :class:`PhaseTimer` (this module, on ``PYTHONPATH``) records the wall time of each training
and validation epoch on global rank 0.

- validation: the quickstart (150 dev questions, 5 beams, execution-guided against the embedded
  store) from a checkpoint (``--ckpt``; default: a fresh 3-epoch fit of the quickstart model), on
  1 process and with ``configs/trainer/ddp.yaml`` on 2 CPU processes; the metrics must agree.
- training: one epoch of the quickstart's T5 (400 questions, batch 16) and of TFS S1's tiny-LLaMA
  LoRA (configs/tfs/base.yaml + s1.yaml: 400 rows, batch 8) on 1 process, DDP on 2 processes and ZeRO-2 on 2
  processes (``configs/trainer/deepspeed_cpu_stage_2.yaml``; skipped without deepspeed). Median of
  the epochs after the first.

    python benchmarks/bench_scale_out.py [--ckpt outputs/quickstart/checkpoints/last.ckpt] [--epochs 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lightning as L
import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
TIMES_ENV = "KBQA_BENCH_TIMES"
TIMER = "bench_scale_out.PhaseTimer"
METRICS = ("val/f1", "val/hit1", "val/hit1_any", "val/em", "val/executable", "val/fallback_rate")


class PhaseTimer(L.Callback):
    """Write the wall time of every training and validation epoch to ``$KBQA_BENCH_TIMES`` (rank 0)."""

    def __init__(self) -> None:
        super().__init__()
        self.times: dict[str, list[float]] = {"train": [], "val": []}
        self._start: dict[str, float] = {}

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._start["train"] = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.times["train"].append(time.perf_counter() - self._start["train"])
        self._dump(trainer)

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._start["val"] = time.perf_counter()

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        trainer.strategy.barrier("bench_val_end")  # the slowest rank decides
        self.times["val"].append(time.perf_counter() - self._start["val"])
        self._dump(trainer)

    def _dump(self, trainer: L.Trainer) -> None:
        path = os.environ.get(TIMES_ENV)
        if path and trainer.is_global_zero:
            Path(path).write_text(json.dumps(self.times), encoding="utf-8")


def kbqa(args: list[str], log: Path, times: Path) -> tuple[float, dict[str, list[float]]]:
    """Run ``python -m kbqa_lit ARGS``; return its wall time and the epoch times it recorded."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", WANDB_MODE="offline", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), *filter(None, [env.get("PYTHONPATH")])])
    env[TIMES_ENV] = str(times)
    env.setdefault("TORCH_EXTENSIONS_DIR", str(REPO / ".cache" / "torch_extensions"))
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.run([sys.executable, "-m", "kbqa_lit", *args], cwd=REPO, env=env, stdout=out, stderr=out)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: kbqa {' '.join(args)}\n{log.read_text()[-3000:]}")
    return wall, json.loads(times.read_text()) if times.is_file() else {}


def quickstart_fragment(path: Path, tmp: Path, name: str, **trainer: Any) -> Path:
    """Quickstart on the temp world and store, a CSV log and predictions under ``tmp/name``."""
    root = tmp / name
    callbacks = [
        {"class_path": TIMER},
        {
            "class_path": "kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval",
            "init_args": {
                "store": str(tmp / "kb"),
                "build_from": [str(tmp / "world" / "kb.nt")],
                "num_beams": 5,
                "workers": 1,
                "timeout": 10.0,
                "predictions_dir": str(root / "predictions"),
            },
        },
    ]
    doc = {
        "data": {"init_args": {"data_dir": str(tmp / "world")}},
        "trainer": {
            "default_root_dir": str(root),
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": str(root)}},
            "callbacks": callbacks,
            **trainer,
        },
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def logged_metrics(root: Path) -> dict[str, float]:
    import csv

    out: dict[str, float] = {}
    for path in sorted(root.glob("*/version_*/metrics.csv")):
        for row in csv.DictReader(path.open()):
            out.update({k: round(float(v), 6) for k, v in row.items() if k in METRICS and v})
    return out


def ckpt_missing(path: str | None) -> bool:
    return path is None or not Path(path).exists()


def steady(times: list[float]) -> float:
    """Median epoch time, the first epoch (warm-up, compilation) left out when there are more."""
    return statistics.median(times[1:] if len(times) > 1 else times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ckpt", help="quickstart checkpoint to validate (default: train one for 3 epochs)")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs per measured fit")
    parser.add_argument("--skip-training", action="store_true", help="only the validation part (needs --ckpt)")
    args = parser.parse_args()
    has_ds = importlib.util.find_spec("deepspeed") is not None
    two = ["--trainer.devices", "2", "--trainer.accelerator", "cpu"]
    strategies = {
        "1 process": [],
        "DDP, 2 processes": ["--config", str(CONFIGS / "trainer" / "ddp.yaml"), *two],
    }
    if has_ds:
        strategies["ZeRO-2, 2 processes"] = ["--config", str(CONFIGS / "trainer" / "deepspeed_cpu_stage_2.yaml")]
    with tempfile.TemporaryDirectory(prefix="bench_scale_out_") as tmp_name:
        tmp = Path(tmp_name)
        quick = ["--config", str(CONFIGS / "quickstart.yaml")]

        if args.skip_training and ckpt_missing(args.ckpt):
            raise SystemExit("--skip-training needs --ckpt")
        print(f"== training: one epoch ({args.epochs} epochs, median after the first), no validation")
        print(f"{'model':<34} {'strategy':<22} {'epoch':>8} {'run (wall)':>11}")
        ckpt = args.ckpt
        for label, extra in strategies.items() if not args.skip_training else ():
            name = f"fit_t5_{label.split(',')[0].replace(' ', '_')}"
            frag = quickstart_fragment(tmp / f"{name}.yaml", tmp, name, limit_val_batches=0, check_val_every_n_epoch=1)
            wall, times = kbqa(
                ["fit", *quick, "--config", str(frag), "--trainer.max_epochs", str(args.epochs), *extra],
                tmp / f"{name}.log",
                tmp / f"{name}.json",
            )
            print(f"{'quickstart T5 (400 q, batch 16)':<34} {label:<22} {steady(times['train']):>7.2f}s {wall:>10.1f}s")
            if ckpt is None and label == "1 process":
                ckpt = str(next((tmp / name).glob("**/*.ckpt")))
        s1 = ["--config", str(CONFIGS / "tfs" / "base.yaml"), "--config", str(CONFIGS / "tfs" / "s1.yaml")]
        for label, extra in strategies.items() if not args.skip_training else ():
            name = f"fit_s1_{label.split(',')[0].replace(' ', '_')}"
            frag = tmp / f"{name}.yaml"
            trainer = {"default_root_dir": str(tmp / name), "logger": False, "enable_checkpointing": False}
            trainer.update(limit_val_batches=0, enable_progress_bar=False, callbacks=[{"class_path": TIMER}])
            doc = {"data": {"init_args": {"data_dir": str(tmp / "world")}}, "trainer": trainer}
            frag.write_text(yaml.safe_dump(doc), encoding="utf-8")
            wall, times = kbqa(
                ["fit", *s1, "--config", str(frag), "--trainer.max_epochs", str(args.epochs), *extra],
                tmp / f"{name}.log",
                tmp / f"{name}.json",
            )
            row = f"{'TFS S1 tiny-LLaMA LoRA (400, b 8)':<34} {label:<22}"
            print(f"{row} {steady(times['train']):>7.2f}s {wall:>10.1f}s")

        print(f"\n== validation: quickstart dev (150 questions, 5 beams), checkpoint {ckpt}")
        results = {}
        for label, extra in list(strategies.items())[:2]:
            name = f"val_{label.split(',')[0].replace(' ', '_')}"
            frag = quickstart_fragment(tmp / f"{name}.yaml", tmp, name)
            wall, times = kbqa(
                ["validate", *quick, "--config", str(frag), "--ckpt_path", str(ckpt), *extra],
                tmp / f"{name}.log",
                tmp / f"{name}.json",
            )
            results[label] = (times["val"][-1], wall, logged_metrics(tmp / name))
            print(f"{label:<22} validation epoch {times['val'][-1]:7.2f}s   run (wall) {wall:6.1f}s")
        (one_val, one_wall, one_m), (ddp_val, ddp_wall, ddp_m) = results.values()
        print(f"speed-up of the validation epoch: {one_val / ddp_val:.2f}x (whole run: {one_wall / ddp_wall:.2f}x)")
        print(f"metrics equal: {one_m == ddp_m}  {one_m}")


if __name__ == "__main__":
    main()
