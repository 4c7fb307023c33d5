"""A decomposition backend on a local Hugging Face causal LM (LLaMA-2 on a GPU, a tiny LLaMA in tests).

One code path for both: the tokenizer and the model are loaded with
:func:`~kbqa_lit.backbones.causal.build_causal_tokenizer` and
:func:`~kbqa_lit.backbones.causal.build_causal_lm` (a hub name or a local folder written
by ``save_pretrained``) on first use. Prompts are encoded in batches with left padding (so every
prompt ends where generation starts), decoded greedily, and only the new tokens are returned,
cut at the first stop string.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from kbqa_lit.llm.backends import DecompositionBackend, GenerationOutcome

log = logging.getLogger(__name__)

DEFAULT_STOP = ("Decompose the question",)
#: ``(tokenizer, indices of the batch's prompts, prompt length in tokens) -> LogitsProcessor``: a
#: constraint for one batch (e.g. :class:`~kbqa_lit.decoding.char_constraint.CharConstraintProcessor`),
#: built by the caller, which knows what each prompt may be answered with.
ConstraintFactory = Callable[[Any, Sequence[int], int], Any]


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """Cut ``text`` at the first occurrence of any stop string."""
    cut = len(text)
    for s in stop:
        if s:
            at = text.find(s)
            if at >= 0:
                cut = min(cut, at)
    return text[:cut]


class HFCausalLMBackend(DecompositionBackend):
    """Greedy, batched decompositions from a local causal LM.

    Args:
        model: Hub name (``meta-llama/Llama-2-7b-hf``) or a folder saved with ``save_pretrained``.
        tokenizer: Tokenizer name or folder (``None``: the model's).
        max_new_tokens: Maximum number of generated tokens per decomposition.
        batch_size: Prompts per forward pass.
        stop: Stop strings; generation of a sequence ends at the first one, and it is cut from the
            text. ``None``: the decomposition prompt's (handed over by the run), else the next
            case's header.
        torch_dtype: Weight dtype (``bfloat16``, ``float16``, ``float32``; ``None``: the checkpoint's).
        device: ``cuda``, ``cuda:1``, ``cpu``... (``None``: CUDA when available, else CPU).
        max_prompt_tokens: Prompts longer than this are cut from the left (``None``: the model's
            context size).
    """

    kind = "hf-causal-lm"

    def __init__(
        self,
        model: str = "meta-llama/Llama-2-7b-hf",
        tokenizer: str | None = None,
        max_new_tokens: int = 256,
        batch_size: int = 8,
        stop: list[str] | None = None,
        torch_dtype: str | None = None,
        device: str | None = None,
        max_prompt_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.tokenizer_name = tokenizer
        self.max_new_tokens = max_new_tokens
        self.batch_size = max(1, batch_size)
        self.stop = list(DEFAULT_STOP if stop is None else stop)
        #: Whether ``stop`` was given (else the decomposition prompt's stop strings replace the default).
        self.stop_given = stop is not None
        self.torch_dtype = torch_dtype
        self.device = device
        self.max_prompt_tokens = max_prompt_tokens
        self._lm: Any = None
        self._tok: Any = None

    @property
    def model_name(self) -> str:
        """The model's hub name or folder."""
        return self.model

    def generation_settings(self) -> dict[str, Any]:
        """Greedy decoding, max new tokens, stop strings, dtype and tokenizer."""
        return {
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
            "stop": self.stop,
            "torch_dtype": self.torch_dtype,
            "tokenizer": self.tokenizer_name,
            "max_prompt_tokens": self.max_prompt_tokens,
        }

    def load(self) -> None:
        """Load the tokenizer and the model (done on the first :meth:`generate_outcomes`)."""
        if self._lm is not None:
            return
        import torch

        from kbqa_lit.backbones.causal import build_causal_lm, build_causal_tokenizer

        tok = build_causal_tokenizer(self.tokenizer_name or self.model)
        tok.padding_side = "left"
        lm = build_causal_lm(self.model, tokenizer=tok, torch_dtype=self.torch_dtype)
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        lm.to(device)
        lm.eval()
        self._tok, self._lm = tok, lm
        log.info("loaded %s on %s", self.model, device)

    def _generate_batch(self, prompts: list[str], constrain: Callable[[Any, int], Any] | None = None) -> list[str]:
        import torch
        from transformers import LogitsProcessorList

        tok, lm = self._tok, self._lm
        kwargs: dict[str, Any] = {}
        if self.max_prompt_tokens is not None:
            tok.truncation_side = "left"
            kwargs = {"truncation": True, "max_length": self.max_prompt_tokens}
        enc = tok(prompts, return_tensors="pt", padding=True, **kwargs).to(lm.device)
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": False,
            "num_beams": 1,
            "pad_token_id": tok.pad_token_id,
            "eos_token_id": tok.eos_token_id,
        }
        if self.stop:
            gen_kwargs.update(stop_strings=self.stop, tokenizer=tok)
        if constrain is not None:
            gen_kwargs["logits_processor"] = LogitsProcessorList([constrain(tok, enc["input_ids"].shape[1])])
        with torch.inference_mode():
            out = lm.generate(**enc, **gen_kwargs)
        new = out[:, enc["input_ids"].shape[1] :]
        texts = tok.batch_decode(new, skip_special_tokens=True)
        return [cut_at_stop(t, self.stop) for t in texts]

    def generate_outcomes(
        self, prompts: Sequence[str], constrain: ConstraintFactory | None = None
    ) -> list[GenerationOutcome]:
        """Generate greedily in batches of ``batch_size``; outcomes in prompt order.

        Args:
            prompts: The prompts.
            constrain: A constraint per batch (:data:`ConstraintFactory`; ``None``: free decoding).
        """
        prompts = list(prompts)
        if not prompts:
            return []
        self.load()
        texts: list[str] = []
        for i in range(0, len(prompts), self.batch_size):
            idx = range(i, min(i + self.batch_size, len(prompts)))
            batch_constraint = None if constrain is None else (lambda tok, n, idx=idx: constrain(tok, idx, n))
            texts.extend(self._generate_batch(prompts[i : i + self.batch_size], batch_constraint))
        return [GenerationOutcome(t) for t in texts]

    def close(self) -> None:
        """Drop the model and the tokenizer."""
        self._lm = self._tok = None

    def __repr__(self) -> str:
        return f"HFCausalLMBackend({self.model!r})"


__all__ = ["HFCausalLMBackend", "cut_at_stop"]
