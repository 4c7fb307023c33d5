"""The tiny T5 of the CPU configs and tests: :data:`TINY_T5` and :func:`tiny_t5_config`.

Shared by the seq2seq factory (:mod:`kbqa_lit.backbones.seq2seq`) and the T5-encoder backbone of
the encoders (:mod:`kbqa_lit.backbones.encoders`), so neither imports the other.
"""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedTokenizerBase, T5Config

#: The tiny T5 of tests and the quickstart (≈ 0.2 M parameters besides the embeddings).
TINY_T5: dict[str, Any] = {
    "d_model": 64,
    "d_ff": 128,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    "d_kv": 16,
    "dropout_rate": 0.1,
}


def tiny_t5_config(tokenizer: PreTrainedTokenizerBase | None = None, **overrides: Any) -> T5Config:
    """A :class:`~transformers.T5Config` from :data:`TINY_T5`, sized and wired to ``tokenizer``.

    Args:
        tokenizer: Gives ``vocab_size`` (``len(tokenizer)``), pad, eos and decoder-start ids.
        **overrides: Any T5 config field (``d_model``, ``num_layers``...); wins over the rest.
    """
    fields: dict[str, Any] = dict(TINY_T5)
    if tokenizer is not None:
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 1
        fields.update(vocab_size=len(tokenizer), pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=pad)
    fields.update(overrides)
    fields.setdefault("decoder_start_token_id", fields.get("pad_token_id", 0))
    if "num_layers" in overrides and "num_decoder_layers" not in overrides:
        fields["num_decoder_layers"] = overrides["num_layers"]
    return T5Config(**fields)


__all__ = ["TINY_T5", "tiny_t5_config"]
