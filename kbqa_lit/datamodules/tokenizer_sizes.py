"""``TokenizerSizesMixin``: the vocabulary size and padding id a datamodule's tokenizer gives the model."""

from __future__ import annotations

from typing import Any


class TokenizerSizesMixin:
    """``vocab_size`` and ``pad_token_id`` of ``self.tokenizer`` (the host class sets it)."""

    tokenizer: Any

    @property
    def vocab_size(self) -> int:
        """Number of tokens of the tokenizer (special tokens included) = the model's vocabulary."""
        return len(self.tokenizer)

    @property
    def pad_token_id(self) -> int:
        """The padding id (0 when the tokenizer has none, as for T5 tokenizers: 0)."""
        return int(self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0)


__all__ = ["TokenizerSizesMixin"]
