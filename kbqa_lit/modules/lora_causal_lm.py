"""``LoraCausalLM``: a causal LM fine-tuned with LoRA (peft) on instruction data (TFS-KBQA, Keqing's decomposer).

The base is a hub model or local folder (``meta-llama/Llama-2-7b-hf``, ``-13b-hf``, a merged
model from ``kbqa lora merge``) or a tiny LLaMA built from a config (tests, CPU configs); the
same code path serves both. peft wraps the base with LoRA adapters on ``target_modules``; only
they train (AdamW, lr 3e-4 as in the paper). Batches come from
:class:`~kbqa_lit.datamodules.tfs.instruction.InstructionDataModule`; the loss is the token-level
cross-entropy over the response tokens (labels ``-100`` elsewhere), logged as ``train/loss``,
``val/loss``, ``test/loss`` and, with several tasks in a batch, per task (``val/loss_s1``...).

**Checkpoints hold only the adapter.** :meth:`on_save_checkpoint` keeps the LoRA weights in
``checkpoint["state_dict"]`` (the optimiser state only ever covers them), with the tokenizer's
files and the base's config; loading restores the adapter onto a base rebuilt from the
hyper-parameters (a built base is re-drawn from ``init_seed``; a checksum catches a mismatch).
:meth:`save_adapter` writes a peft adapter folder (``save_pretrained``) with the tokenizer and
``kbqa_lora.json`` (the hyper-parameters; a built base is saved under ``base/`` too), and
:meth:`from_adapter` loads one back. The module never calls a knowledge base: pipelines call
:meth:`generate`, which decodes only the response part.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from peft import LoraConfig, PeftModel, get_peft_model
from torch.nn.modules.module import _IncompatibleKeys
from transformers import (
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from kbqa_lit.backbones.causal import build_causal_lm, build_causal_tokenizer
from kbqa_lit.backbones.common import tokenizer_files, tokenizer_from_files
from kbqa_lit.errors import check_choice
from kbqa_lit.modules.training_setup import adamw_with_warmup, eval_mode

log = logging.getLogger(__name__)

#: Names of the ``task`` ids that instruction batches carry (TFS-KBQA's tasks in the order of
#: ``kbqa_lit.data.tfs.prompts.TASKS``, which a test keeps equal): per-task losses and prediction rows.
TASK_NAMES: tuple[str, ...] = ("s1", "s2_items", "s2_lf", "s3")
ADAPTER_META = "kbqa_lora.json"
BASE_SUBDIR = "base"
_LORA_MARK = ".lora_"


def is_adapter_key(key: str) -> bool:
    """Whether a state-dict key belongs to a LoRA adapter (``...lora_A.default.weight``)."""
    return _LORA_MARK in key or key.startswith("lora_")


@contextlib.contextmanager
def gathered(params: Iterable[torch.nn.Parameter]) -> Iterator[None]:
    """Gather ZeRO-3 partitioned parameters for reading (a no-op for ordinary parameters)."""
    partitioned = [p for p in params if hasattr(p, "ds_id")]
    if not partitioned:
        yield
        return
    import deepspeed

    with deepspeed.zero.GatheredParameters(partitioned, modifier_rank=None):
        yield


def enable_checkpointing(model: PreTrainedModel) -> None:
    """Turn on activation (gradient) checkpointing, non-reentrant (works with frozen inputs)."""
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def checkpointing_enabled(model: PreTrainedModel) -> bool:
    """Whether activation (gradient) checkpointing is on."""
    flag = getattr(type(model), "is_activation_checkpointing", None)
    return bool(model.is_activation_checkpointing if flag is not None else model.is_gradient_checkpointing)


class LoraCausalLM(LightningModule):
    """A causal LM with LoRA adapters, trained on response tokens only.

    Args:
        model_name_or_path: Hub name or local folder of the base (``meta-llama/Llama-2-7b-hf``,
            or a merged model's folder for continued training); ``None`` builds a tiny LLaMA
            from ``model_config``.
        model_config: LLaMA config fields. Without ``model_name_or_path``: on top of the tiny
            LLaMA (2 layers, hidden 64, 4 heads, intermediate 128); with it: overrides of the
            pretrained config.
        tokenizer: The tokenizer (linked from ``data.tokenizer`` by the CLI); sizes a built
            model's vocabulary and decodes generations. ``None`` loads it from
            ``model_name_or_path`` when given (a checkpoint restores its own).
        adapter_path: A saved adapter folder to start from (continue training it, or evaluate);
            ``None`` starts a fresh LoRA.
        lora_r: LoRA rank r.
        lora_alpha: LoRA scaling α (the update is scaled by α / r).
        lora_dropout: Dropout on the LoRA input.
        target_modules: Module names that get adapters (default ``["q_proj", "v_proj"]``; add
            ``k_proj``, ``o_proj``, ``gate_proj``, ``up_proj``, ``down_proj`` for more capacity).
        learning_rate: Peak AdamW learning rate (paper: 3e-4).
        weight_decay: AdamW weight decay on the adapter weights.
        warmup_steps: Linear warm-up steps; 0 uses ``warmup_ratio``.
        warmup_ratio: Warm-up as a share of all optimiser steps (when ``warmup_steps`` is 0).
        scheduler: ``linear`` (warm-up, then linear decay to 0) or ``constant`` (after warm-up).
        gradient_checkpointing: Recompute activations in the backward pass (less memory, ≈ 30 %
            slower; use it for 7B/13B bases).
        torch_dtype: Dtype the base is loaded in (``bfloat16`` on GPUs; ``None``: the checkpoint's,
            float32 for a built model).
        init_seed: Seed of a built base's random weights (the same seed rebuilds the same base).
        num_beams: Default beam width of :meth:`generate` and ``predict``.
        max_new_tokens: Default longest generation.
    """

    def __init__(
        self,
        model_name_or_path: str | None = None,
        model_config: dict[str, Any] | None = None,
        tokenizer: Any = None,
        adapter_path: str | None = None,
        lora_r: int = 8,
        lora_alpha: int = 16,
        lora_dropout: float = 0.05,
        target_modules: list[str] | None = None,
        learning_rate: float = 3e-4,
        weight_decay: float = 0.0,
        warmup_steps: int = 0,
        warmup_ratio: float = 0.0,
        scheduler: str = "linear",
        gradient_checkpointing: bool = False,
        torch_dtype: str | None = None,
        init_seed: int = 0,
        num_beams: int = 1,
        max_new_tokens: int = 128,
    ) -> None:
        super().__init__()
        check_choice("scheduler", scheduler, ("linear", "constant"))
        self.save_hyperparameters(ignore=["tokenizer"])
        if tokenizer is None and model_name_or_path is not None:
            try:
                tokenizer = build_causal_tokenizer(model_name_or_path)
            except (OSError, ValueError) as exc:  # no tokenizer there; a checkpoint may bring one
                log.warning("no tokenizer at %s (%s)", model_name_or_path, exc)
        self.tokenizer: PreTrainedTokenizerBase | None = tokenizer
        self.model = self._build(tokenizer)

    # ------------------------------------------------------------------ construction

    def _build(self, tokenizer: PreTrainedTokenizerBase | None) -> PeftModel:
        hp = self.hparams
        base = build_causal_lm(
            hp.model_name_or_path,
            config=hp.model_config,
            tokenizer=tokenizer,
            torch_dtype=hp.torch_dtype,
            init_seed=hp.init_seed,
        )
        if hp.gradient_checkpointing:
            enable_checkpointing(base)
        if hp.adapter_path:
            return PeftModel.from_pretrained(base, str(hp.adapter_path), is_trainable=True)
        config = LoraConfig(
            task_type="CAUSAL_LM",
            r=hp.lora_r,
            lora_alpha=hp.lora_alpha,
            lora_dropout=hp.lora_dropout,
            target_modules=list(hp.target_modules or ["q_proj", "v_proj"]),
            bias="none",
        )
        return get_peft_model(base, config)

    @property
    def built_base(self) -> bool:
        """Whether the base was built from a config (random weights from ``init_seed``)."""
        return self.hparams.model_name_or_path is None

    def adapter_state_dict(self) -> dict[str, torch.Tensor]:
        """The LoRA weights, keyed as in this module's state dict."""
        return {k: v for k, v in self.state_dict().items() if is_adapter_key(k)}

    def base_state_dict(self) -> dict[str, torch.Tensor]:
        """The base weights without adapters, keyed as in the bare base model (``model.layers...``)."""
        out: dict[str, torch.Tensor] = {}
        for key, value in self.model.get_base_model().state_dict().items():
            if not is_adapter_key(key):
                out[key.replace(".base_layer.", ".")] = value
        return out

    def base_checksum(self) -> float:
        """Sum of the base weights (float64): identifies a built base's random draw."""
        with torch.no_grad():
            return float(sum(v.double().sum() for v in self.base_state_dict().values()))

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Load weights; an adapter-only state dict (as checkpoints hold) leaves the base as it is.

        With ``strict``, a missing or unexpected LoRA weight (or, for a full state dict, any
        weight) raises.
        """
        adapter_only = bool(state_dict) and all(is_adapter_key(k) for k in state_dict)
        result = super().load_state_dict(state_dict, strict=False, assign=assign)
        missing = [k for k in result.missing_keys if is_adapter_key(k) or not adapter_only]
        if strict and (missing or result.unexpected_keys):
            raise RuntimeError(
                f"state dict does not fit LoraCausalLM: missing {missing[:5]}, unexpected "
                f"{list(result.unexpected_keys)[:5]}"
            )
        return _IncompatibleKeys(missing, list(result.unexpected_keys))

    # ------------------------------------------------------------------ losses

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits of the causal LM (batch, length, vocabulary)."""
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    def compute_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``{"loss"}`` (mean cross-entropy over response tokens) and ``loss_<task>`` per task present."""
        logits = self(batch["input_ids"], batch["attention_mask"])[:, :-1].float()
        labels = batch["labels"][:, 1:]
        mask = labels != -100
        token_loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100, reduction="none"
        ).view_as(labels)
        row_sum, row_n = (token_loss * mask).sum(dim=1), mask.sum(dim=1)
        losses = {"loss": row_sum.sum() / row_n.sum().clamp(min=1)}
        tasks = batch.get("task")
        if tasks is not None and len(set(tasks.tolist())) > 1:
            for t in sorted(set(tasks.tolist())):
                sel = tasks == t
                if bool(row_n[sel].sum() > 0):
                    losses[f"loss_{TASK_NAMES[t]}"] = row_sum[sel].sum() / row_n[sel].sum()
        return losses

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Response-token cross-entropy; logs ``train/loss`` (and per task)."""
        losses = self.compute_losses(batch)
        bs = batch["input_ids"].shape[0]
        for name, value in losses.items():
            self.log(f"train/{name}", value, prog_bar=name == "loss", batch_size=bs, on_epoch=True)
        return losses["loss"]

    def _eval_step(self, batch: dict[str, torch.Tensor], stage: str) -> None:
        if not bool((batch["labels"] != -100).any()):
            return  # no gold in this batch (generation-only rows)
        bs = batch["input_ids"].shape[0]
        for name, value in self.compute_losses(batch).items():
            # per-task losses stay rank-local: a rank may see no row of some task (no collective then)
            self.log(
                f"{stage}/{name}",
                value,
                on_epoch=True,
                sync_dist=name == "loss",
                prog_bar=name == "loss",
                batch_size=bs,
            )

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Log ``val/loss`` (and per task)."""
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Log ``test/loss`` (and per task)."""
        self._eval_step(batch, "test")

    def predict_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, Any]:
        """Generated responses per row: ``{"index", "task", "texts"}`` (beams, best first)."""
        beams = self.generate(batch)
        tasks = batch.get("task")
        return {
            "index": batch["index"].tolist() if "index" in batch else list(range(len(beams))),
            "task": [TASK_NAMES[t] for t in tasks.tolist()] if isinstance(tasks, torch.Tensor) else tasks,
            "texts": beams,
        }

    # ------------------------------------------------------------------ generation

    @torch.no_grad()
    def generate(
        self,
        batch: dict[str, Any],
        num_beams: int | None = None,
        num_return_sequences: int | None = None,
        max_new_tokens: int | None = None,
    ) -> list[list[str]]:
        """Beam-search the responses of a batch's prompts.

        Args:
            batch: ``prompt_input_ids``/``prompt_attention_mask`` (left-padded, as the
                datamodule and :meth:`InstructionEncoder.prompt_batch` build them), or
                ``input_ids``/``attention_mask`` holding prompts only.
            num_beams: Beam width (default the ``num_beams`` hyper-parameter).
            num_return_sequences: Responses per prompt (default: ``num_beams``).
            max_new_tokens: Longest response (default the ``max_new_tokens`` hyper-parameter).

        Returns:
            Per prompt, the decoded responses in beam order (prompt and special tokens left out,
            whitespace normalised).

        Raises:
            ValueError: When ``num_return_sequences`` exceeds ``num_beams``.
        """
        if self.tokenizer is None:
            raise RuntimeError("LoraCausalLM has no tokenizer: pass one (or load a checkpoint)")
        beams = int(num_beams or self.hparams.num_beams)
        n = int(num_return_sequences or beams)
        if n > beams:
            raise ValueError(f"num_return_sequences ({n}) > num_beams ({beams})")
        key = "prompt_input_ids" if "prompt_input_ids" in batch else "input_ids"
        ids = batch[key].to(self.device)
        mask = batch[key.replace("input_ids", "attention_mask")].to(self.device)
        with eval_mode(self.model):
            seqs = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                num_beams=beams,
                num_return_sequences=n,
                max_new_tokens=int(max_new_tokens or self.hparams.max_new_tokens),
                do_sample=False,
                use_cache=True,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.tokenizer.eos_token_id,
                **({"early_stopping": True} if beams > 1 else {}),
            )
        texts = self.tokenizer.batch_decode(seqs[:, ids.shape[1] :], skip_special_tokens=True)
        texts = [" ".join(t.split()) for t in texts]
        return [texts[i * n : (i + 1) * n] for i in range(ids.shape[0])]

    def generate_lf(
        self,
        batch: dict[str, Any],
        num_beams: int = 5,
        num_return_sequences: int = 5,
        max_new_tokens: int = 128,
    ) -> list[list[str]]:
        """:meth:`generate` under the name ``ExecutionGuidedEval`` calls (S1-only evaluation)."""
        return self.generate(batch, num_beams, num_return_sequences, max_new_tokens)

    # ------------------------------------------------------------------ optimisation

    def configure_optimizers(self) -> dict[str, Any]:
        """AdamW over the adapter weights + warm-up, then linear decay (or constant)."""
        hp = self.hparams
        return adamw_with_warmup(
            self,
            [p for p in self.parameters() if p.requires_grad],
            hp.learning_rate,
            weight_decay=hp.weight_decay,
            warmup_steps=hp.warmup_steps,
            warmup_ratio=hp.warmup_ratio,
            linear=hp.scheduler == "linear",
        )

    # ------------------------------------------------------------------ checkpoints

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep only the adapter weights; add the tokenizer files, the base config and checksum."""
        state = checkpoint.get("state_dict")
        if isinstance(state, dict):
            checkpoint["state_dict"] = {k: v for k, v in state.items() if is_adapter_key(k)}
        checkpoint["adapter_only"] = True
        checkpoint["model_config"] = self.model.get_base_model().config.to_dict()
        if self.built_base:
            checkpoint["base_checksum"] = self.base_checksum()
        if self.tokenizer is not None:
            checkpoint["tokenizer_files"] = tokenizer_files(self.tokenizer)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the tokenizer, rebuild a built base of another size, and check the adapter keys."""
        files = checkpoint.get("tokenizer_files")
        if self.tokenizer is None and files:
            self.tokenizer = tokenizer_from_files(files)
        stored = checkpoint.get("model_config") or {}
        current = self.model.get_base_model().config
        if self.built_base and stored.get("vocab_size") not in (None, current.vocab_size):
            self.model = self._build(self.tokenizer)
        if self.built_base and "base_checksum" in checkpoint:
            expected, found = float(checkpoint["base_checksum"]), self.base_checksum()
            if not math.isclose(expected, found, rel_tol=1e-5, abs_tol=1e-3):
                log.warning(
                    "the rebuilt base differs from the checkpoint's (checksum %.6f vs %.6f): another "
                    "init_seed or torch version? Save the base with save_adapter() to pin it.",
                    found,
                    expected,
                )
        if checkpoint.get("adapter_only"):
            own = {k for k in self.state_dict() if is_adapter_key(k)}
            saved = set(checkpoint.get("state_dict", {}))
            if saved != own:
                raise ValueError(
                    f"the checkpoint's adapter does not fit this model: {len(saved - own)} unexpected "
                    f"and {len(own - saved)} missing LoRA weights (other r or target_modules?)"
                )

    # ------------------------------------------------------------------ adapter folders

    def save_adapter(self, out_dir: str | Path, *, save_base: bool | None = None, write: bool = True) -> Path:
        """Write the adapter (peft ``save_pretrained``), the tokenizer and ``kbqa_lora.json``.

        Under DeepSpeed ZeRO-3 every rank must call this (the LoRA weights are gathered); only
        ranks with ``write=True`` (the global zero) write.

        Args:
            out_dir: The adapter folder.
            save_base: Also save the base under ``base/`` (default: only for a built base).
            write: Whether this process writes the files.

        Returns:
            ``out_dir`` as a :class:`~pathlib.Path`.
        """
        out = Path(out_dir)
        with_base = bool(save_base or (save_base is None and self.built_base))
        # Under ZeRO-3 the base weights are partitioned too: gather them when they are read
        # (checksum of a built base, base export); a hub base is never exported, so only the
        # LoRA weights are gathered for it.
        needs_base = with_base or self.built_base
        params = [p for n, p in self.named_parameters() if needs_base or is_adapter_key(n)]
        meta = {"class": "LoraCausalLM", "hparams": dict(self.hparams), "base_dir": None}
        with gathered(params):
            if write:
                out.mkdir(parents=True, exist_ok=True)
                # embeddings are copied only when the build grew a pretrained vocabulary
                resized = bool(getattr(self.model.get_base_model(), "kbqa_resized_vocab", False))
                self.model.save_pretrained(str(out), save_embedding_layers=resized)
                if self.built_base:
                    meta["base_checksum"] = self.base_checksum()
                if with_base:
                    self.export_base(out / BASE_SUBDIR)
                    meta["base_dir"] = BASE_SUBDIR
        if not write:
            return out
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(out))
        (out / ADAPTER_META).write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")
        return out

    def export_base(self, out_dir: str | Path) -> Path:
        """Save the base without adapters (and the tokenizer) as a ``from_pretrained`` folder."""
        base = self.model.get_base_model()
        fresh: PreTrainedModel = type(base)(base.config)
        fresh.load_state_dict(self.base_state_dict(), strict=True)
        fresh.generation_config = base.generation_config
        fresh.save_pretrained(str(out_dir))
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(out_dir))
        return Path(out_dir)

    @classmethod
    def from_adapter(cls, adapter_dir: str | Path, base: str | None = None, **overrides: Any) -> LoraCausalLM:
        """Load a folder written by :meth:`save_adapter` (or any peft LoRA folder with ``base``).

        Args:
            adapter_dir: The adapter folder.
            base: Base model name or folder; default the one recorded in ``kbqa_lora.json``
                (its saved ``base/`` for a built base).
            **overrides: Constructor arguments to change (``torch_dtype``, ``num_beams``...).
        """
        adapter = Path(adapter_dir)
        meta_path = adapter / ADAPTER_META
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "tokenizer"}
        hp = {k: v for k, v in (meta.get("hparams") or {}).items() if k in accepted}
        if base is None and meta.get("base_dir"):
            base = str(adapter / meta["base_dir"])
        if base is None and not meta:  # a plain peft folder: its recorded base
            peft_config = adapter / "adapter_config.json"
            if peft_config.is_file():
                base = json.loads(peft_config.read_text(encoding="utf-8")).get("base_model_name_or_path")
            if base is None:
                raise ValueError(f"{adapter} names no base model: pass one")
        if base is not None:
            hp["model_name_or_path"] = base
            hp["model_config"] = None
        tokenizer = overrides.pop("tokenizer", None)
        if tokenizer is None and (adapter / "tokenizer_config.json").is_file():
            tokenizer = build_causal_tokenizer(str(adapter))
        hp.update(overrides)
        hp["adapter_path"] = str(adapter)
        return cls(tokenizer=tokenizer, **hp)


__all__ = ["ADAPTER_META", "BASE_SUBDIR", "TASK_NAMES", "LoraCausalLM", "gathered", "is_adapter_key"]
