"""Grammar-constrained decoding: a batched ``transformers`` logits processor over a word grammar.

:class:`GrammarLogitsProcessor` lets beam search (any ``num_beams``, a batch of questions) emit
only prefixes of what a *word grammar* accepts, and end (EOS) only where the grammar says the
text is complete. The grammar is any object with the four methods of :class:`WordGrammar` —
in this project :class:`kbqa_lit.decoding.grammar.SExprGrammar` (normalised S-expressions), built by
the caller, since this floor imports nothing of the project.

Words and tokens. The project's tokenizers (and T5's sentencepiece) pre-tokenise on whitespace
with Metaspace: every word's first token starts with ``▁`` and the others do not, so a token
that starts with ``▁`` begins a new word, and a word's tokens do not depend on its neighbours
(an added token such as ``[E0]`` comes as ``▁`` + ``[E0]``). :class:`~kbqa_lit.decoding.tokens.TokenIndex` holds, per
tokenizer, each token's text, whether it starts a word, each closed word's token ids (its
*canonical* tokenisation, read in context after an anchor word) and, per open word class
(:class:`OpenWordClass`: numbers, free bracket text...), the tokens that may start or continue
such a word, as boolean masks.

Per row the processor keeps ``(grammar state, tokens of the unfinished word)``, derived from
``input_ids`` alone (beam search reorders rows; states are cached by the prefix of token ids,
and an unknown prefix is replayed from the start). The allowed next tokens of a state are

- the continuations of the unfinished word: children in a token-id trie of the allowed closed
  words (relations, labels, operators: a multi-token word is followed token by token), and
  tokens that keep an open word a valid prefix of its class;
- when the unfinished word is a whole allowed word: the tokens that start a word allowed after
  it, and EOS when the grammar is then complete.

Masks are cached per state and stacked into one ``[rows, vocab]`` boolean tensor per step; the
scores of disallowed tokens become ``-inf``. A row with no allowed token (a dead end, e.g. after
an invalid word) may only end: EOS stays allowed, so no row is all ``-inf``. Rows are
``batch_index * num_beams + beam``; each example may have its own grammar (its entity labels).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol

import torch
from transformers import LogitsProcessor, PreTrainedTokenizerBase

from kbqa_lit.decoding.option_masks import OptionMasks, option_masks
from kbqa_lit.decoding.tokens import OpenWordClass, TokenIndex, WordTrie

_DEAD = ("<dead>",)


class WordOptionsLike(Protocol):
    """The next words a grammar allows: ``words`` (closed) and ``open`` (classes)."""

    words: frozenset[str]
    open: tuple[OpenWordClass, ...]


class WordGrammar(Protocol):
    """A word-level incremental grammar with hashable states."""

    def start(self) -> Hashable:
        """The state before the first word."""
        ...

    def options(self, state: Hashable) -> WordOptionsLike:
        """The words allowed after ``state``."""
        ...

    def step(self, state: Hashable, word: str) -> Hashable | None:
        """The state after ``word``, ``None`` when it is not allowed."""
        ...

    def complete(self, state: Hashable) -> bool:
        """Whether generation may stop after ``state``."""
        ...


class _Tables:
    """Caches of one grammar: grammar steps, closings and masks per row state (masks from :class:`OptionMasks`)."""

    def __init__(self, grammar: WordGrammar, shared: OptionMasks) -> None:
        self.grammar = grammar
        self.shared = shared
        self.index = shared.index
        self.masks: dict[Any, torch.Tensor] = {}
        self.words: dict[Any, str | None] = {}
        self.steps: dict[Any, Hashable | None] = {}
        self.closings: dict[Any, tuple[int, ...] | None] = {}
        self.finishes: dict[Any, tuple[int, ...] | None] = {}
        self.budgeted: dict[Any, torch.Tensor] = {}
        self.reaches: dict[Any, int] = {}
        self.longests: dict[Any, int] = {}
        self._closing_word = getattr(grammar, "closing_word", None)

    def trie(self, opts: WordOptionsLike) -> WordTrie:
        return self.shared.trie(opts)

    def start_mask(self, opts: WordOptionsLike) -> torch.Tensor:
        """Tokens that begin a word allowed by ``opts``."""
        return self.shared.start_mask(opts)

    def step(self, gstate: Hashable, word: str) -> Hashable | None:
        """The grammar's state after ``word`` (memoised)."""
        key = (gstate, word)
        if key not in self.steps:
            self.steps[key] = self.grammar.step(gstate, word)
        return self.steps[key]

    def word(self, gstate: Hashable, wt: tuple[int, ...]) -> str | None:
        """The allowed word that the tokens ``wt`` spell in ``gstate`` (``None``: not a whole word)."""
        key = (gstate, wt)
        if key not in self.words:
            opts = self.grammar.options(gstate)
            trie = self.trie(opts)
            node = trie.walk(wt)
            word = trie.word[node] if node is not None else None
            if word is None:
                text = self.index.text_of(wt)
                word = text if any(c.word.fullmatch(text) for c in opts.open) else None
            self.words[key] = word
        return self.words[key]

    def advance(self, state: tuple[Any, ...], tok: int) -> tuple[Any, ...]:
        """The row state after one more token."""
        if state is _DEAD or tok >= len(self.index.text) or tok in self.index.special:
            return _DEAD
        gstate, wt = state
        if not self.index.is_start[tok]:
            return (gstate, wt + (tok,)) if wt else _DEAD
        if not wt:
            return (gstate, (tok,))
        word = self.word(gstate, wt)
        g2 = None if word is None else self.step(gstate, word)
        return _DEAD if g2 is None else (g2, (tok,))

    def closing(self, gstate: Hashable, limit: int = 400) -> tuple[int, ...] | None:
        """Tokens of the grammar's closing words from a word boundary, then EOS.

        Built one closing word at a time when the grammar has ``closing_word`` (each state on the
        way is memoised, so a new state costs one grammar step), else from ``closing``.
        """
        if gstate in self.closings:
            return self.closings[gstate]
        if self._closing_word is None:
            words = self.grammar.closing(gstate) if hasattr(self.grammar, "closing") else None
            ids = [self.index.word_ids(w) for w in words or ()]
            ok = words is not None and all(i is not None for i in ids)
            self.closings[gstate] = tuple(t for i in ids for t in i or ()) + (self.index.eos_id,) if ok else None
            return self.closings[gstate]
        walk: list[tuple[Hashable, tuple[int, ...]]] = []  # (state, the tokens of its closing word)
        seen: set[Hashable] = set()
        state: Hashable | None = gstate
        tail: tuple[int, ...] | None = None
        while True:
            if state is None or state in seen or len(walk) > limit:
                break  # no closing (a dead end, a cycle, or longer than the grammar's limit)
            if state in self.closings:
                tail = self.closings[state]
                break
            if self.grammar.complete(state):
                tail = (self.index.eos_id,)
                self.closings[state] = tail
                break
            seen.add(state)
            word = self._closing_word(state)
            ids = self.index.word_ids(word) if word is not None else None
            if ids is None:
                walk.append((state, ()))
                state = None
                continue
            walk.append((state, ids))
            state = self.step(state, word)
        for state, ids in reversed(walk):
            tail = None if tail is None or (not ids) else ids + tail
            self.closings[state] = tail
        return self.closings[gstate]

    def finish(self, state: tuple[Any, ...]) -> tuple[int, ...] | None:
        """A short token path from a row state to EOS (``None``: none known)."""
        if state in self.finishes:
            return self.finishes[state]
        path = None
        if state is not _DEAD:
            gstate, wt = state
            word = self.word(gstate, wt) if wt else None
            g2 = self.step(gstate, word) if word is not None else (None if wt else gstate)
            path = self.closing(g2) if g2 is not None else None
            if path is None and wt:  # finish a closed word first (breadth first in its trie)
                trie = self.trie(self.grammar.options(gstate))
                node = trie.walk(wt)
                queue = [(node, ())] if node is not None else []
                while queue and path is None:
                    node, tail = queue.pop(0)
                    for tok, child in trie.children[node].items():
                        word = trie.word[child]
                        g2 = self.step(gstate, word) if word is not None else None
                        rest = self.closing(g2) if g2 is not None else None
                        if rest is not None:
                            path = (*tail, tok, *rest)
                            break
                        queue.append((child, (*tail, tok)))
        self.finishes[state] = path
        return path

    def reach(self, gstate: Hashable) -> int:
        """The longest way to EOS through one more closed word from ``gstate``.

        The word's tokens, then the grammar's closing (EOS included), maximised over the closed
        words allowed in ``gstate`` (0 when none has a closing). Open words are not counted.
        """
        found = self.reaches.get(gstate)
        if found is None:
            found = 0
            for word in self.grammar.options(gstate).words:
                ids = self.index.word_ids(word)
                g2 = self.step(gstate, word) if ids is not None else None
                rest = self.closing(g2) if g2 is not None else None
                if rest is not None:
                    found = max(found, len(ids) + len(rest))  # type: ignore[arg-type]
            self.reaches[gstate] = found
        return found

    def longest(self, state: tuple[Any, ...]) -> int:
        """An upper bound on the way to EOS after any one allowed token of ``state`` (plus that token).

        It bounds a jump that :meth:`finish` alone misses: one token that starts a long word (a
        relation spelled in many tokens, a bracket that must be filled) can lengthen the way to
        the end by far more than one token.
        """
        found = self.longests.get(state)
        if found is None:
            found = 0
            if state is not _DEAD:
                gstate, wt = state
                found = self.reach(gstate) - len(wt)  # the current word continued into any closed word
                word = self.word(gstate, wt) if wt else None
                g2 = self.step(gstate, word) if word is not None else None
                if g2 is not None:
                    found = max(found, self.reach(g2))  # a next word after the current one
            self.longests[state] = found
        return found

    def budget_mask(self, state: tuple[Any, ...], left: int) -> torch.Tensor:
        """:meth:`mask` restricted to tokens after which the expression can still end within ``left`` tokens."""
        key = (state, left)
        found = self.budgeted.get(key)
        if found is None:
            eos, index = self.index.eos_id, self.index
            keep: list[int] = []
            same: bool | None = None  # an open word that stays open: its way to the end stays as long
            closed: dict[int, int] = {}
            starts: tuple[dict[int, int], list[OpenWordClass]] = ({}, [])
            if state is not _DEAD:
                gstate, wt = state
                opts = self.grammar.options(gstate)
                node = self.trie(opts).walk(wt) if wt else None
                closed = self.trie(opts).children[node] if node is not None else {}
                now = self.finish(state)
                text = index.text_of(wt)
                if wt and now is not None and any(c.free and c.word.fullmatch(text) for c in opts.open):
                    same = len(now) <= left - 1
                word = self.word(gstate, wt) if wt else None
                g2 = self.step(gstate, word) if word is not None else (None if wt else gstate)
                if g2 is not None:  # words that may start next: one representative per free open class
                    nxt = self.grammar.options(g2)
                    starts = (self.trie(nxt).children[0], [c for c in nxt.open if c.free])
            fits: dict[str, bool] = {}
            for t in self.mask(state).nonzero().flatten().tolist():
                if t == eos:
                    keep.append(t)
                    continue
                if not index.is_start[t] and same is not None and t not in closed:
                    fit = same
                elif index.is_start[t] and t not in starts[0] and starts[1]:
                    cls = next((c for c in starts[1] if c.word.fullmatch(index.text[t])), None)
                    if cls is not None and cls.name in fits:
                        fit = fits[cls.name]
                    else:
                        fit = (f := self.finish(self.advance(state, t))) is not None and len(f) <= left - 1
                        if cls is not None:
                            fits[cls.name] = fit
                else:
                    fit = (f := self.finish(self.advance(state, t))) is not None and len(f) <= left - 1
                if fit:
                    keep.append(t)
            if not keep:
                path = self.finish(state)
                keep = [path[0] if path else eos]
            found = self.budgeted[key] = self.index.mask(keep)
        return found

    def mask(self, state: tuple[Any, ...]) -> torch.Tensor:
        """The allowed next tokens of a row state (EOS at least)."""
        found = self.masks.get(state)
        if found is not None:
            return found
        if state is _DEAD:
            found = self.shared.eos
        else:
            gstate, wt = state
            opts = self.grammar.options(gstate)
            if not wt:
                found = self.start_mask(opts)
                if not bool(found.any()):
                    found = self.shared.eos
            else:
                node = self.trie(opts).walk(wt)
                text = self.index.text_of(wt) if opts.open else None
                word = self.word(gstate, wt)
                g2 = None if word is None else self.step(gstate, word)
                then = None if g2 is None else self.grammar.options(g2)
                eos = g2 is not None and self.grammar.complete(g2)
                found = self.shared.word_mask(opts, node, text, then, eos)
        self.masks[state] = found
        return found


