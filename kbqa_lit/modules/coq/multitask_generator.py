"""``MultitaskGenerator``: CoQ's one T5 trained on two tasks, ``L = L_LF + α·L_ANS``.

The module holds the loss, the optimiser set-up and a small generation API; it never executes
queries (the execution-guided callback calls :meth:`MultitaskGenerator.generate_lf` and
:meth:`MultitaskGenerator.generate_answer`, denormalises, converts to SPARQL and executes).

Batches come from :class:`~kbqa_lit.datamodules.coq.generation.GenerationDataModule`: the LF task
in ``input_ids``/``attention_mask``/``labels``, the answer task (when enabled) in
``ans_input_ids``/``ans_attention_mask``/``ans_labels``, and ``index``. Each loss is T5's
token-level cross-entropy (mean over the non-``-100`` label positions of the batch).

Tokenizer persistence: the tokenizer is passed in (LightningCLI links ``data.tokenizer`` →
``model.tokenizer``) and is not a hyper-parameter. Every checkpoint carries it inside:
``checkpoint["tokenizer_files"]`` (the files of ``save_pretrained``) and the network's config in
``checkpoint["model_config"]``; :meth:`on_load_checkpoint` restores both, so
``MultitaskGenerator.load_from_checkpoint(path)`` gives a module with the right vocabulary and a
working ``.tokenizer`` without the data. :meth:`save_pretrained` exports a Hugging Face folder
(model + tokenizer) for pipelines.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule
from lightning.pytorch.utilities import rank_zero_warn
from transformers import (
    LogitsProcessorList,
    PreTrainedTokenizerBase,
    T5Config,
    T5ForConditionalGeneration,
)

from kbqa_lit.backbones.common import tokenizer_files, tokenizer_from_files
from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer, wire_generation_ids
from kbqa_lit.modules.training_setup import decay_groups, warmup_schedule

log = logging.getLogger(__name__)

_ARCH_FIELDS = ("vocab_size", "d_model", "d_ff", "d_kv", "num_heads", "num_layers", "num_decoder_layers")


def _clean(text: str) -> str:
    return " ".join(text.split())


class MultitaskGenerator(LightningModule):
    """One T5 generating the normalised S-expression and the answer (CoQ step 4).

    Args:
        model_name_or_path: Hub name or local folder of a pretrained T5 (``t5-base``); ``None``
            builds a fresh T5 from ``model_config``.
        model_config: T5 config fields. Without ``model_name_or_path``: on top of the tiny T5
            (d_model 64, d_ff 128, 2+2 layers, 4 heads, d_kv 16); with it: overrides of the
            pretrained config (e.g. ``dropout_rate``).
        tokenizer: The tokenizer (linked from ``data.tokenizer`` by the CLI); decides the
            vocabulary size and decodes generations. ``None`` loads it from
            ``model_name_or_path`` when given (and a checkpoint restores its own).
        alpha: Weight α of the answer loss: ``L = L_LF + α·L_ANS`` (0.6 CWQ, 0.2 WebQSP in the
            paper; 0 skips the answer task).
        learning_rate: Peak AdamW learning rate.
        weight_decay: AdamW weight decay (not applied to biases and LayerNorm weights).
        warmup_steps: Linear warm-up steps before the linear decay to 0; 0 uses ``warmup_ratio``.
        warmup_ratio: Warm-up as a share of all optimiser steps (when ``warmup_steps`` is 0).
        max_target_length: Longest generation of :meth:`predict_step` (the callback passes its own
            ``max_new_tokens``); match the datamodule's ``max_target_length``.
    """

    def __init__(
        self,
        model_name_or_path: str | None = None,
        model_config: dict[str, Any] | None = None,
        tokenizer: Any = None,
        alpha: float = 0.6,
        learning_rate: float = 3e-4,
        weight_decay: float = 0.01,
        warmup_steps: int = 0,
        warmup_ratio: float = 0.0,
        max_target_length: int = 128,
    ) -> None:
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.save_hyperparameters(ignore=["tokenizer"])
        if tokenizer is None and model_name_or_path is not None:
            try:
                tokenizer = build_tokenizer(model_name_or_path)
            except OSError as exc:  # no tokenizer files there; a checkpoint may bring its own
                log.warning("no tokenizer at %s (%s)", model_name_or_path, exc)
        self.tokenizer: PreTrainedTokenizerBase | None = tokenizer
        self.model = build_seq2seq(model_name_or_path, config=model_config, tokenizer=tokenizer)

    # ------------------------------------------------------------------ losses

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> Any:
        """Run the T5 with teacher forcing; returns the Hugging Face output (``.loss``, ``.logits``)."""
        return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)

    def _task_loss(self, batch: dict[str, torch.Tensor], prefix: str) -> torch.Tensor | None:
        labels = batch.get(f"{prefix}labels")
        if labels is None or not bool((labels != -100).any()):
            return None
        out = self(batch[f"{prefix}input_ids"], batch[f"{prefix}attention_mask"], labels)
        return out.loss

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``{"loss", "loss_lf", ["loss_ans"]}`` of a batch.

        ``loss_ans`` is left out (and ``loss = loss_lf``) when the batch has no answer task or
        ``alpha`` is 0; a task whose labels are all ``-100`` contributes nothing.
        """
        zero = batch["input_ids"].new_zeros((), dtype=torch.float32)
        l_lf = self._task_loss(batch, "")
        losses = {"loss_lf": l_lf if l_lf is not None else zero}
        loss = losses["loss_lf"]
        if self.hparams.alpha > 0 and "ans_input_ids" in batch:
            l_ans = self._task_loss(batch, "ans_")
            if l_ans is not None:
                losses["loss_ans"] = l_ans
                loss = loss + self.hparams.alpha * l_ans
        losses["loss"] = loss
        return losses

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """``L_LF + α·L_ANS``; logs ``train/loss``, ``train/loss_lf``, ``train/loss_ans``."""
        losses = self.compute_losses(batch)
        bs = batch["input_ids"].shape[0]
        for name, value in losses.items():
            self.log(f"train/{name}", value, prog_bar=name == "loss", batch_size=bs)
        return losses["loss"]

    def _eval_step(self, batch: dict[str, torch.Tensor], stage: str) -> None:
        labels = batch.get("labels")
        if labels is None or not bool((labels != -100).any()):
            return  # no gold in this batch (e.g. an unlabelled test file)
        loss = self.compute_losses(batch)["loss"]
        self.log(
            f"{stage}/loss",
            loss,
            on_step=False,
            on_epoch=True,
            sync_dist=True,
            prog_bar=stage == "val",
            batch_size=batch["input_ids"].shape[0],
        )

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Log ``val/loss`` only (execution-guided metrics belong to the callback)."""
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Log ``test/loss`` only."""
        self._eval_step(batch, "test")

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> dict[str, Any]:
        """Greedy S-expression (and answer) per example, with ``index``; beams are the callback's job."""
        out: dict[str, Any] = {"index": batch["index"].tolist()}
        limit = int(self.hparams.max_target_length)
        beams = self.generate_lf(batch, num_beams=1, num_return_sequences=1, max_new_tokens=limit)
        out["lf"] = [b[0] for b in beams]
        answers = self.generate_answer(batch, max_new_tokens=limit)
        if answers:
            out["answer"] = answers
        return out

    # ------------------------------------------------------------------ generation API

    def _require_tokenizer(self) -> PreTrainedTokenizerBase:
        if self.tokenizer is None:
            raise RuntimeError("MultitaskGenerator has no tokenizer: pass one (or load a checkpoint)")
        return self.tokenizer

    @torch.no_grad()
    def _generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any) -> list[str]:
        tok = self._require_tokenizer()
        was_training = self.model.training
        self.model.eval()
        try:
            seqs = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                do_sample=False,
                **kwargs,
            )
        finally:
            if was_training:
                self.model.train()
        texts = tok.batch_decode(seqs, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return [_clean(t) for t in texts]

    def generate_lf(
        self,
        batch: dict[str, torch.Tensor],
        num_beams: int = 5,
        num_return_sequences: int = 5,
        max_new_tokens: int = 128,
        logits_processor: LogitsProcessorList | None = None,
    ) -> list[list[str]]:
        """Beam-search normalised S-expressions for the LF inputs of ``batch``.

        Args:
            batch: A batch with ``input_ids`` and ``attention_mask``.
            num_beams: Beam width.
            num_return_sequences: Beams returned per example (at most ``num_beams``).
            max_new_tokens: Longest generation.
            logits_processor: Extra logits processors for this search (e.g. grammar-constrained
                decoding), passed to ``generate`` as they are.

        Returns:
            Per example, ``num_return_sequences`` decoded texts in beam order (best first),
            special tokens skipped, whitespace normalised.

        Raises:
            ValueError: When ``num_return_sequences`` exceeds ``num_beams``.
        """
        if num_return_sequences > num_beams:
            raise ValueError(f"num_return_sequences ({num_return_sequences}) > num_beams ({num_beams})")
        n = num_return_sequences
        texts = self._generate(
            batch["input_ids"],
            batch["attention_mask"],
            num_beams=num_beams,
            num_return_sequences=n,
            max_new_tokens=max_new_tokens,
            **({"early_stopping": True} if num_beams > 1 else {}),
            **({"logits_processor": logits_processor} if logits_processor is not None else {}),
        )
        return [texts[i * n : (i + 1) * n] for i in range(batch["input_ids"].shape[0])]

    def generate_answer(self, batch: dict[str, torch.Tensor], max_new_tokens: int = 32) -> list[str]:
        """Greedy answer text per example from the ``ans_*`` inputs; ``[]`` when the batch has none.

        Answers are the names joined with ``" | "`` (as in training); split on it for a set.
        """
        if "ans_input_ids" not in batch:
            return []
        return self._generate(batch["ans_input_ids"], batch["ans_attention_mask"], max_new_tokens=max_new_tokens)

    # ------------------------------------------------------------------ optimisation

    def param_groups(self) -> list[dict[str, Any]]:
        """AdamW groups of the network (see :func:`~kbqa_lit.modules.training_setup.decay_groups`)."""
        return decay_groups(self.model, self.hparams.weight_decay)

    def configure_optimizers(self) -> dict[str, Any]:
        """AdamW + linear warm-up then linear decay to 0 over the estimated optimiser steps."""
        optimizer = torch.optim.AdamW(self.param_groups(), lr=self.hparams.learning_rate)
        return warmup_schedule(
            optimizer,
            self.trainer.estimated_stepping_batches,
            warmup_steps=self.hparams.warmup_steps,
            warmup_ratio=self.hparams.warmup_ratio,
        )

    # ------------------------------------------------------------------ persistence

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the network's config and the tokenizer's files in the checkpoint."""
        checkpoint["model_config"] = self.model.config.to_dict()
        if self.tokenizer is not None:
            checkpoint["tokenizer_files"] = tokenizer_files(self.tokenizer)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the tokenizer (unless one was given) and rebuild the network if its shape differs."""
        files = checkpoint.get("tokenizer_files")
        if files:
            stored_tok = tokenizer_from_files(files)
            if self.tokenizer is None:
                self.tokenizer = stored_tok
            elif self.tokenizer.get_vocab() != stored_tok.get_vocab():
                rank_zero_warn(
                    "the tokenizer given to MultitaskGenerator differs from the one saved in the "
                    "checkpoint; generations will be decoded with the given one"
                )
        stored = checkpoint.get("model_config")
        if stored:
            current = self.model.config.to_dict()
            if any(current.get(k) != stored.get(k) for k in _ARCH_FIELDS):
                self.model = T5ForConditionalGeneration(T5Config.from_dict(stored))
                if self.tokenizer is not None:
                    wire_generation_ids(self.model, self.tokenizer)
        if self.tokenizer is not None and len(self.tokenizer) > self.model.get_input_embeddings().num_embeddings:
            raise ValueError("the tokenizer has more tokens than the checkpoint's embeddings")

    def save_pretrained(self, out_dir: str | Path) -> Path:
        """Export the T5 and its tokenizer as a Hugging Face folder (``from_pretrained``-ready)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(out))
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(out))
        return out


__all__ = ["MultitaskGenerator"]
