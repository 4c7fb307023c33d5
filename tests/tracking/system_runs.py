"""Runs of the cross-system comparison (one per system × form) as ``kbqa eval --log`` writes them, made in tmp.

Each run has the config keys ``system``, ``form``, ``extensions``, ``split``, ``group`` and only summary
metrics (``test/f1``, ``test/hit1``, ``test/executable``, ``test/questions_per_s``, ``test/n`` and
``test/<level>/f1`` per generalisation level): no per-epoch history.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

LEVELS = ("iid", "compositional", "zero-shot")


def system_metrics(system: str, form: str) -> dict[str, float]:
    """Made-up but distinct scores of one system in one form (the extended form scores higher)."""
    base = {"coq": 0.4, "tfs": 0.3, "fc": 0.5, "keqing": 0.2}[system] + (0.2 if form == "extended" else 0.0)
    metrics = {
        "test/n": 30.0,
        "test/f1": round(base, 6),
        "test/hit1": round(base - 0.05, 6),
        "test/executable": 0.9,
        "test/questions_per_s": round(10 * base, 6),
    }
    for i, level in enumerate(LEVELS):
        metrics[f"test/{level}/f1"] = round(base + 0.1 - 0.1 * i, 6)
    return metrics


def system_config(system: str, form: str) -> dict[str, str]:
    """The config keys of a comparison run."""
    extensions = "constrained_decoding,path_fallback" if form == "extended" else ""
    return {"system": system, "form": form, "extensions": extensions, "split": "test", "group": "cmp"}


@contextmanager
def wandb_offline(root: Path) -> Iterator[None]:
    """W&B offline with every wandb folder under ``root`` (nothing in the home directory, no network)."""
    env = {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(root),
        "WANDB_CACHE_DIR": str(root / ".wandb_cache"),
        "WANDB_CONFIG_DIR": str(root / ".wandb_config"),
        "WANDB_DATA_DIR": str(root / ".wandb_data"),
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        yield


def log_wandb_run(root: Path, name: str, config: Mapping[str, Any], metrics: Mapping[str, float]) -> Path:
    """One W&B offline run with ``config`` and summary ``metrics`` (call inside :func:`wandb_offline`)."""
    wandb = pytest.importorskip("wandb", reason="the wandb extra is not installed (pip install kbqa_lit[wandb])")
    run = wandb.init(mode="offline", dir=str(root), project="kbqa_lit", group="cmp", name=name, config=dict(config))
    run.log(dict(metrics))
    run.summary.update(dict(metrics))
    path = Path(run.dir).parent
    run.finish()
    return path


def log_csv_run(
    root: Path, name: str, config: Mapping[str, Any], metrics: Mapping[str, float], mtime: float | None = None
) -> Path:
    """One CSVLogger run ``root/cmp/<name>`` with ``config`` as hyper-parameters and ``metrics`` at step 0."""
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(save_dir=str(root), name="cmp", version=name)
    logger.log_hyperparams(dict(config))
    logger.log_metrics(dict(metrics), step=0)
    logger.save()
    logger.finalize("success")
    path = Path(logger.log_dir)
    if mtime is not None:
        os.utime(path / "metrics.csv", (mtime, mtime))
    return path
