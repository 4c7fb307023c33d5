"""Dynamic padding of tokenised seq2seq rows into the batches the generator modules read.

A row (one example, as stored in the tokenised cache) holds ``index``, ``input_ids``, ``labels``
and, with the answer task, ``ans_input_ids`` and ``ans_labels`` (lists of token ids; ``labels``
may be empty when the example has no gold target). :class:`Seq2SeqCollator` pads each field to
the longest row of the batch: inputs with the pad id (``attention_mask`` 1 on tokens, 0 on
padding), labels with ``-100`` (ignored by the cross-entropy; a row without gold is all
``-100``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

IGNORE_INDEX = -100

#: (source field, labels field, batch prefix) of each task.
TASK_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("input_ids", "labels", ""),
    ("ans_input_ids", "ans_labels", "ans_"),
)


def pad_sequences(seqs: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    """Right-pad integer lists to one ``LongTensor`` of shape ``(len(seqs), max_len)`` (max_len ≥ 1)."""
    width = max((len(s) for s in seqs), default=0) or 1
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


class Seq2SeqCollator:
    """Collate rows into a padded batch dict.

    Args:
        pad_token_id: Id used to pad the inputs.
        answer_task: Also pad the ``ans_*`` fields (they must then be in every row).
    """

    def __init__(self, pad_token_id: int, answer_task: bool = True) -> None:
        self.pad_token_id = pad_token_id
        self.answer_task = answer_task

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        """Pad ``rows`` into ``{"input_ids", "attention_mask", "labels", ["ans_*"], "index"}``."""
        batch: dict[str, torch.Tensor] = {}
        tasks = TASK_FIELDS if self.answer_task else TASK_FIELDS[:1]
        for src, tgt, prefix in tasks:
            ids = pad_sequences([r[src] for r in rows], self.pad_token_id)
            mask = pad_sequences([[1] * len(r[src]) for r in rows], 0)
            batch[f"{prefix}input_ids"] = ids
            batch[f"{prefix}attention_mask"] = mask
            batch[f"{prefix}labels"] = pad_sequences([r[tgt] for r in rows], IGNORE_INDEX)
        batch["index"] = torch.as_tensor([int(r["index"]) for r in rows], dtype=torch.long)
        return batch


def padding_share(batches: Iterable[Mapping[str, torch.Tensor]]) -> float:
    """Share of padding positions in the ``attention_mask`` tensors of ``batches`` (0 = none).

    Counts every ``*attention_mask`` in each batch (the LF and the answer inputs).
    """
    pad = total = 0
    for batch in batches:
        for key, mask in batch.items():
            if key.endswith("attention_mask"):
                total += mask.numel()
                pad += int((mask == 0).sum())
    return pad / total if total else 0.0


__all__ = ["IGNORE_INDEX", "Seq2SeqCollator", "pad_sequences", "padding_share"]
