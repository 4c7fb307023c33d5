"""A word-level tokenizer and a 2,000-row encoding for the tokenized-data cache's fault tests (issue 31)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

WORDS = [f"w{i}" for i in range(50)]
ROWS = 2000  # ≈ 60 KB of Arrow


def word_tokenizer() -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer over :data:`WORDS` (no training, no files)."""
    vocab = {w: i for i, w in enumerate(["[UNK]", *WORDS])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")


def row_encoder(tokenizer: PreTrainedTokenizerFast) -> Callable[[], dict[str, list[Any]]]:
    """The ``encode`` callable ``load_or_encode`` takes: :data:`ROWS` rows of five words each."""

    def encode() -> dict[str, list[Any]]:
        ids = [tokenizer(" ".join(WORDS[i % 45 : i % 45 + 5]))["input_ids"] for i in range(ROWS)]
        return {"index": list(range(ROWS)), "input_ids": ids, "length": [len(x) for x in ids]}

    return encode
