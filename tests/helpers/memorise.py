"""A tiny seq2seq trained to write given targets, so its beam searches end at different steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def memorise(model: Any, tok: Any, sources: Sequence[str], targets: Sequence[str], steps: int = 150) -> Any:
    """Train ``model`` (AdamW, lr 1e-2, the whole batch each step) to map ``sources`` to ``targets``.

    Returns:
        The tokenized ``sources`` (``input_ids``, ``attention_mask``); ``model`` is left in eval mode.
    """
    enc = tok(list(sources), return_tensors="pt", padding=True)
    labels = tok(list(targets), return_tensors="pt", padding=True).input_ids
    labels[labels == tok.pad_token_id] = -100
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        model(**enc, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    return enc
