"""ThroughputProbe in real Trainer runs: timed batches after the warm-up, tokens, the JSON per stage."""

from __future__ import annotations

import json
from pathlib import Path

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from kbqa_lit.callbacks.throughput import ThroughputProbe, host_memory_gib


class MaskedRows(L.LightningModule):
    """Embeds token ids and regresses their mean to 0 (enough for real optimiser steps)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return ((self.embed(batch["input_ids"]) * mask).sum(1) / mask.sum(1)).pow(2).mean()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self.loss(batch)
        self.log("train/loss", loss)
        return loss

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self.log("test/loss", self.loss(batch))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def rows(n: int, length: int = 6, real: int = 4) -> list[dict[str, torch.Tensor]]:
    mask = torch.tensor([1] * real + [0] * (length - real))
    return [{"input_ids": torch.arange(length) + i % 10, "attention_mask": mask} for i in range(n)]


def trainer(tmp_path: Path, probe: ThroughputProbe, **kwargs: object) -> L.Trainer:
    return L.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        callbacks=[probe],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        **kwargs,
    )


def test_fit_then_test_write_one_record_each(tmp_path: Path) -> None:
    out = tmp_path / "probe" / "speed.json"
    probe = ThroughputProbe(str(out), warmup_steps=2)
    model = MaskedRows()
    trainer(tmp_path, probe, max_steps=5).fit(model, DataLoader(rows(40), batch_size=4))
    fit = json.loads(out.read_text())["fit"]
    assert fit["batches"] == 5 and fit["timed_batches"] == 3 and fit["optimizer_steps"] == 5
    assert fit["tokens_per_batch"] == 16.0 and fit["padded_tokens_per_batch"] == 24.0  # 4 rows x 4 real of 6
    assert fit["seconds"] > 0 and fit["tokens_per_s"] == pytest.approx(3 * 16 / fit["seconds"], rel=0.02)
    assert fit["batches_per_s"] == pytest.approx(3 / fit["seconds"], rel=0.02)
    assert fit["device"] == "cpu" and fit["trainable_parameters"] == 400 and fit["loss"] is not None
    assert "gpu_peak_allocated_gib" not in fit and fit["host_peak_rss_gib"] >= fit["host_rss_gib"] > 0
    trainer(tmp_path, probe, limit_test_batches=3).test(model, DataLoader(rows(40), batch_size=5))
    report = json.loads(out.read_text())
    assert set(report) == {"fit", "test"} and report["fit"] == fit  # the fit record is kept
    assert report["test"]["batches"] == 3 and report["test"]["samples"] == 15
    assert not list(out.parent.glob("*.tmp"))


def test_a_run_shorter_than_the_warmup_reports_no_rate(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    trainer(tmp_path, ThroughputProbe(str(out), warmup_steps=3), max_steps=2).fit(
        MaskedRows(), DataLoader(rows(8), batch_size=4)
    )
    fit = json.loads(out.read_text())["fit"]
    assert fit["timed_batches"] == 0 and fit["batches_per_s"] is None and fit["tokens_per_s"] is None


def test_bad_warmup_and_memory_helper() -> None:
    with pytest.raises(ValueError, match="warmup_steps must be >= 0"):
        ThroughputProbe("x.json", warmup_steps=-1)
    memory = host_memory_gib()
    assert memory["host_peak_rss_gib"] > 0 and memory["host_rss_gib"] > 0
