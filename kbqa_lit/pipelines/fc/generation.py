"""Beam search of a trained seq2seq part (FC's skeleton parser or composer) over a list of input texts.

The parts are the project's generator module
(:class:`~kbqa_lit.modules.multitask_generator.MultitaskGenerator`, or anything with its
``tokenizer`` and ``generate_lf``); :func:`generate_beams` tokenises the texts in batches the way
the FC datamodules do and returns the beams of each text, best first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from kbqa_lit.errors import UserInputError


class Seq2SeqPart(Protocol):
    """What inference needs from a trained seq2seq part."""

    tokenizer: Any

    def generate_lf(
        self,
        batch: dict[str, torch.Tensor],
        num_beams: int = 5,
        num_return_sequences: int = 5,
        max_new_tokens: int = 128,
        logits_processor: LogitsProcessorList | None = None,
    ) -> list[list[str]]:
        """Beams per row of ``batch``, best first."""
        ...


def generate_beams(
    part: Seq2SeqPart,
    texts: Sequence[str],
    num_beams: int = 4,
    max_new_tokens: int = 64,
    max_source_length: int = 256,
    batch_size: int = 16,
    processor: Callable[[int, int], LogitsProcessor | None] | None = None,
) -> list[list[str]]:
    """The ``num_beams`` beams of each text, best first.

    Args:
        part: The seq2seq part.
        texts: Input texts.
        num_beams: Beam width (all beams are returned).
        max_new_tokens: Longest generation.
        max_source_length: Inputs are truncated to this many tokens.
        batch_size: Texts per ``generate`` call.
        processor: ``(start, stop) → logits processor`` for the texts ``start:stop`` of a batch
            (e.g. the grammar-constrained one with per-question grammars); ``None``: unconstrained.

    Raises:
        UserInputError: When the part has no tokenizer.
    """
    tok = getattr(part, "tokenizer", None)
    if tok is None:
        raise UserInputError("the seq2seq part has no tokenizer")
    out: list[list[str]] = []
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        enc = tok(chunk, truncation=True, max_length=max_source_length, padding=True, return_tensors="pt")
        batch = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        proc = processor(start, start + len(chunk)) if processor is not None else None
        extra = {"logits_processor": LogitsProcessorList([proc])} if proc is not None else {}
        out += part.generate_lf(
            batch, num_beams=num_beams, num_return_sequences=num_beams, max_new_tokens=max_new_tokens, **extra
        )
    return out


__all__ = ["Seq2SeqPart", "generate_beams"]
