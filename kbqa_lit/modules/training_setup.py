"""Set-up shared by the LightningModules: AdamW groups, the warm-up schedule, eval mode for inference.

Every module of the project trains with AdamW and a linear warm-up, then a linear decay to 0 over
the trainer's estimated optimiser steps (a constant rate after the warm-up when that estimate
is infinite). One rule says which weights skip weight decay (:func:`decay_groups`): biases and the
weights of normalisation layers. Inference inside a module (scoring, generation) runs under
:func:`eval_mode`, which restores training mode afterwards. The tokenizer round trip through checkpoints is in
:mod:`kbqa_lit.backbones.common`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from transformers import (
    get_constant_schedule_with_warmup,
    get_linear_schedule_with_warmup,
)


@contextmanager
def eval_mode(module: nn.Module) -> Iterator[None]:
    """Run the block with ``module`` in eval mode (no dropout), then put it back in training mode if it was."""
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        if was_training:
            module.train()


def _is_norm(module: nn.Module) -> bool:
    name = type(module).__name__
    return isinstance(module, nn.LayerNorm | nn.GroupNorm) or name.endswith(("LayerNorm", "RMSNorm"))


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW parameter groups: ``weight_decay`` on weights, none on biases and normalisation weights.

    Only trainable parameters are listed, each once (tied weights are shared), in
    ``model.named_parameters()`` order.
    """
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    seen: set[int] = set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if name == "bias" or _is_norm(module) else decay).append(param)
    return [{"params": decay, "weight_decay": float(weight_decay)}, {"params": no_decay, "weight_decay": 0.0}]


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


def allow_offloaded_torch_optimizer(strategy: Any) -> bool:
    """Let DeepSpeed ZeRO offload run the module's own torch optimiser on the CPU.

    DeepSpeed refuses a client (torch) optimiser together with ``offload_optimizer`` unless its
    config says ``zero_force_ds_cpu_optimizer: false``; Lightning's strategy exposes no argument for
    it. The optimiser of a LoRA or a T5 fine-tune steps a few million CPU parameters, which torch's
    AdamW does in milliseconds, so the project keeps its AdamW (no C++ op to compile) and sets the
    flag here. Call it from ``configure_optimizers`` (DeepSpeed reads its config right after).

    Args:
        strategy: ``self.trainer.strategy`` (anything else is left alone).

    Returns:
        Whether the strategy offloads the optimiser (and the flag was set unless the config set it).
    """
    config = getattr(strategy, "config", None)
    if not isinstance(config, dict):
        return False
    zero = config.get("zero_optimization")
    offload = zero.get("offload_optimizer") if isinstance(zero, dict) else None
    if not isinstance(offload, dict) or offload.get("device") in (None, "none"):
        return False
    config.setdefault("zero_force_ds_cpu_optimizer", False)
    return True


def adamw_with_warmup(
    module: Any,
    params: Any,
    learning_rate: float,
    *,
    weight_decay: float | None = None,
    warmup_steps: int = 0,
    warmup_ratio: float = 0.0,
    linear: bool = True,
) -> dict[str, Any]:
    """Every module's ``configure_optimizers``: AdamW over ``params`` and the warm-up schedule.

    Args:
        module: The LightningModule (its trainer gives the step count and the strategy).
        params: Parameters or parameter groups (:func:`decay_groups`).
        learning_rate: Peak learning rate.
        weight_decay: AdamW's weight decay for parameters without a group value (``None``: torch's default).
        warmup_steps: Warm-up steps (see :func:`warmup_schedule`).
        warmup_ratio: Warm-up share of all steps when ``warmup_steps`` is 0.
        linear: Linear decay after the warm-up (else constant).
    """
    trainer = module.trainer
    allow_offloaded_torch_optimizer(getattr(trainer, "strategy", None))  # ZeRO offload keeps this AdamW
    extra = {} if weight_decay is None else {"weight_decay": weight_decay}
    optimizer = torch.optim.AdamW(params, lr=learning_rate, **extra)
    return warmup_schedule(
        optimizer,
        trainer.estimated_stepping_batches,
        warmup_steps=warmup_steps,
        warmup_ratio=warmup_ratio,
        linear=linear,
    )


__all__ = ["adamw_with_warmup", "allow_offloaded_torch_optimizer", "decay_groups", "warmup_schedule"]
