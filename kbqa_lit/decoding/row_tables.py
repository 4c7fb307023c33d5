"""The caches of one grammar behind :class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor`, per row state.

A row state is ``(grammar state, tokens of the unfinished word)``. :class:`RowTables` answers, per state and
memoised: the allowed next tokens (:meth:`RowTables.mask`), a short way to the end (:meth:`RowTables.finish`,
from the grammar's closing words), the longest way after one more token (:meth:`RowTables.longest`), and what
the token-budget guard needs (:meth:`RowTables.need`, :meth:`RowTables.budget_mask`). Its caches are shared by
every grammar with the same ``share_key()`` (see the class).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

import torch

from kbqa_lit.decoding.option_masks import OptionMasks
from kbqa_lit.decoding.tokens import OpenWordClass, WordTrie

DEAD = ("<dead>",)
#: A row the budget guard checks: ``(row, its tables, its state, tokens left)``.
Guarded = tuple[int, "RowTables", Any, int]


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


class RowTables:
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

    def _watched(self, call: Any, *args: Any) -> Any:
        """``call(*args)`` on the grammar, noting a private step (the grammar's ``private_steps`` moved)."""
        before = getattr(self.grammar, "private_steps", 0)
        found = call(*args)
        if getattr(self.grammar, "private_steps", 0) != before:
            self._touched = True
        return found

    def entries(self, name: str) -> int:
        """How many values the cache ``name`` holds for this grammar (common and private parts)."""
        return len(self.common.get(name, {})) + len(self.private.get(name, {}))

    def _get(self, name: str, key: Any) -> Any:
        """A cached value (private first; a private hit makes the running computation private), else ``_MISS``."""
        found = self.private.get(name)
        if found is not None:
            value = found.get(key, _MISS)  # one lookup (``in`` then ``[]`` hashes a state twice)
            if value is not _MISS:
                self._touched = True
                return value
        common = self.common.get(name)
        return _MISS if common is None else common.get(key, _MISS)

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
        """The token-id trie of the closed words of ``opts``."""
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
            found = self._watched(self.grammar.step, gstate, word)
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
        if state is DEAD or tok >= len(self.index.text) or tok in self.index.special:
            return DEAD
        gstate, wt = state
        if not self.index.is_start[tok]:
            return (gstate, wt + (tok,)) if wt else DEAD
        if not wt:
            return (gstate, (tok,))
        word = self.word(gstate, wt)
        g2 = None if word is None else self.step(gstate, word)
        return DEAD if g2 is None else (g2, (tok,))

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
            words = self._watched(self.grammar.closing, gstate) if hasattr(self.grammar, "closing") else None
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
        if state is not DEAD:
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
            if state is not DEAD:
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
            if state is not DEAD:
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
        """:meth:`mask` restricted to tokens after which the expression can still end within ``left`` tokens.

        Kept for this grammar only, never in the common tables: each is a new vocabulary-wide tensor (32 kB for
        T5's vocabulary), and only the full check (sampling) asks for them. The loop applies :meth:`need`'s two
        rules (an open word that stays open, one answer per free class) inline: asking a shared helper per token
        made this check 1.6x slower on the grammar rule set (bench_constrained.py part 1); keep them in step.
        """
        key = (state, left)
        held = self.private.setdefault("budgeted", {})
        found = held.get(key, _MISS)
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
            held[key] = found
            self._leave(outer)
        return found

    def mask(self, state: tuple[Any, ...]) -> torch.Tensor:
        """The allowed next tokens of a row state (EOS at least)."""
        found = self._get("masks", state)
        if found is not _MISS:
            return found
        outer = self._enter()
        if state is DEAD:
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


__all__ = ["DEAD", "Guarded", "RowTables", "WordGrammar", "WordOptionsLike"]
