"""``ThroughputProbe``: optimiser steps per second, tokens per second and peak memory of a run, as JSON.

Lightning's own monitors log to the loggers; this callback writes one small JSON file that a
benchmark (``benchmarks/gpu_check.py``) or a user's script reads back after ``kbqa fit`` or
``kbqa test``:

- **training** (``"fit"``): the wall time of each training batch after ``warmup_steps`` batches
  (the device synchronised at both ends, so asynchronous CUDA work is counted), optimiser steps/s,
  samples/s and tokens/s (the non-padding tokens of ``attention_mask``: the whole sequence of a
  causal LM, the encoder input of a T5), the peak GPU memory allocated and reserved during the
  training batches (``torch.cuda.max_memory_*`` after a reset at the first batch), and the host
  memory (the process's peak resident set since it started, which includes loading the model,
  and the resident set at the end);
- **evaluation** (``"test"``, ``"validate"``, ``"predict"``): the epoch's wall time, batches, samples
  and the peak GPU memory during it.

The file is rewritten atomically after each stage, one key per stage, so a test run after a fit
run in the same process adds its key. Only global rank zero writes.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import lightning as L
import torch

from kbqa_lit.atomic import write_json_atomic
from kbqa_lit.pipelines.batch_hooks import EvalBatchCallback

GIB = 1024**3


def host_memory_gib() -> dict[str, float]:
    """The process's peak resident set since it started and its resident set now, in GiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    peak_bytes = peak if sys.platform == "darwin" else peak * 1024
    now = 0
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            now = int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    # the kernel updates ru_maxrss lazily: a resident set read just now may exceed it, and a peak is never below it
    return {"host_peak_rss_gib": round(max(peak_bytes, now) / GIB, 3), "host_rss_gib": round(now / GIB, 3)}


def _count(batch: Any) -> tuple[int, int, int]:
    """(samples, non-padding tokens, padded tokens) of a batch with ``attention_mask`` (or ``input_ids``)."""
    if not isinstance(batch, dict):
        return 0, 0, 0
    mask = batch.get("attention_mask")
    if isinstance(mask, torch.Tensor):
        return int(mask.shape[0]), int(mask.sum().item()), int(mask.numel())
    ids = batch.get("input_ids")
    if isinstance(ids, torch.Tensor):
        return int(ids.shape[0]), int(ids.numel()), int(ids.numel())
    return 0, 0, 0


