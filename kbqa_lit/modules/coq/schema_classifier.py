"""``SchemaClassifier``: CoQ's joint relation/entity classifier, ``L = L_REL + L_ENT``.

One encoder (``mode="joint"``) reads both kinds of items (texts in
:mod:`kbqa_lit.datamodules.coq.classifier_inputs`); the hidden states are averaged over the real tokens
(masked mean pooling: padding never changes a score), a Linear layer gives one logit per item and
the sigmoid its probability. Each task's loss is the binary cross-entropy (with logits) averaged
over that task's items in the batch; ``loss = L_REL + L_ENT``. ``mode="separate"`` trains one
encoder per task (the paper's Table 6 comparison) and ``shared_head=False`` gives each task its
own Linear layer. The encoder is a T5 encoder (the paper's; ``t5-base``) or any pretrained BERT-like
encoder (``all-MiniLM-L6-v2`` offline, ``bert-base-uncased``), named by ``model_name_or_path`` and
read with its own tokenizer (the datamodule's ``tokenizer_name_or_path``); without a name a tiny
one is built (``tiny_encoder``).

Batches are those of :class:`~kbqa_lit.datamodules.coq.classifier.SchemaDataModule`: ``input_ids``,
``attention_mask``, ``labels``, ``task`` (0 relation, 1 entity). Validation logs precision, recall
and F1 of each task at ``threshold`` (torchmetrics with sum-reduced states, so DDP gives the
numbers of one process). Prediction scores each example in two stages — relations, then entities
with their 1-hop relations among the refined (above-threshold) relations — and returns
probabilities for the :class:`~kbqa_lit.pipelines.coq.pattern_writer.PatternWriter`.

Inference without a Trainer: :meth:`SchemaClassifier.score_relations` and
:meth:`SchemaClassifier.score_entities` (batched, ``no_grad``, eval mode). The tokenizer and
the encoder config travel inside every checkpoint (as for the generator).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

import torch
from lightning.pytorch import LightningModule
from torch import nn
from torchmetrics import MetricCollection
from torchmetrics.classification import BinaryF1Score, BinaryPrecision, BinaryRecall
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.common import architecture_signature, tokenizer_files, tokenizer_from_files
from kbqa_lit.backbones.encoders import build_encoder, encoder_from_config, masked_mean
from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.coq.classifier_texts import ENT_TASK, REL_TASK, entity_item_relations, entity_text, relation_text
from kbqa_lit.errors import check_choice
from kbqa_lit.modules.training_setup import adamw_with_warmup, decay_groups, eval_mode

log = logging.getLogger(__name__)

TASKS = {REL_TASK: "rel", ENT_TASK: "ent"}


def _metrics(threshold: float) -> MetricCollection:
    return MetricCollection(
        {
            "precision": BinaryPrecision(threshold=threshold),
            "recall": BinaryRecall(threshold=threshold),
            "f1": BinaryF1Score(threshold=threshold),
        }
    )


class SchemaClassifier(LightningModule):
    """Refine candidate relations and entities with one encoder and two tasks (CoQ step 2b).

    Args:
        model_name_or_path: Hub name or local folder of a pretrained encoder: a T5 (``t5-base``,
            its encoder stack is used) or a BERT-like encoder (``bert-base-uncased``, or
            ``all-MiniLM-L6-v2`` = the offline MiniLM folder); ``None`` builds a fresh tiny
            encoder from ``model_config``.
        model_config: Encoder config fields: on top of the tiny encoder without
            ``model_name_or_path``, overrides of the pretrained config with it.
        tokenizer: The tokenizer (linked from ``data.tokenizer`` by the CLI); ``None`` loads it from
            ``model_name_or_path`` (a checkpoint restores its own).
        tiny_encoder: Which tiny encoder ``model_name_or_path: null`` builds: ``t5`` (a T5
            encoder stack) or ``bert``; a named encoder's own type wins.
        mode: ``joint`` (one encoder for both tasks, the paper) or ``separate`` (one per task).
        shared_head: One Linear layer for both tasks (true) or one per task.
        threshold: Probability above which an item counts as refined (metrics, prediction).
        learning_rate: Peak AdamW learning rate.
        weight_decay: AdamW weight decay (not on biases and normalisation weights).
        warmup_ratio: Linear warm-up as a share of the optimiser steps, then linear decay to 0.
        max_length: Truncation of the texts the inference API tokenises.
        inference_batch_size: Items per forward pass in :meth:`score_relations` / :meth:`score_entities`.
        max_entity_relations: Relations listed per entity item at prediction (match the datamodule).
    """

    def __init__(
        self,
        model_name_or_path: str | None = None,
        model_config: dict[str, Any] | None = None,
        tokenizer: Any = None,
        tiny_encoder: Literal["t5", "bert"] = "t5",
        mode: Literal["joint", "separate"] = "joint",
        shared_head: bool = False,
        threshold: float = 0.5,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.01,
        warmup_ratio: float = 0.05,
        max_length: int = 256,
        inference_batch_size: int = 64,
        max_entity_relations: int = 8,
    ) -> None:
        super().__init__()
        check_choice("mode", mode, ("joint", "separate"))
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {threshold}")
        self.save_hyperparameters(ignore=["tokenizer"])
        if tokenizer is None and model_name_or_path is not None:
            try:
                tokenizer = build_tokenizer(model_name_or_path)
            except OSError as exc:
                log.warning("no tokenizer at %s (%s)", model_name_or_path, exc)
        self.tokenizer: PreTrainedTokenizerBase | None = tokenizer
        self._build_network(lambda: build_encoder(model_name_or_path, model_config, tokenizer, tiny=tiny_encoder))
        self.val_metrics = nn.ModuleDict({name: _metrics(threshold) for name in TASKS.values()})
        self.loss_fn = nn.BCEWithLogitsLoss()

    def _build_network(self, make_encoder: Any) -> None:
        n_enc = 1 if self.hparams.mode == "joint" else 2
        encoders = [make_encoder() for _ in range(n_enc)]
        for encoder in encoders:
            if getattr(encoder, "pooler", None) is not None:
                encoder.pooler = None  # masked mean pooling instead; an unused pooler would trouble DDP
            encoder.train()  # from_pretrained leaves it in eval mode
        self.encoders = nn.ModuleList(encoders)
        dim = self.encoders[0].config.hidden_size  # T5 maps hidden_size to d_model
        self.heads = nn.ModuleList([nn.Linear(dim, 1) for _ in range(1 if self.hparams.shared_head else 2)])

    # ------------------------------------------------------------------ forward and losses

    def _logits_of_task(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, task: int) -> torch.Tensor:
        encoder = self.encoders[task if len(self.encoders) > 1 else 0]
        head = self.heads[task if len(self.heads) > 1 else 0]
        hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return head(masked_mean(hidden, attention_mask)).squeeze(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, task: torch.Tensor) -> torch.Tensor:
        """One logit per item; ``task`` (per row, 0 relation / 1 entity) routes encoder and head."""
        if len(self.encoders) == 1 and len(self.heads) == 1:
            return self._logits_of_task(input_ids, attention_mask, REL_TASK)
        logits = input_ids.new_zeros(input_ids.shape[0], dtype=torch.float32)
        if len(self.encoders) == 1:  # one encoder, one head per task: encode once
            hidden = self.encoders[0](input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            pooled = masked_mean(hidden, attention_mask)
            for t in TASKS:
                rows = task == t
                if rows.any():
                    logits[rows] = self.heads[t](pooled[rows]).squeeze(-1).to(logits.dtype)
            return logits
        for t in TASKS:
            rows = task == t
            if rows.any():
                out = self._logits_of_task(input_ids[rows], attention_mask[rows], t)
                logits[rows] = out.to(logits.dtype)
        return logits

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """``({"loss", "loss_rel", "loss_ent"}, logits)``; a task absent from the batch adds 0."""
        logits = self(batch["input_ids"], batch["attention_mask"], batch["task"])
        labels = batch["labels"].to(logits.dtype)
        losses: dict[str, torch.Tensor] = {}
        total = logits.new_zeros(())
        for t, name in TASKS.items():
            rows = batch["task"] == t
            loss = self.loss_fn(logits[rows], labels[rows]) if rows.any() else logits.new_zeros(())
            losses[f"loss_{name}"] = loss
            total = total + loss
        losses["loss"] = total
        return losses, logits

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """``L_REL + L_ENT``; logs ``train/loss``, ``train/loss_rel``, ``train/loss_ent``."""
        losses, _ = self.compute_losses(batch)
        bs = int(batch["input_ids"].shape[0])
        for name, value in losses.items():
            self.log(f"train/{name}", value, prog_bar=name == "loss", batch_size=bs)
        return losses["loss"]

    def _eval_step(self, batch: dict[str, torch.Tensor], stage: str) -> None:
        losses, logits = self.compute_losses(batch)
        bs = int(batch["input_ids"].shape[0])
        self.log(f"{stage}/loss", losses["loss"], on_epoch=True, sync_dist=True, prog_bar=stage == "val", batch_size=bs)
        probs = torch.sigmoid(logits)
        for t, name in TASKS.items():
            rows = batch["task"] == t
            if not rows.any():
                continue
            metrics = self.val_metrics[name]
            metrics.update(probs[rows], batch["labels"][rows].long())
        for name, metrics in self.val_metrics.items():
            for key, metric in metrics.items():
                self.log(f"{stage}/{name}_{key}", metric, on_epoch=True, on_step=False, batch_size=bs)

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Log ``val/loss`` and ``val/{rel,ent}_{precision,recall,f1}`` at ``threshold``."""
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Log ``test/loss`` and ``test/{rel,ent}_{precision,recall,f1}``."""
        self._eval_step(batch, "test")

    def predict_step(self, batch: list[dict[str, Any]], batch_idx: int) -> list[dict[str, Any]]:
        """Score each example's relations, then its entities with the refined relations.

        Returns:
            Per example: ``index``, ``qid``, ``relations`` and ``entities`` as ``[[id, prob], ...]``
            in candidate order, ``entity_labels`` ``{id: label}`` and ``entity_relations``
            ``{id: [1-hop relations]}``.
        """
        out = []
        threshold = float(self.hparams.threshold)
        for rec in batch:
            q, d = rec["question"], rec.get("decomposition")
            rel_probs = self.score_relations(q, d, rec["relations"])
            ranked = sorted(zip(rec["relations"], rel_probs, strict=True), key=lambda x: -x[1])
            refined = [r for r, p in ranked if p >= threshold]
            limit = int(self.hparams.max_entity_relations)
            ents = [(e, label, entity_item_relations(hop, refined, limit)) for e, label, hop in rec["entities"]]
            ent_probs = self.score_entities(q, d, ents)
            out.append(
                {
                    "index": int(rec["index"]),
                    "qid": rec.get("qid"),
                    "relations": [[r, p] for r, p in zip(rec["relations"], rel_probs, strict=True)],
                    "entities": [[e, p] for (e, _, _), p in zip(ents, ent_probs, strict=True)],
                    "entity_labels": {e: label for e, label, _ in ents},
                    "entity_relations": {e: list(hop) for e, _, hop in rec["entities"]},
                }
            )
        return out

    # ------------------------------------------------------------------ inference API

    def _require_tokenizer(self) -> PreTrainedTokenizerBase:
        if self.tokenizer is None:
            raise RuntimeError("SchemaClassifier has no tokenizer: pass one (or load a checkpoint)")
        return self.tokenizer

    @torch.no_grad()
    def score_texts(self, texts: Sequence[str], task: int) -> list[float]:
        """Probabilities of already-built item texts of one task (batched, eval mode)."""
        if not texts:
            return []
        tok = self._require_tokenizer()
        with eval_mode(self):
            probs: list[float] = []
            step = int(self.hparams.inference_batch_size)
            for start in range(0, len(texts), step):
                enc = tok(
                    list(texts[start : start + step]),
                    truncation=True,
                    max_length=self.hparams.max_length,
                    padding=True,
                    return_tensors="pt",
                )
                ids, mask = enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device)
                task_t = torch.full((ids.shape[0],), task, dtype=torch.long, device=self.device)
                probs.extend(torch.sigmoid(self(ids, mask, task_t)).float().tolist())
        return probs

    def score_relations(self, question: str, decomposition: str | None, relations: Sequence[str]) -> list[float]:
        """``s(q, D, r)`` for each relation id (``decomposition`` ``None`` leaves ``D`` out)."""
        return self.score_texts([relation_text(question, decomposition, r) for r in relations], REL_TASK)

    def score_entities(
        self,
        question: str,
        decomposition: str | None,
        entities: Sequence[tuple[str, str, Sequence[str]]],
    ) -> list[float]:
        """``s(q, D, e)`` for each ``(entity id, label, relations listed with it)``.

        The listed relations should already be the entity's 1-hop relations among the refined
        ones (see :func:`~kbqa_lit.datamodules.coq.classifier_inputs.entity_item_relations`).
        """
        texts = [entity_text(question, decomposition, label or eid, rels) for eid, label, rels in entities]
        return self.score_texts(texts, ENT_TASK)

    # ------------------------------------------------------------------ optimisation

    def configure_optimizers(self) -> dict[str, Any]:
        """AdamW (no decay on biases/norms) + linear warm-up then linear decay to 0."""
        hp = self.hparams
        return adamw_with_warmup(
            self, decay_groups(self, hp.weight_decay), hp.learning_rate, warmup_ratio=hp.warmup_ratio
        )

    # ------------------------------------------------------------------ persistence

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the encoder config and the tokenizer's files in the checkpoint."""
        checkpoint["encoder_config"] = self.encoders[0].config.to_dict()
        if self.tokenizer is not None:
            checkpoint["tokenizer_files"] = tokenizer_files(self.tokenizer)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the tokenizer (unless one was given) and rebuild the encoders if their shape differs."""
        files = checkpoint.get("tokenizer_files")
        if files and self.tokenizer is None:
            self.tokenizer = tokenizer_from_files(files)
        stored = checkpoint.get("encoder_config")
        if stored:
            current = self.encoders[0].config.to_dict()
            if architecture_signature(current) != architecture_signature(stored):
                self._build_network(lambda: encoder_from_config(stored))


__all__ = ["SchemaClassifier"]
