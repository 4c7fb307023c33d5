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
#: A row the budget guard checks: ``(row, its tables, its state, tokens left)``.
_Guarded = tuple[int, "_Tables", Any, int]


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


_MISS = object()


class _Tables:
    """Caches of one grammar: grammar steps, closings and masks per row state (masks from :class:`OptionMasks`).

    Each cache has two parts. The *common* part is kept on :class:`OptionMasks` by the grammar's
    ``share_key()`` (``None``: the grammar shares nothing) and serves every grammar with the same
    key: every question whose grammar differs from another only through the steps its
    ``private_steps`` counts (an S-expression grammar: the question's entity labels, met only when
    an entity bracket is opened), in every batch. The *private* part holds what was computed through such a
    step. A value is private when its computation reported a private step or read a private value.
    """

    def __init__(self, grammar: WordGrammar, shared: OptionMasks) -> None:
        self.grammar = grammar
        self.shared = shared
        self.index = shared.index
        key = grammar.share_key() if callable(getattr(grammar, "share_key", None)) else None  # type: ignore[attr-defined]
        self._sharing = key is not None
        self.common: dict[str, dict[Any, Any]] = shared.common_tables(key) if key is not None else {}
        self.private: dict[str, dict[Any, Any]] = {}
        self._touched = False
        self._closing_word = getattr(grammar, "closing_word", None)

    def _grammar_step(self, gstate: Hashable, word: str) -> Hashable | None:
        """``grammar.step``, noting a private step (the grammar's ``private_steps`` moved)."""
        before = getattr(self.grammar, "private_steps", 0)
        found = self.grammar.step(gstate, word)
        if getattr(self.grammar, "private_steps", 0) != before:
            self._touched = True
        return found

    def entries(self, name: str) -> int:
        """How many values the cache ``name`` holds for this grammar (common and private parts)."""
        return len(self.common.get(name, {})) + len(self.private.get(name, {}))

    def _get(self, name: str, key: Any) -> Any:
        """A cached value (private first; a private hit makes the running computation private), else ``_MISS``."""
        found = self.private.get(name)
        if found is not None and key in found:
            self._touched = True
            return found[key]
        common = self.common.get(name)
        if common is not None and key in common:
            return common[key]
        return _MISS

    def _put(self, name: str, key: Any, value: Any) -> None:
        """Store ``value`` privately when the running computation is private, else in the common part."""
        if self._touched or not self._sharing:
            self.private.setdefault(name, {})[key] = value
        else:
            self.shared.add_common(self.common, name, key, value)

    def _enter(self) -> bool:
        outer, self._touched = self._touched, False
        return outer

    def _leave(self, outer: bool) -> None:
        self._touched = self._touched or outer

    def trie(self, opts: WordOptionsLike) -> WordTrie:
        return self.shared.trie(opts)

    def start_mask(self, opts: WordOptionsLike) -> torch.Tensor:
        """Tokens that begin a word allowed by ``opts``."""
        return self.shared.start_mask(opts)

    def step(self, gstate: Hashable, word: str) -> Hashable | None:
        """The grammar's state after ``word`` (memoised)."""
        key = (gstate, word)
        found = self._get("steps", key)
        if found is _MISS:
            outer = self._enter()
            found = self._grammar_step(gstate, word)
            self._put("steps", key, found)
            self._leave(outer)
        return found

    def word(self, gstate: Hashable, wt: tuple[int, ...]) -> str | None:
        """The allowed word that the tokens ``wt`` spell in ``gstate`` (``None``: not a whole word)."""
        key = (gstate, wt)
        word = self._get("words", key)
        if word is _MISS:
            outer = self._enter()
            opts = self.grammar.options(gstate)
            trie = self.trie(opts)
            node = trie.walk(wt)
            word = trie.word[node] if node is not None else None
            if word is None:
                text = self.index.text_of(wt)
                word = text if any(c.word.fullmatch(text) for c in opts.open) else None
            self._put("words", key, word)
            self._leave(outer)
        return word

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
        found = self._get("closings", gstate)
        if found is not _MISS:
            return found
        outer = self._enter()
        try:
            return self._closing(gstate, limit)
        finally:
            self._leave(outer)

    def _closing(self, gstate: Hashable, limit: int) -> tuple[int, ...] | None:
        if self._closing_word is None:
            before = getattr(self.grammar, "private_steps", 0)
            words = self.grammar.closing(gstate) if hasattr(self.grammar, "closing") else None
            self._touched = self._touched or getattr(self.grammar, "private_steps", 0) != before
            ids = [self.index.word_ids(w) for w in words or ()]
            ok = words is not None and all(i is not None for i in ids)
            found = tuple(t for i in ids for t in i or ()) + (self.index.eos_id,) if ok else None
            self._put("closings", gstate, found)
            return found
        walk: list[tuple[Hashable, tuple[int, ...]]] = []  # (state, the tokens of its closing word)
        seen: set[Hashable] = set()
        state: Hashable | None = gstate
        tail: tuple[int, ...] | None = None
        while True:
            if state is None or state in seen or len(walk) > limit:
                break  # no closing (a dead end, a cycle, or longer than the grammar's limit)
            known = self._get("closings", state)
            if known is not _MISS:
                tail = known
                break
            if self.grammar.complete(state):
                tail = (self.index.eos_id,)
                self._put("closings", state, tail)
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
        found = tail if not walk else None
        for state, ids in reversed(walk):  # every state on the walk: private when any step was
            tail = None if tail is None or (not ids) else ids + tail
            self._put("closings", state, tail)
            found = tail
        return found

    def finish(self, state: tuple[Any, ...]) -> tuple[int, ...] | None:
        """A short token path from a row state to EOS (``None``: none known)."""
        path = self._get("finishes", state)
        if path is not _MISS:
            return path
        outer = self._enter()
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
        self._put("finishes", state, path)
        self._leave(outer)
        return path

    def reach(self, gstate: Hashable) -> int:
        """The longest way to EOS through one more closed word from ``gstate``.

        The word's tokens, then the grammar's closing (EOS included), maximised over the closed
        words allowed in ``gstate`` (0 when none has a closing). Open words are not counted.
        """
        found = self._get("reaches", gstate)
        if found is _MISS:
            outer = self._enter()
            found = 0
            for word in self.grammar.options(gstate).words:
                ids = self.index.word_ids(word)
                g2 = self.step(gstate, word) if ids is not None else None
                rest = self.closing(g2) if g2 is not None else None
                if rest is not None:
                    found = max(found, len(ids) + len(rest))  # type: ignore[arg-type]
            self._put("reaches", gstate, found)
            self._leave(outer)
        return found

    def longest(self, state: tuple[Any, ...]) -> int:
        """An upper bound on the way to EOS after any one allowed token of ``state`` (plus that token).

        It bounds a jump that :meth:`finish` alone misses: one token that starts a long word (a
        relation spelled in many tokens, a bracket that must be filled) can lengthen the way to
        the end by far more than one token.
        """
        found = self._get("longests", state)
        if found is _MISS:
            outer = self._enter()
            found = 0
            if state is not _DEAD:
                gstate, wt = state
                found = self.reach(gstate) - len(wt)  # the current word continued into any closed word
                word = self.word(gstate, wt) if wt else None
                g2 = self.step(gstate, word) if word is not None else None
                if g2 is not None:
                    found = max(found, self.reach(g2))  # a next word after the current one
            self._put("longests", state, found)
            self._leave(outer)
        return found

    def _guard_parts(self, state: tuple[Any, ...]) -> tuple[dict[int, int], int | None, dict[int, int], list[Any]]:
        """What the budget guard reads of a row state, computed once per state.

        Returns ``(closed, same, first, free)``: the trie children that continue the current
        closed word; the length of the way to the end when the current word is an open word of a
        free class that may stay open (``None`` otherwise: its way to the end stays as long); the
        first tokens of the closed words allowed next and the free open classes allowed next.
        """
        found = self._get("guards", state)
        if found is _MISS:
            outer = self._enter()
            closed: dict[int, int] = {}
            same: int | None = None
            first: dict[int, int] = {}
            free: list[Any] = []
            if state is not _DEAD:
                gstate, wt = state
                opts = self.grammar.options(gstate)
                node = self.trie(opts).walk(wt) if wt else None
                closed = self.trie(opts).children[node] if node is not None else {}
                now = self.finish(state)
                text = self.index.text_of(wt)
                if wt and now is not None and any(c.free and c.word.fullmatch(text) for c in opts.open):
                    same = len(now)
                word = self.word(gstate, wt) if wt else None
                g2 = self.step(gstate, word) if word is not None else (None if wt else gstate)
                if g2 is not None:  # words that may start next: one representative per free open class
                    nxt = self.grammar.options(g2)
                    first, free = self.trie(nxt).children[0], [c for c in nxt.open if c.free]
            found = (closed, same, first, free)
            self._put("guards", state, found)
            self._leave(outer)
        return found

    def need(self, state: tuple[Any, ...], tok: int) -> int | None:
        """The length of a short way to EOS after ``tok`` (``None``: none known).

        Tokens that keep a free open word open count as the current way to the end; the tokens that
        start a word of a free open class count as the first such token asked about (a free class's
        words all end the same way); only the others are worked out (and memoised) one by one.
        """
        closed, same, first, free = self._guard_parts(state)
        index = self.index
        if not index.is_start[tok] and same is not None and tok not in closed:
            return same
        cls = None
        if index.is_start[tok] and tok not in first and free:
            cls = next((c for c in free if c.word.fullmatch(index.text[tok])), None)
            if cls is not None:
                known = self._get("class_needs", (state, cls.name))
                if known is not _MISS:
                    return known
        key = (state, tok)
        found = self._get("needs", key)
        if found is not _MISS:
            return found
        outer = self._enter()
        path = self.finish(self.advance(state, tok))
        found = None if path is None else len(path)
        self._put("needs", key, found)
        if cls is not None:
            self._put("class_needs", (state, cls.name), found)
        self._leave(outer)
        return found

    def fits(self, state: tuple[Any, ...], tok: int, left: int) -> bool:
        """Whether the expression can still end within ``left`` tokens after ``tok`` (EOS always fits)."""
        if tok == self.index.eos_id:
            return True
        found = self.need(state, tok)
        return found is not None and found <= left - 1

    def fallback(self, state: tuple[Any, ...]) -> int:
        """The token a row takes when no allowed token fits its budget: the start of its way to the end, or EOS."""
        path = self.finish(state)
        return path[0] if path else self.index.eos_id

    def budget_mask(self, state: tuple[Any, ...], left: int) -> torch.Tensor:
        """:meth:`mask` restricted to tokens after which the expression can still end within ``left`` tokens."""
        key = (state, left)
        found = self._get("budgeted", key)
        if found is _MISS:
            outer = self._enter()
            closed, same, first, free = self._guard_parts(state)
            index, limit = self.index, left - 1
            stays = same is not None and same <= limit  # a free open word that stays open keeps its way
            by_class: dict[str, bool] = {}  # one answer per free open class starting the next word
            keep: list[int] = []
            for t in self.mask(state).nonzero().flatten().tolist():
                if t == index.eos_id:
                    fit = True
                elif not index.is_start[t] and same is not None and t not in closed:
                    fit = stays
                elif (
                    index.is_start[t]
                    and free
                    and t not in first
                    and (cls := next((c for c in free if c.word.fullmatch(index.text[t])), None))
                ):
                    fit = by_class.get(cls.name)  # type: ignore[assignment]
                    if fit is None:
                        fit = by_class[cls.name] = (n := self.need(state, t)) is not None and n <= limit
                else:
                    fit = (n := self.need(state, t)) is not None and n <= limit
                if fit:
                    keep.append(t)
            found = self.index.mask(keep or [self.fallback(state)])
            self._put("budgeted", key, found)
            self._leave(outer)
        return found

    def mask(self, state: tuple[Any, ...]) -> torch.Tensor:
        """The allowed next tokens of a row state (EOS at least)."""
        found = self._get("masks", state)
        if found is not _MISS:
            return found
        outer = self._enter()
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
        self._put("masks", state, found)
        self._leave(outer)
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
        budget_top_k: How many of a guarded row's best-scoring tokens a search can take (beam
            search: ``2 * num_beams``, ``generate``'s ``beams_to_keep``; greedy: 1). When set, the
            guard checks tokens in score order until that many fit instead of checking every
            allowed token, and the row's other tokens become ``-inf``: the search picks exactly
            what it would pick under the full check, at a fraction of the cost. ``None`` (the
            default) checks every allowed token, which sampling needs.
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
        budget_top_k: int | None = None,
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
        self.budget_top_k = None if budget_top_k is None else max(1, int(budget_top_k))
        shared = option_masks(self.index)
        tables: dict[int, _Tables] = {}
        self._tables = [tables.setdefault(id(g), _Tables(g, shared)) for g in self.grammars]
        self._states: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}
        #: The last step's rows by prefix, beam scores and returned scores (the beam scores of the next step).
        self._last: tuple[dict[tuple[int, Any], int], torch.Tensor, torch.Tensor] | None = None

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
        """The ``[rows, vocab]`` boolean mask of allowed next tokens (the budget guard's full check)."""
        masks, guarded, _ = self._plan(input_ids)
        for r, tables, state, left in guarded:
            masks[r] = tables.budget_mask(state, left)
        return torch.stack(masks)

    def _plan(self, input_ids: torch.LongTensor) -> tuple[list[torch.Tensor], list[_Guarded], list[tuple[int, Any]]]:
        """Each row's grammar mask, the rows the budget guard must check, and each row's ``(example, tokens)``."""
        rows = input_ids.tolist()
        states: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}
        masks: list[torch.Tensor] = []
        guarded: list[_Guarded] = []
        keys: list[tuple[int, Any]] = []
        for r, ids in enumerate(rows):
            tables = self._tables_of(r)
            seq = tuple(ids[self.prefix_length :])
            state = self._state(r, tables, seq)
            keys.append((r // self.num_beams, seq))
            states[keys[-1]] = state
            masks.append(tables.mask(state))
            if self.max_new_tokens is None:
                continue
            left = self.max_new_tokens - len(seq)
            path = tables.finish(state)
            if path is not None and (
                len(path) + self.budget_slack >= left or (left <= self.budget_window and tables.longest(state) >= left)
            ):
                guarded.append((r, tables, state, left))
        self._states = states  # only the last step's prefixes are needed next
        return masks, guarded, keys

    def _beam_scores(self, keys: list[tuple[int, Any]]) -> torch.Tensor | None:
        """Each row's running beam score as ``generate``'s beam search holds it (``None``: unknown).

        The search adds each step's processed scores (what this processor returned) to its beams'
        scores, so a row's score is its parent row's plus the returned score of its last token. At
        the first step every row of an example is the same prefix: the first counts (score 0), the
        others never win (``-inf``), as in ``generate``.
        """
        rows = len(keys)
        first: dict[tuple[int, Any], int] = {}
        for r, key in enumerate(keys):
            first.setdefault(key, r)
        if all(not seq for _, seq in keys):
            beam = torch.zeros(rows)
        elif self._last is None:
            return None
        else:
            last_rows, last_beam, last_out = self._last
            parents = [last_rows.get((ex, seq[:-1])) if seq else None for ex, seq in keys]
            if any(p is None for p in parents):
                return None
            toks = torch.as_tensor([seq[-1] for _, seq in keys], dtype=torch.long)
            index = torch.as_tensor(parents, dtype=torch.long)
            beam = last_beam[index] + last_out[index, toks].float().cpu()
        copies = [r for r, key in enumerate(keys) if first[key] != r]
        if copies:
            beam[copies] = float("-inf")
        return beam

    def _guard_rows(self, scores: torch.FloatTensor, out: torch.FloatTensor, guarded: list[_Guarded]) -> None:
        """Keep, in each guarded row of ``out``, only its best ``budget_top_k`` tokens that fit the budget."""
        k = int(self.budget_top_k or 1)
        width = out.shape[-1]
        rows = [g[0] for g in guarded]
        first = min(width, 2 * k)
        order = out[rows].topk(first, dim=-1)
        tops, top_scores = order.indices.tolist(), order.values.tolist()
        keep_rows: list[list[int]] = []
        for i, (r, tables, state, left) in enumerate(guarded):
            keep: list[int] = []
            cand, vals, n = tops[i], top_scores[i], first
            while True:
                for t, v in zip(cand, vals, strict=True):
                    if v == float("-inf"):
                        break
                    if tables.fits(state, t, left):
                        keep.append(t)
                        if len(keep) >= k:
                            break
                if len(keep) >= k or n >= width or vals[-1] == float("-inf"):
                    break
                more = out[r].topk(min(width, 2 * n))  # fewer than k fit among the first n: look further
                cand, vals = more.indices.tolist()[n:], more.values.tolist()[n:]
                n = min(width, 2 * n)
            keep_rows.append(keep or [tables.fallback(state)])
        self._keep_only(scores, out, rows, keep_rows)

    def _guard_examples(
        self, scores: torch.FloatTensor, out: torch.FloatTensor, guarded: list[_Guarded], beam: torch.Tensor
    ) -> None:
        """Check each example's tokens in the search's order (beam score + token score) until ``budget_top_k`` fit.

        Every token of a guarded row that was not checked, or did not fit, becomes ``-inf``.
        """
        k = int(self.budget_top_k or 1)
        nb, width = self.num_beams, out.shape[-1]
        info = {g[0]: g for g in guarded}
        examples = sorted({r // nb for r in info})
        rows_of = [list(range(e * nb, min((e + 1) * nb, out.shape[0]))) for e in examples]
        totals = [(out[rows].float().cpu() + beam[rows, None]).flatten() for rows in rows_of]
        keep_rows: dict[int, list[int]] = {r: [] for r in info}
        for rows, flat in zip(rows_of, totals, strict=True):
            fitting, seen, n = 0, 0, min(flat.numel(), 2 * k)
            while True:
                top = flat.topk(n)
                done = False
                for v, i in zip(top.values.tolist()[seen:], top.indices.tolist()[seen:], strict=True):
                    if v == float("-inf"):
                        done = True
                        break
                    r, t = rows[i // width], i % width
                    g = info.get(r)
                    if g is None:
                        fitting += 1
                    elif g[1].fits(g[2], t, g[3]):
                        fitting += 1
                        keep_rows[r].append(t)
                    if fitting >= k:
                        done = True
                        break
                if done or n >= flat.numel():
                    break
                seen, n = n, min(flat.numel(), 2 * n)
        rows = list(keep_rows)
        self._keep_only(scores, out, rows, [keep_rows[r] or [info[r][1].fallback(info[r][2])] for r in rows])

    @staticmethod
    def _keep_only(scores: torch.FloatTensor, out: torch.FloatTensor, rows: list[int], keep: list[list[int]]) -> None:
        """Set every token of ``rows`` in ``out`` to ``-inf`` except ``keep`` (which get their ``scores``)."""
        out[rows] = float("-inf")
        for r, ids in zip(rows, keep, strict=True):
            at = torch.as_tensor(ids, dtype=torch.long, device=out.device)
            out[r, at] = scores[r, at]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Set the scores of disallowed tokens to ``-inf``."""
        if self.budget_top_k is None:
            return masked_scores(scores, self.row_masks(input_ids))
        masks, guarded, keys = self._plan(input_ids)
        out = masked_scores(scores, torch.stack(masks))
        beam = self._beam_scores(keys) if self.num_beams > 1 else None
        if guarded:
            if beam is None:
                self._guard_rows(scores, out, guarded)
            else:
                self._guard_examples(scores, out, guarded, beam)
        if beam is not None:
            first: dict[tuple[int, Any], int] = {}
            for r, key in enumerate(keys):
                first.setdefault(key, r)
            self._last = (first, beam, out)
        else:
            self._last = None
        return out


def masked_scores(scores: torch.FloatTensor, allowed: torch.Tensor) -> torch.FloatTensor:
    """``scores`` with ``-inf`` where ``allowed`` (``[rows, vocab]`` booleans, padded or cut to the width) is false."""
    allowed = allowed.to(scores.device)
    width = scores.shape[-1]
    if allowed.shape[-1] < width:
        allowed = torch.nn.functional.pad(allowed, (0, width - allowed.shape[-1]), value=False)
    return scores.masked_fill(~allowed[:, :width], float("-inf"))  # type: ignore[return-value]


__all__ = ["GrammarLogitsProcessor", "WordGrammar", "WordOptionsLike", "masked_scores"]
