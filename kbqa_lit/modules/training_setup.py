"""Optimiser schedule and tokenizer-in-checkpoint helpers shared by the LightningModules.

Every module of the project trains with AdamW and a linear warm-up, then a linear decay to 0 over
the trainer's estimated optimiser steps (a constant rate after the warm-up when that estimate
is infinite), and stores its tokenizer's files in its checkpoints so ``load_from_checkpoint``
needs no data. The modules keep their own parameter grouping (which weights skip decay).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoTokenizer,
    PreTrainedTokenizerBase,
    get_constant_schedule_with_warmup,
    get_linear_schedule_with_warmup,
)


def warmup_schedule(
    optimizer: torch.optim.Optimizer,
    total_steps: float | int | None,
    *,
    warmup_steps: int = 0,
    warmup_ratio: float = 0.0,
    linear: bool = True,
) -> dict[str, Any]:
    """The ``configure_optimizers`` return value: ``optimizer`` with a per-step warm-up scheduler.

    Args:
        optimizer: The optimiser.
        total_steps: ``trainer.estimated_stepping_batches`` (``inf``/``None`` when unknown).
        warmup_steps: Warm-up steps; 0 uses ``warmup_ratio``.
        warmup_ratio: Warm-up as a share of ``total_steps`` (when finite).
        linear: Decay linearly to 0 after the warm-up (when ``total_steps`` is finite);
            false keeps the rate constant.
    """
    finite = total_steps is not None and math.isfinite(total_steps)
    warmup = int(warmup_steps) or (int(warmup_ratio * total_steps) if finite and warmup_ratio > 0 else 0)
    if finite and linear:
        scheduler = get_linear_schedule_with_warmup(optimizer, warmup, max(int(total_steps), warmup + 1))
    else:
        scheduler = get_constant_schedule_with_warmup(optimizer, warmup)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def tokenizer_files(tokenizer: PreTrainedTokenizerBase) -> dict[str, bytes]:
    """The files ``save_pretrained`` writes for ``tokenizer``, by name (for ``checkpoint["tokenizer_files"]``)."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        return {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file()}


def tokenizer_from_files(files: Mapping[str, bytes]) -> PreTrainedTokenizerBase:
    """Load a tokenizer back from :func:`tokenizer_files` (offline)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        return AutoTokenizer.from_pretrained(tmp, local_files_only=True)


__all__ = ["tokenizer_files", "tokenizer_from_files", "warmup_schedule"]
