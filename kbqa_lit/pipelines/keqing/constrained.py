"""Keqing's decomposer under the shared constrained decoding (the ``constrained_decoding`` extension).

The paper's decomposer (a LoRA-tuned LLaMA) writes its JSON freely; a small or undertrained one writes
lists that do not parse or sub-questions in words no template has, and each is a decomposition
failure. With the extension, generation is constrained by
:class:`~kbqa_lit.data.keqing.decomposition_grammar.DecompositionAutomaton` through
:class:`~kbqa_lit.decoding.char_constraint.CharConstraintProcessor`: every output is a well-formed
decomposition whose sub-questions are the wordings the decomposer was trained to write (each step's
first template, :meth:`~kbqa_lit.data.keqing.templates.TemplateBank.step_template`; chain texts for
``target: chains``) and whose seeds are the question's entity seeds or earlier answers. It needs a
local model (:class:`~kbqa_lit.llm.hf_backend.HFCausalLMBackend`); a served one has no logits here.
There is no token-budget guard: an output that ``max_new_tokens`` cuts before its closing ``]`` is
parsed as the decomposer's outputs always are (closed when truncated, or recorded as a failure).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

import torch

from kbqa_lit.data.keqing.decomposition_grammar import DecompositionAutomaton
from kbqa_lit.data.keqing.templates import TemplateBank
from kbqa_lit.decoding.char_constraint import CharConstraintProcessor, token_texts
from kbqa_lit.errors import UserInputError
from kbqa_lit.llm.hf_backend import ConstraintFactory, HFCausalLMBackend


def decomposition_texts(bank: TemplateBank, target: Literal["subquestions", "chains"] = "subquestions") -> list[str]:
    """What the decomposer writes as sub-question texts: each step's first wording, or its chain text."""
    return [ts[0] for ts in bank.steps.values() if ts] if target == "subquestions" else list(bank.steps)


class ConstrainedDecomposer:
    """Builds the per-batch constraint of a decomposer (see the module docstring).

    Args:
        bank: The template bank the decomposer was trained with.
        target: ``subquestions`` or ``chains`` (as in training).
        max_subquestions: Most sub-questions per decomposition (default: the bank's longest chain).

    Raises:
        UserInputError: When the bank has no step to word a sub-question with.
    """

    def __init__(
        self,
        bank: TemplateBank,
        target: Literal["subquestions", "chains"] = "subquestions",
        max_subquestions: int | None = None,
    ) -> None:
        self.texts = decomposition_texts(bank, target)
        if not self.texts:
            raise UserInputError("constrained_decoding: the template bank has no step to word a sub-question with")
        longest = max((len(c) for cs in bank.chains.values() for c in cs), default=1)
        self.max_subquestions = int(max_subquestions or max(1, longest))
        self._automata: dict[tuple[str, ...], DecompositionAutomaton] = {}
        self._token_texts: dict[int, list[str]] = {}
        self._tables: dict[int, dict[Hashable, tuple[torch.Tensor, dict[int, Hashable]]]] = {}

    def automaton(self, entity_seeds: Sequence[str]) -> DecompositionAutomaton:
        """The automaton of a question with these entity seeds (``[E0]`` when it has none), cached."""
        key = tuple(entity_seeds) or ("[E0]",)
        found = self._automata.get(key)
        if found is None:
            found = self._automata[key] = DecompositionAutomaton(self.texts, key, self.max_subquestions)
        return found

    def factory(self, entity_seeds: Sequence[Sequence[str]]) -> ConstraintFactory:
        """The constraint of a call whose ``i``-th prompt has ``entity_seeds[i]``."""

        def build(tokenizer: Any, indices: Sequence[int], prompt_length: int) -> CharConstraintProcessor:
            texts = self._token_texts.get(id(tokenizer))
            if texts is None:
                texts = self._token_texts[id(tokenizer)] = token_texts(tokenizer)
            automata = [self.automaton(entity_seeds[i]) for i in indices]
            return CharConstraintProcessor(tokenizer, automata, prompt_length, texts=texts, tables=self._tables)

        return build

    @staticmethod
    def check_backend(backend: object) -> HFCausalLMBackend:
        """The backend, when it can decode under a constraint.

        Raises:
            UserInputError: For a served backend (no logits to constrain here).
        """
        if not isinstance(backend, HFCausalLMBackend):
            raise UserInputError(
                f"constrained_decoding needs a local decomposer (HFCausalLMBackend), not {type(backend).__name__}: "
                "a served model returns text, not logits"
            )
        return backend


__all__ = ["ConstrainedDecomposer", "decomposition_texts"]
