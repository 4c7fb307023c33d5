"""Keqing's template matching: rank question templates by sentence-embedding similarity.

A sentence embedding is the masked mean of the encoder's last hidden state, L2-normalised
(:class:`~kbqa_lit.backbones.sentence_encoder.SentenceEncoder`: what sentence-transformers
computes for all-MiniLM-L6-v2, offline); the score is the cosine similarity.

The entity slot ``[mask]`` of templates and sub-questions is replaced by the neutral word
``mask_word`` (default ``"something"``) on both sides before encoding, so the slot reads as an
ordinary noun phrase rather than as BERT's ``[MASK]`` token or as the punctuation ``[ mask ]``.

Template embeddings are computed once and cached in ``cache_dir`` as
``templates-<hash>.pt`` (the hash covers the encoder name, the mask word, the length limit and
the template texts), written atomically. With ``exact=True``, a text equal to a template after
normalisation (case, whitespace and punctuation) ranks that template first with score 1.0.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import torch

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.backbones.sentence_encoder import SentenceEncoder
from kbqa_lit.data.keqing.decomposition import MASK
from kbqa_lit.errors import UserInputError
from kbqa_lit.modules.checkpoint_loading import checkpoint_damage

log = logging.getLogger(__name__)

_CACHE_FORMAT = 1
_MASK_RE = re.compile(re.escape(MASK), re.IGNORECASE)
_NON_WORD_RE = re.compile(r"[^\w]+")


def normalize_template(text: str) -> str:
    """Casefold, punctuation to spaces, squeezed whitespace: the key of the exact shortcut."""
    return " ".join(_NON_WORD_RE.sub(" ", text.casefold()).split())


class TemplateMatcher:
    """Rank templates for texts by cosine similarity of sentence embeddings (see the module docstring).

    Args:
        templates: The template texts (with ``[mask]`` slots).
        encoder: Encoder name or folder (``all-MiniLM-L6-v2`` offline).
        cache_dir: Folder of the template-embedding cache (``None``: no cache).
        batch_size: Texts per encoder forward pass.
        device: Torch device of the encoder.
        exact: Rank a template first (score 1.0) when a text equals it after normalisation.
        mask_word: The word ``[mask]`` is replaced by on both sides.

    Raises:
        UserInputError: When there are no templates or ``batch_size < 1``.
    """

    def __init__(
        self,
        templates: Sequence[str],
        encoder: str = MINILM,
        cache_dir: str | Path | None = None,
        batch_size: int = 64,
        device: str | torch.device = "cpu",
        exact: bool = True,
        mask_word: str = "something",
    ) -> None:
        self.templates = [str(t) for t in templates]
        if not self.templates:
            raise UserInputError("TemplateMatcher needs at least one template")
        self.encoder = encoder
        self.exact = exact
        self.mask_word = mask_word
        self.sentences = SentenceEncoder(encoder, batch_size, device)
        self.max_length = self.sentences.max_length
        self._exact_index: dict[str, list[int]] = {}
        for i, t in enumerate(self.templates):
            self._exact_index.setdefault(normalize_template(t), []).append(i)
        self.cache_path = Path(cache_dir) / f"templates-{self._cache_key()}.pt" if cache_dir is not None else None
        self.template_embeddings = self._template_embeddings()

    def _cache_key(self) -> str:
        h = hashlib.sha256()
        h.update(json.dumps([_CACHE_FORMAT, self.encoder, self.mask_word, self.max_length]).encode())
        for t in self.templates:
            h.update(t.encode("utf-8") + b"\x00")
        return h.hexdigest()[:24]

    def _template_embeddings(self) -> torch.Tensor:
        """Read the cached template embeddings, or compute and cache them."""
        damage = checkpoint_damage(self.cache_path) if self.cache_path is not None else None
        if damage:  # torch.load would read changed bytes as changed values
            log.warning("ignoring the damaged template-embedding cache %s: %s", self.cache_path, damage)
        elif self.cache_path is not None and self.cache_path.is_file():
            try:
                cached = torch.load(self.cache_path, map_location="cpu", weights_only=True)
                if isinstance(cached, torch.Tensor) and cached.dim() == 2 and cached.shape[0] == len(self.templates):
                    return cached.float()
                log.warning("ignoring the template-embedding cache %s: wrong shape", self.cache_path)
            except Exception as exc:  # a corrupt or foreign file (unpickling errors vary): recompute
                log.warning("ignoring the unreadable template-embedding cache %s: %s", self.cache_path, exc)
        emb = self.encode(self.templates)
        if self.cache_path is not None:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_path.with_name(f".{self.cache_path.name}.{os.getpid()}.tmp")
            try:
                torch.save(emb, tmp)
                os.replace(tmp, self.cache_path)
            except OSError as exc:
                log.warning("could not write the template-embedding cache %s: %s", self.cache_path, exc)
            finally:
                tmp.unlink(missing_ok=True)
        return emb

    def _prepare(self, text: str) -> str:
        return " ".join(_MASK_RE.sub(self.mask_word, text).split())

    @property
    def encoded_texts(self) -> int:
        """Texts encoded so far (templates included when they were not read from the cache)."""
        return self.sentences.encoded_texts

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """L2-normalised mean-pooled embeddings of ``texts`` (``[len(texts), hidden]``, float32, CPU)."""
        return self.sentences.encode([self._prepare(t) for t in texts])

    @property
    def template_dim(self) -> int:
        """The embedding size (the encoder's hidden size)."""
        return self.sentences.dim

    def top_k(self, texts: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """The ``k`` best templates of each text: ``(template index, cosine score)``, best first.

        Raises:
            UserInputError: When ``k < 1``.
        """
        if k < 1:
            raise UserInputError(f"k must be >= 1, got {k}")
        texts = list(texts)
        if not texts:
            return []
        unique = list(dict.fromkeys(texts))  # decompositions repeat a few wordings: encode each once
        position = {t: i for i, t in enumerate(unique)}
        unique_scores = self.encode(unique) @ self.template_embeddings.T
        k = min(k, len(self.templates))
        ranked: list[list[tuple[int, float]]] = []
        for text in texts:
            row = unique_scores[position[text]]
            first = self._exact_index.get(normalize_template(text), []) if self.exact else []
            best = [(i, 1.0) for i in first]
            values, indices = torch.topk(row, min(len(self.templates), k + len(first)))
            best += [(int(i), float(v)) for v, i in zip(values, indices, strict=True) if int(i) not in first]
            ranked.append(best[:k])
        return ranked


__all__ = ["TemplateMatcher", "normalize_template"]
