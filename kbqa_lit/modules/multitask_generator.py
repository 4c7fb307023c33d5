"""``MultitaskGenerator``: the shared seq2seq generator trained on two tasks, ``L = L_LF + α·L_ANS``.

The network is a T5 (``backbone: t5``, the paper's) or an encoder-decoder warm-started from a
pretrained BERT-like encoder (``backbone: encoder-decoder``: all-MiniLM-L6-v2 offline,
``bert-base-uncased`` on a GPU; see :mod:`kbqa_lit.backbones.encoder_decoder`). Both are built by
:func:`~kbqa_lit.backbones.seq2seq.build_seq2seq` and used through the same API.

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
working ``.tokenizer`` without the data — and without the pretrained weights it was first built
from (the network is rebuilt from the stored config, then the checkpoint's weights are loaded).
:meth:`save_pretrained` exports a Hugging Face folder (model + tokenizer) for pipelines;
``MultitaskGenerator(model_name_or_path=<that folder>)`` reloads it (an encoder-decoder folder is
recognised whatever ``backbone`` says).
"""

from __future__ import annotations

import contextvars
import logging
import warnings
from pathlib import Path
from typing import Any, Literal

import torch
from lightning.pytorch import LightningModule
from lightning.pytorch.utilities import rank_zero_warn
from transformers import LogitsProcessorList, PreTrainedTokenizerBase

from kbqa_lit.backbones.beam_cache import beam_search
from kbqa_lit.backbones.common import architecture_signature, tokenizer_files, tokenizer_from_files
from kbqa_lit.backbones.encoder_decoder import decode_generated, drop_start_token
from kbqa_lit.backbones.seq2seq import BACKBONES, build_seq2seq, build_tokenizer, seq2seq_from_config
from kbqa_lit.errors import check_choice
from kbqa_lit.modules.training_setup import adamw_with_warmup, decay_groups, eval_mode

log = logging.getLogger(__name__)

#: Set while :meth:`MultitaskGenerator.load_from_checkpoint` runs: the network comes from the checkpoint.
_RESTORING: contextvars.ContextVar[bool] = contextvars.ContextVar("kbqa_generator_restoring", default=False)


def _clean(text: str) -> str:
    return " ".join(text.split())