class GrammarLogitsProcessor(LogitsProcessor):
    """Mask the scores of tokens that would leave the grammar (see the module docstring).

    Args:
        index: The tokenizer's :class:`TokenIndex` (or the tokenizer; an index is built).
        grammars: One grammar per example of the batch, or a single grammar for all.
        num_beams: Beams per example (rows are ``batch_index * num_beams + beam``).
        prefix_length: Leading tokens of every row that were not generated (1 for an
            encoder-decoder's decoder start token; a decoder-only model's prompt length).
        max_new_tokens: The search's token budget (``None``: unguarded). When a row's shortest
            way to the end (the grammar's ``closing``) comes within ``budget_slack`` tokens of
            what is left, or, within the last ``budget_window`` tokens, one more token could start
            a word whose way to the end no longer fits (:meth:`_Tables.longest`), only tokens
            after which the expression can still end in time are allowed, so beams end complete
            instead of being cut off.
        budget_slack: How early (in tokens) the budget guard starts checking a row.
        budget_window: The last tokens of the budget in which the guard also bounds the longest
            way to the end (a bracket spelled in many tokens); earlier it costs time and never
            fires unless a single word's way to the end is longer than the window.
    """

    def __init__(
        self,
        index: TokenIndex | PreTrainedTokenizerBase,
        grammars: WordGrammar | Sequence[WordGrammar],
        num_beams: int = 1,
        prefix_length: int = 1,
        max_new_tokens: int | None = None,
        budget_slack: int = 16,
        budget_window: int = 48,
    ) -> None:
        self.index = index if isinstance(index, TokenIndex) else TokenIndex(index)
        self.grammars = [grammars] if hasattr(grammars, "options") else list(grammars)  # type: ignore[arg-type]
        if not self.grammars:
            raise ValueError("GrammarLogitsProcessor needs at least one grammar")
        self.num_beams = max(1, int(num_beams))
        self.prefix_length = int(prefix_length)
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
        self.budget_slack = int(budget_slack)
        self.budget_window = int(budget_window)
        shared = option_masks(self.index)
        tables: dict[int, _Tables] = {}
        self._tables = [tables.setdefault(id(g), _Tables(g, shared)) for g in self.grammars]
        self._states: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}

    def _tables_of(self, row: int) -> _Tables:
        example = row // self.num_beams
        if len(self._tables) == 1:
            return self._tables[0]
        if example >= len(self._tables):
            raise ValueError(
                f"row {row} belongs to example {example}, but only {len(self._tables)} grammars were given"
            )
        return self._tables[example]

    def _state(self, row: int, tables: _Tables, seq: tuple[int, ...]) -> tuple[Any, ...]:
        key = (row // self.num_beams, seq)
        found = self._states.get(key)
        if found is not None:
            return found
        prev = self._states.get((key[0], seq[:-1])) if seq else None
        if prev is None:  # replay from the start (a new processor, or a pruned prefix)
            state: tuple[Any, ...] = (tables.grammar.start(), ())
            for tok in seq:
                state = tables.advance(state, tok)
        else:
            state = tables.advance(prev, seq[-1])
        return state

    def row_masks(self, input_ids: torch.LongTensor) -> torch.Tensor:
        """The ``[rows, vocab]`` boolean mask of allowed next tokens."""
        rows = input_ids.tolist()
        states: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}
        masks = []
        for r, ids in enumerate(rows):
            tables = self._tables_of(r)
            seq = tuple(ids[self.prefix_length :])
            state = self._state(r, tables, seq)
            states[(r // self.num_beams, seq)] = state
            left = None if self.max_new_tokens is None else self.max_new_tokens - len(seq)
            path = tables.finish(state) if left is not None else None
            if (
                path is not None
                and left is not None
                and (
                    len(path) + self.budget_slack >= left
                    or (left <= self.budget_window and tables.longest(state) >= left)
                )
            ):
                masks.append(tables.budget_mask(state, left))
            else:
                masks.append(tables.mask(state))
        self._states = states  # only the last step's prefixes are needed next
        return torch.stack(masks)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Set the scores of disallowed tokens to ``-inf``."""
        return masked_scores(scores, self.row_masks(input_ids))


def masked_scores(scores: torch.FloatTensor, allowed: torch.Tensor) -> torch.FloatTensor:
    """``scores`` with ``-inf`` where ``allowed`` (``[rows, vocab]`` booleans, padded or cut to the width) is false."""
    allowed = allowed.to(scores.device)
    width = scores.shape[-1]
    if allowed.shape[-1] < width:
        allowed = torch.nn.functional.pad(allowed, (0, width - allowed.shape[-1]), value=False)
    return scores.masked_fill(~allowed[:, :width], float("-inf"))  # type: ignore[return-value]


__all__ = ["GrammarLogitsProcessor", "WordGrammar", "WordOptionsLike", "masked_scores"]
