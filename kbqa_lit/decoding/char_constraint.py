"""Decoding constrained by a character automaton, with a token mask per automaton state, cached.

:class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor` reads tokens as words of a Metaspace
tokenizer (``▁`` starts a word), which fits S-expressions and T5/LLaMA-2 tokenizers. Outputs with
a fixed structure of punctuation — JSON such as Keqing's decompositions — and byte-level BPE
tokenizers (GPT-2 style: the project's tiny causal LMs, LLaMA-3, Qwen) fit a character automaton
better: :class:`CharConstraintProcessor` lets a causal LM generate only strings its automaton
accepts, whatever the tokenizer.

How. :func:`token_texts` gives each token's text as it reads *after* other text (decoding the token
behind an anchor token and cutting the anchor off, so a sentencepiece ``▁`` or a byte-level ``Ġ``
becomes its space). For an automaton state, a token is allowed when its characters walk the
automaton without leaving it; EOS is allowed when the state accepts. The mask of a state is
computed once (tokens grouped by first character: only those whose first character the state
takes are walked) and cached with the state the token leads to, so a step costs one dictionary
look-up per row once the states repeat — the per-state token masks of Outlines-style engines. A row
with no allowed token may only end (EOS), so no row is all ``-inf``. Rows are tracked by their
generated token ids (``input_ids`` after the prompt), as in greedy search or beam search.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Protocol

import torch
from transformers import LogitsProcessor, PreTrainedTokenizerBase

from kbqa_lit.decoding.processor import masked_scores

_DEAD = ("<dead>",)


class CharAutomaton(Protocol):
    """A deterministic automaton over characters with hashable states."""

    def start(self) -> Hashable:
        """The state before the first character."""
        ...

    def step(self, state: Hashable, char: str) -> Hashable | None:
        """The state after ``char`` (``None``: not allowed)."""
        ...

    def accepts(self, state: Hashable) -> bool:
        """Whether generation may end in ``state``."""
        ...


def token_texts(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """Each token's text as it reads after other text (``""`` for special and unreadable tokens)."""
    special = set(tokenizer.all_special_ids)
    anchor = tokenizer("a", add_special_tokens=False)["input_ids"]
    head = tokenizer.decode(anchor)
    out: list[str] = []
    for i in range(len(tokenizer)):
        if i in special:
            out.append("")
            continue
        text = tokenizer.decode([*anchor, i])
        out.append(text[len(head) :] if text.startswith(head) and "\ufffd" not in text else "")
    return out


class CharConstraintProcessor(LogitsProcessor):
    """Mask the tokens that would leave each row's automaton (see the module docstring).

    Args:
        tokenizer: The model's tokenizer (its token texts are read once per processor).
        automata: One automaton per example of the batch, or one for all.
        prompt_length: Leading tokens of every row that were not generated (the padded prompt).
        num_beams: Beams per example (rows are ``example * num_beams + beam``).
        texts: The token texts, when already read (:func:`token_texts`), to share across batches.
        tables: A cache of state masks to share across batches (the processors of one run over the
            same automata objects), else a fresh one.

    Raises:
        ValueError: When no automaton is given.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        automata: CharAutomaton | Sequence[CharAutomaton],
        prompt_length: int,
        num_beams: int = 1,
        texts: list[str] | None = None,
        tables: dict[int, dict[Hashable, tuple[torch.Tensor, dict[int, Hashable]]]] | None = None,
    ) -> None:
        self.automata = [automata] if hasattr(automata, "step") else list(automata)  # type: ignore[arg-type]
        if not self.automata:
            raise ValueError("CharConstraintProcessor needs at least one automaton")
        self.texts = texts if texts is not None else token_texts(tokenizer)
        self.vocab = len(self.texts)
        self.eos_id = int(tokenizer.eos_token_id)  # type: ignore[arg-type]
        self.prompt_length = int(prompt_length)
        self.num_beams = max(1, int(num_beams))
        self._by_first: dict[str, list[int]] = defaultdict(list)
        for i, text in enumerate(self.texts):
            if text:
                self._by_first[text[0]].append(i)
        #: Per automaton (by id): state → (mask, {allowed token: next state}).
        self._tables = tables if tables is not None else {}
        self._rows: dict[tuple[int, tuple[int, ...]], Hashable] = {}

    def _walk(self, automaton: CharAutomaton, state: Hashable, text: str) -> Hashable | None:
        for char in text:
            state = automaton.step(state, char)
            if state is None:
                return None
        return state

    def table(self, automaton: CharAutomaton, state: Hashable) -> tuple[torch.Tensor, dict[int, Hashable]]:
        """The allowed-token mask of ``state`` and the state each allowed token leads to (cached)."""
        cache = self._tables.setdefault(id(automaton), {})
        found = cache.get(state)
        if found is None:
            moves: dict[int, Hashable] = {}
            if state is not _DEAD:
                for first, ids in self._by_first.items():
                    if automaton.step(state, first) is None:
                        continue
                    for i in ids:
                        nxt = self._walk(automaton, state, self.texts[i])
                        if nxt is not None:
                            moves[i] = nxt
            mask = torch.zeros(max(self.vocab, self.eos_id + 1), dtype=torch.bool)
            if moves:
                mask[torch.as_tensor(list(moves), dtype=torch.long)] = True
            if state is _DEAD or not moves or automaton.accepts(state):
                mask[self.eos_id] = True
            found = cache[state] = (mask, moves)
        return found

    def _state(self, row: int, seq: tuple[int, ...]) -> Hashable:
        automaton = self._automaton(row)
        key = (row // self.num_beams, seq)
        found = self._rows.get(key)
        if found is not None:
            return found
        prev = self._rows.get((key[0], seq[:-1])) if seq else None
        if prev is None:  # replay from the start (the first step, or a prefix beam search pruned)
            state: Hashable = automaton.start()
            for tok in seq:
                state = self.table(automaton, state)[1].get(tok, _DEAD)
            return state
        return self.table(automaton, prev)[1].get(seq[-1], _DEAD)

    def _automaton(self, row: int) -> CharAutomaton:
        if len(self.automata) == 1:
            return self.automata[0]
        example = row // self.num_beams
        if example >= len(self.automata):
            raise ValueError(f"row {row} belongs to example {example}, but only {len(self.automata)} automata")
        return self.automata[example]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Set the scores of disallowed tokens to ``-inf``."""
        rows: dict[tuple[int, tuple[int, ...]], Hashable] = {}
        masks = []
        for r, ids in enumerate(input_ids.tolist()):
            seq = tuple(ids[self.prompt_length :])
            state = self._state(r, seq)
            rows[(r // self.num_beams, seq)] = state
            masks.append(self.table(self._automaton(r), state)[0])
        self._rows = rows
        return masked_scores(scores, torch.stack(masks))


__all__ = ["CharAutomaton", "CharConstraintProcessor", "token_texts"]