class MultitaskGenerator(LightningModule):
    """One seq2seq model generating the normalised S-expression and the answer (CoQ step 4).

    Args:
        model_name_or_path: ``backbone: t5``: hub name or local folder of a pretrained T5
            (``t5-base``). ``backbone: encoder-decoder``: the pretrained encoder to warm-start
            from (``all-MiniLM-L6-v2`` = the offline MiniLM folder, ``bert-base-uncased``, a
            folder). Either way a folder written by :meth:`save_pretrained` reloads as it is.
            ``None`` builds a tiny network from ``model_config`` (fresh weights).
        model_config: Config fields of the T5 (``backbone: t5``) or of the encoder
            (``backbone: encoder-decoder``). Without ``model_name_or_path``: on top of the tiny
            T5 (d_model 64, d_ff 128, 2+2 layers, 4 heads, d_kv 16) or the tiny BERT; with it:
            overrides of the pretrained config (e.g. ``dropout_rate``, ``hidden_dropout_prob``).
        backbone: ``t5`` (the paper's) or ``encoder-decoder`` (a pretrained BERT-like encoder
            with a small fresh BERT decoder; read with the encoder's tokenizer, so set the
            datamodule's ``tokenizer_name_or_path`` to the same name).
        decoder_config: ``backbone: encoder-decoder`` only: BERT config fields of the fresh
            decoder (default: the encoder's hidden size, heads and feed-forward size with
            ``num_hidden_layers: 2``); e.g. ``{num_hidden_layers: 4}``.
        tokenizer: The tokenizer (linked from ``data.tokenizer`` by the CLI); decides the
            vocabulary size and decodes generations. ``None`` loads it from
            ``model_name_or_path`` when given (and a checkpoint restores its own).
        alpha: Weight α of the answer loss: ``L = L_LF + α·L_ANS`` (0.6 CWQ, 0.2 WebQSP in the
            paper; 0 skips the answer task: the answer inputs are not even run, so only the
            logical-form loss trains — the LF generator of the paper's "separately trained" pair).
        lf_weight: Weight of the logical-form loss, ``L = lf_weight·L_LF + α·L_ANS``; 0 trains the
            answer task only (the paper's "w/o LF generation" ablation; evaluate it with
            ``ExecutionGuidedEval(lf_generation=False)``, whose predictions are the answer texts; or
            as the answer generator of the "separately trained" pair, with
            ``ExecutionGuidedEval(answer_model=<its .ckpt>)`` on an ``alpha: 0`` LF generator).
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
        backbone: Literal["t5", "encoder-decoder"] = "t5",
        decoder_config: dict[str, Any] | None = None,
        alpha: float = 0.6,
        lf_weight: float = 1.0,
        learning_rate: float = 3e-4,
        weight_decay: float = 0.01,
        warmup_steps: int = 0,
        warmup_ratio: float = 0.0,
        max_target_length: int = 128,
    ) -> None:
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        if lf_weight < 0 or (lf_weight == 0 and alpha == 0):
            raise ValueError(f"lf_weight must be >= 0 and not 0 together with alpha, got {lf_weight} (alpha {alpha})")
        check_choice("backbone", backbone, BACKBONES)
        self.save_hyperparameters(ignore=["tokenizer"])
        # Restoring a checkpoint of a pretrained network: the checkpoint brings the tokenizer,
        # the config and the weights, so the pretrained files are not needed (on_load_checkpoint).
        deferred = _RESTORING.get() and model_name_or_path is not None
        if tokenizer is None and model_name_or_path is not None and not deferred:
            tokenizer = self._tokenizer_from_name()
        self.tokenizer: PreTrainedTokenizerBase | None = tokenizer
        self.model: Any = None if deferred else self._build_network()

    def _tokenizer_from_name(self) -> PreTrainedTokenizerBase | None:
        try:
            return build_tokenizer(self.hparams.model_name_or_path)
        except OSError as exc:  # no tokenizer files there; a checkpoint may bring its own
            log.warning("no tokenizer at %s (%s)", self.hparams.model_name_or_path, exc)
            return None

    def _build_network(self) -> Any:
        hp = self.hparams
        return build_seq2seq(
            hp.model_name_or_path,
            config=hp.model_config,
            tokenizer=self.tokenizer,
            backbone=hp.backbone,
            decoder_config=hp.decoder_config,
        )

    @classmethod
    def load_from_checkpoint(cls, checkpoint_path: Any, *args: Any, **kwargs: Any) -> MultitaskGenerator:  # type: ignore[override]
        """Lightning's ``load_from_checkpoint``, rebuilding the network from the checkpoint's config.

        A module first built from pretrained weights (``t5-base``, ``all-MiniLM-L6-v2``) is
        restored without them: only the checkpoint is read.
        """
        token = _RESTORING.set(True)
        try:
            return super().load_from_checkpoint(checkpoint_path, *args, **kwargs)  # type: ignore[return-value]
        finally:
            _RESTORING.reset(token)

    # ------------------------------------------------------------------ losses

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> Any:
        """Run the network with teacher forcing; returns the Hugging Face output (``.loss``, ``.logits``).

        For the encoder-decoder, a leading ``[CLS]`` of the labels (BERT tokenizers write targets
        as ``[CLS] … [SEP]``) is dropped: the decoder gets it as its start token.
        """
        if self.model.config.model_type != "encoder-decoder":
            return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        labels = drop_start_token(labels, self.model.config.decoder_start_token_id)
        with warnings.catch_warnings():  # EncoderDecoderModel warns on every call with labels
            warnings.filterwarnings("ignore", message="Version v4.12.0 introduces", category=FutureWarning)
            return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)

    def _task_loss(self, batch: dict[str, torch.Tensor], prefix: str) -> torch.Tensor | None:
        labels = batch.get(f"{prefix}labels")
        if labels is None or not bool((labels != -100).any()):
            return None
        out = self(batch[f"{prefix}input_ids"], batch[f"{prefix}attention_mask"], labels)
        return out.loss

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``{"loss", "loss_lf", ["loss_ans"]}`` of a batch: ``loss = lf_weight·loss_lf + α·loss_ans``.

        ``loss_ans`` is left out (and ``loss = lf_weight·loss_lf``) when the batch has no answer
        task or ``alpha`` is 0; a task whose labels are all ``-100`` contributes nothing.
        """
        zero = batch["input_ids"].new_zeros((), dtype=torch.float32)
        l_lf = self._task_loss(batch, "")
        losses = {"loss_lf": l_lf if l_lf is not None else zero}
        loss = self.hparams.get("lf_weight", 1.0) * losses["loss_lf"]
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
    def target_logprobs(
        self, source: str, targets: list[str], max_source_length: int = 256, max_target_length: int | None = None
    ) -> list[float]:
        """Each target's summed token log-probability given ``source`` (teacher forcing, one batch).

        A reranker's score of given outputs (e.g. candidate skeletons) rather than a search for them.

        Args:
            source: The input text.
            targets: The outputs to score.
            max_source_length: Source tokens kept.
            max_target_length: Target tokens kept (``None``: the module's ``max_target_length``).
        """
        if not targets:
            return []
        tok = self._require_tokenizer()
        longest = max_target_length or int(self.hparams.max_target_length)
        enc = tok([source] * len(targets), truncation=True, max_length=max_source_length, padding=True,
                  return_tensors="pt")  # fmt: skip
        ids = tok(list(targets), truncation=True, max_length=longest, padding=True, return_tensors="pt")["input_ids"]
        labels = ids.masked_fill(ids == tok.pad_token_id, -100).to(self.device)
        with eval_mode(self.model):
            logits = self(enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device), labels).logits
        if self.model.config.model_type == "encoder-decoder":  # forward dropped the start token the decoder gets
            labels = drop_start_token(labels, self.model.config.decoder_start_token_id)
        logp = logits.float().log_softmax(-1)
        mask = labels != -100
        picked = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return (picked * mask).sum(-1).tolist()

    @torch.no_grad()
    def _generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any) -> list[str]:
        tok = self._require_tokenizer()
        beams = 1 if "past_key_values" in kwargs else int(kwargs.get("num_beams", 1))
        # beam search: one copy of each example's cross-attention keys and values, never reordered, and the
        # grammar told which examples are finished (same output)
        processors = kwargs.get("logits_processor") or ()
        with eval_mode(self.model), beam_search(self.model, beams, processors) as cache:
            seqs = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                do_sample=False,
                **cache,
                **kwargs,
            )
        return [_clean(t) for t in decode_generated(tok, seqs)]

    def generate_lf(
        self,
        batch: dict[str, torch.Tensor],
        num_beams: int = 5,
        num_return_sequences: int = 5,
        max_new_tokens: int = 128,
        logits_processor: LogitsProcessorList | None = None,
        early_stopping: bool | str | None = None,
    ) -> list[list[str]]:
        """Beam-search normalised S-expressions for the LF inputs of ``batch``.

        Args:
            batch: A batch with ``input_ids`` and ``attention_mask``.
            num_beams: Beam width.
            num_return_sequences: Beams returned per example (at most ``num_beams``).
            max_new_tokens: Longest generation.
            logits_processor: Extra logits processors for this search (e.g. grammar-constrained
                decoding), passed to ``generate`` as they are.
            early_stopping: ``generate``'s stopping rule for beams: ``True`` (stop once
                ``num_beams`` beams have finished), ``False`` (its heuristic: until no running
                beam can beat the finished ones at its current length), ``"never"``; ``None``:
                ``False``, ``generate``'s own default, free or constrained. ``True`` is cheaper but
                short beams finish first and cut off longer, better ones: on the quickstart's
                validation split free decoding scored F1 0.600 with ``True`` (its default until
                2026-11-27) and 0.889 with ``False``, constrained 0.884 and 0.904.

        Returns:
            Per example, ``num_return_sequences`` decoded texts in beam order (best first),
            special tokens skipped, whitespace normalised.

        Raises:
            ValueError: When ``num_return_sequences`` exceeds ``num_beams``.
        """
        if num_return_sequences > num_beams:
            raise ValueError(f"num_return_sequences ({num_return_sequences}) > num_beams ({num_beams})")
        n = num_return_sequences
        stop = False if early_stopping is None else early_stopping
        texts = self._generate(
            batch["input_ids"],
            batch["attention_mask"],
            num_beams=num_beams,
            num_return_sequences=n,
            max_new_tokens=max_new_tokens,
            # Search until no running beam can beat the finished ones (the heuristic). early_stopping=True
            # stops at num_beams finished beams: short beams finish first and cut the longer, better ones.
            **({"early_stopping": stop} if num_beams > 1 else {}),
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
        hp = self.hparams
        return adamw_with_warmup(
            self, self.param_groups(), hp.learning_rate, warmup_steps=hp.warmup_steps, warmup_ratio=hp.warmup_ratio
        )

    # ------------------------------------------------------------------ persistence

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the network's config and the tokenizer's files in the checkpoint."""
        checkpoint["model_config"] = self.model.config.to_dict()
        if self.tokenizer is not None:
            checkpoint["tokenizer_files"] = tokenizer_files(self.tokenizer)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the tokenizer (unless one was given) and rebuild the network if its shape differs.

        The network is rebuilt from ``checkpoint["model_config"]`` (a T5 or an encoder-decoder
        config), so no pretrained files are read.
        """
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
        if self.model is None:  # deferred by load_from_checkpoint
            if self.tokenizer is None and self.hparams.model_name_or_path is not None:
                self.tokenizer = self._tokenizer_from_name()
            self.model = seq2seq_from_config(stored, self.tokenizer) if stored else self._build_network()
        elif stored and architecture_signature(self.model.config.to_dict()) != architecture_signature(stored):
            self.model = seq2seq_from_config(stored, self.tokenizer)
        if self.tokenizer is not None and len(self.tokenizer) > self.model.get_input_embeddings().num_embeddings:
            raise ValueError("the tokenizer has more tokens than the checkpoint's embeddings")

    def save_pretrained(self, out_dir: str | Path) -> Path:
        """Export the network and its tokenizer as a Hugging Face folder (``from_pretrained``-ready)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(out))
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(out))
        return out


__all__ = ["MultitaskGenerator"]