class ThroughputProbe(EvalBatchCallback):
    """Measure a run's speed and memory and write them to a JSON file.

    Args:
        out_file: The JSON file (one key per stage: ``fit``, ``test``...); created with its folder.
        warmup_steps: Training batches left out of the timing (CUDA kernels, allocator, compilation).
    """

    def __init__(self, out_file: str, warmup_steps: int = 3) -> None:
        super().__init__()
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        self.out_file = Path(out_file)
        self.warmup_steps = int(warmup_steps)
        self._train: dict[str, float] = {}
        self._batch_start = 0.0
        self._eval: dict[str, float] = {}

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _sync(pl_module: L.LightningModule) -> None:
        if pl_module.device.type == "cuda":
            torch.cuda.synchronize(pl_module.device)

    @staticmethod
    def _gpu_peak(pl_module: L.LightningModule) -> dict[str, float]:
        if pl_module.device.type != "cuda":
            return {}
        return {
            "gpu_peak_allocated_gib": round(torch.cuda.max_memory_allocated(pl_module.device) / GIB, 3),
            "gpu_peak_reserved_gib": round(torch.cuda.max_memory_reserved(pl_module.device) / GIB, 3),
        }

    @staticmethod
    def _reset_gpu_peak(pl_module: L.LightningModule) -> None:
        if pl_module.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(pl_module.device)

    def _write(self, trainer: L.Trainer, stage: str, record: dict[str, Any]) -> None:
        if not trainer.is_global_zero:
            return
        payload: dict[str, Any] = {}
        if self.out_file.is_file():
            try:
                payload = json.loads(self.out_file.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                payload = {}
        payload[stage] = record
        write_json_atomic(self.out_file, payload)

    # ------------------------------------------------------------------ training

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Start counting (peak GPU memory is reset at the first training batch)."""
        self._train = {"batches": 0, "timed_batches": 0, "seconds": 0.0, "samples": 0, "tokens": 0, "padded": 0}

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Synchronise the device and start the batch's clock."""
        if self._train.get("batches", 0) == 0:
            self._reset_gpu_peak(pl_module)
        self._sync(pl_module)
        self._batch_start = time.perf_counter()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Stop the batch's clock (after the warm-up batches) and count its samples and tokens."""
        self._sync(pl_module)
        elapsed = time.perf_counter() - self._batch_start
        self._train["batches"] += 1
        if self._train["batches"] <= self.warmup_steps:
            return
        samples, tokens, padded = _count(batch)
        self._train["timed_batches"] += 1
        self._train["seconds"] += elapsed
        self._train["samples"] += samples
        self._train["tokens"] += tokens
        self._train["padded"] += padded

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Write the ``fit`` record."""
        t = self._train
        seconds = t.get("seconds", 0.0)
        record: dict[str, Any] = {
            "batches": int(t.get("batches", 0)),
            "timed_batches": int(t.get("timed_batches", 0)),
            "optimizer_steps": int(trainer.global_step),
            "seconds": round(seconds, 4),
            "batches_per_s": round(t["timed_batches"] / seconds, 4) if seconds > 0 else None,
            "samples_per_s": round(t["samples"] / seconds, 3) if seconds > 0 else None,
            "tokens_per_s": round(t["tokens"] / seconds, 1) if seconds > 0 else None,
            "tokens_per_batch": round(t["tokens"] / t["timed_batches"], 1) if t.get("timed_batches") else None,
            "padded_tokens_per_batch": round(t["padded"] / t["timed_batches"], 1) if t.get("timed_batches") else None,
            "device": str(pl_module.device),
            "strategy": type(trainer.strategy).__name__,
            "precision": str(trainer.precision),
            "trainable_parameters": int(sum(p.numel() for p in pl_module.parameters() if p.requires_grad)),
            "loss": _last_loss(trainer),
        }
        record.update(self._gpu_peak(pl_module))
        record.update(host_memory_gib())
        self._write(trainer, "fit", record)

    # ------------------------------------------------------------------ evaluation

    def _eval_start(self, pl_module: L.LightningModule) -> None:
        self._reset_gpu_peak(pl_module)
        self._sync(pl_module)
        self._eval = {"start": time.perf_counter(), "batches": 0, "samples": 0}

    def _eval_batch(self, batch: Any) -> None:
        if self._eval:
            self._eval["batches"] += 1
            self._eval["samples"] += _count(batch)[0]

    def _eval_end(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if not self._eval:
            return
        self._sync(pl_module)
        seconds = time.perf_counter() - self._eval["start"]
        record: dict[str, Any] = {
            "seconds": round(seconds, 4),
            "batches": int(self._eval["batches"]),
            "samples": int(self._eval["samples"]),
            "samples_per_s": round(self._eval["samples"] / seconds, 3) if seconds > 0 else None,
            "device": str(pl_module.device),
        }
        record.update(self._gpu_peak(pl_module))
        record.update(host_memory_gib())
        self._eval = {}
        self._write(trainer, stage, record)

    def eval_batch_end(
        self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any
    ) -> None:
        """Count the test or prediction batch, and a validation batch of a ``kbqa validate`` run."""
        if stage != "validate" or trainer.state.fn == "validate":
            self._eval_batch(batch)

    def eval_epoch_start(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Start the epoch's clock (validation only of a ``kbqa validate`` run, not inside ``fit``)."""
        if stage != "validate" or (not trainer.training and trainer.state.fn == "validate"):
            self._eval_start(pl_module)

    def eval_epoch_end(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Write the stage's record (after the callbacks listed before this one ended their epoch)."""
        if stage != "validate" or trainer.state.fn == "validate":
            self._eval_end(trainer, pl_module, stage)


def _last_loss(trainer: L.Trainer) -> float | None:
    for key in ("train/loss_step", "train/loss", "train_loss"):
        value = trainer.callback_metrics.get(key)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            return round(float(value), 5)
    return None


__all__ = ["ThroughputProbe", "host_memory_gib"]
