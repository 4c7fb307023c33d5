"""The LLM backends of question decomposition: one interface, two implementations.

- :class:`~kbqa_lit.llm.hf_backend.HFCausalLMBackend`: a local Hugging Face causal LM
  (``meta-llama/Llama-2-7b-hf`` on a GPU, a tiny random LLaMA in tests), greedy, batched.
- :class:`~kbqa_lit.llm.openai_backend.OpenAICompatibleBackend`: any OpenAI-compatible
  HTTP server (vLLM, TGI, llama.cpp server, hosted APIs).

A backend turns prompts into texts. :meth:`DecompositionBackend.generate_outcomes` reports one
:class:`GenerationOutcome` per prompt (a per-prompt failure such as a timeout is recorded, not
raised); :meth:`DecompositionBackend.generate` returns the texts and raises when any failed.
Errors that make every further request pointless (bad credentials, an unreachable server) raise
:class:`DecompositionBackendError`. :attr:`DecompositionBackend.identity` names the backend kind,
the model and every generation setting that changes the text; it keys the decomposition cache.

The concrete classes live in their own modules (the HF one imports torch); they are re-exported
here lazily, so ``from kbqa_lit.llm.backends import OpenAICompatibleBackend`` does not load
torch.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbqa_lit.errors import KBQAError


class DecompositionBackendError(KBQAError):
    """A decomposition backend cannot serve any request (bad credentials, unreachable server, bad model)."""


@dataclass(frozen=True)
class GenerationOutcome:
    """What a backend produced for one prompt.

    Attributes:
        text: The generated text (only the new tokens), or ``None`` when the request failed.
        error: Why the request failed (``None`` on success).
    """

    text: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether a text was produced."""
        return self.text is not None


class DecompositionBackend(ABC):
    """Interface of an LLM that writes decompositions."""

    #: Short name of the backend kind, part of :attr:`identity`.
    kind: str = "backend"

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model's name (hub id, folder or server-side model name)."""

    @abstractmethod
    def generation_settings(self) -> dict[str, Any]:
        """Every setting that changes the generated text (max tokens, stop strings, mode...)."""

    @abstractmethod
    def generate_outcomes(self, prompts: Sequence[str]) -> list[GenerationOutcome]:
        """Generate one continuation per prompt, recording per-prompt failures.

        Raises:
            DecompositionBackendError: When no request can succeed (auth, unreachable server).
        """

    def generate(self, prompts: Sequence[str]) -> list[str]:
        """Generate one continuation per prompt (only the new text).

        Raises:
            DecompositionBackendError: When the backend fails, or any prompt failed.
        """
        outcomes = self.generate_outcomes(list(prompts))
        for i, out in enumerate(outcomes):
            if out.text is None:
                raise DecompositionBackendError(f"{self.kind} backend failed on prompt {i}: {out.error}")
        return [str(out.text) for out in outcomes]

    @property
    def identity(self) -> str:
        """Canonical JSON of kind, model and generation settings (the cache key's backend part)."""
        return json.dumps(
            {"kind": self.kind, "model": self.model_name, "settings": self.generation_settings()},
            sort_keys=True,
            ensure_ascii=False,
        )

    def set_default_stop(self, stop: Sequence[str]) -> None:
        """Use ``stop`` as the stop strings unless the backend was built with its own.

        The decomposition run hands over its prompt's stop strings (after the result line), so a
        config without ``stop`` stops where the prompt's cases end. Backends with a ``stop``
        attribute and a ``stop_given`` flag take them; others ignore the call.
        """
        if hasattr(self, "stop") and not getattr(self, "stop_given", True):
            self.stop = list(stop)

    def close(self) -> None:  # noqa: B027  (optional hook: most backends hold nothing)
        """Release resources (sessions, models); the default does nothing."""


_LAZY = {
    "HFCausalLMBackend": "kbqa_lit.llm.hf_backend",
    "OpenAICompatibleBackend": "kbqa_lit.llm.openai_backend",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DecompositionBackend",
    "DecompositionBackendError",
    "GenerationOutcome",
    "HFCausalLMBackend",  # noqa: F822  (lazy, see __getattr__)
    "OpenAICompatibleBackend",  # noqa: F822
]
