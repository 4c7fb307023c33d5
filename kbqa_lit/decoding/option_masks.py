"""Token masks of option sets, computed once per tokenizer and shared by every grammar, question and batch.

An option set (the words a grammar allows next, interned by the grammar: equal sets are one object)
and a node of its word trie decide which tokens may come next inside a word, so
:class:`OptionMasks` caches those masks by option set, not by grammar: the schema's relations,
operators and brackets are computed once per run, not once per question. It is kept on the
:class:`~kbqa_lit.decoding.tokens.TokenIndex` (:func:`option_masks`), which the callers keep across
batches. Option sets are duck-typed (``words``: a frozenset of closed words, ``open``: open word classes).
"""

from __future__ import annotations

from typing import Any

import torch

from kbqa_lit.decoding.tokens import TokenIndex, WordTrie

#: Bytes of dense boolean masks the cache holds at most (entries: this over the vocabulary size; cleared when full).
_MASK_BUDGET = 64_000_000
#: Entries the grammars' common tables hold at most, all keys together (cleared when full; about 150 bytes each:
#: make demo's validation split fills 140,000).
_COMMON_BUDGET = 1_000_000


class OptionMasks:
    """Word tries and token masks of one tokenizer, keyed by option set (see the module docstring).

    Args:
        index: The tokenizer's token index.
    """

    def __init__(self, index: TokenIndex) -> None:
        self.index = index
        self.tries: dict[Any, WordTrie] = {}
        self.starts: dict[Any, torch.Tensor] = {}
        self.masks: dict[Any, torch.Tensor] = {}
        self.eos = index.mask([index.eos_id])
        self.limit = max(1024, _MASK_BUDGET // max(1, index.vocab_size))
        self.common: dict[Any, dict[str, dict[Any, Any]]] = {}
        self.common_entries = 0

    def common_tables(self, key: Any) -> dict[str, dict[Any, Any]]:
        """The caches every grammar with the share key ``key`` uses (see ``RowTables``)."""
        return self.common.setdefault(key, {})

    def add_common(self, tables: dict[str, dict[Any, Any]], name: str, key: Any, value: Any) -> None:
        """Store ``value`` in one of the common ``tables``; all of them are emptied past ``_COMMON_BUDGET`` entries."""
        if self.common_entries >= _COMMON_BUDGET:
            for held in self.common.values():
                for table in held.values():
                    table.clear()
            self.common_entries = 0
        tables.setdefault(name, {})[key] = value
        self.common_entries += 1

    def trie(self, opts: Any) -> WordTrie:
        """The token-id trie of the closed words of ``opts``."""
        found = self.tries.get(opts)
        if found is None:
            ids = {w: t for w in opts.words if (t := self.index.word_ids(w)) is not None}
            found = self.tries[opts] = WordTrie(ids)
        return found

    def start_mask(self, opts: Any) -> torch.Tensor:
        """Tokens that begin a word allowed by ``opts``."""
        found = self.starts.get(opts)
        if found is None:
            found = self.index.mask(list(self.trie(opts).children[0]))
            for cls in opts.open:
                ids = [i for i in self.index.class_ids(cls, True) if cls.prefix.fullmatch(self.index.text[i])]
                found |= self.index.mask(ids)
            self.starts[opts] = found
        return found

    def word_mask(self, opts: Any, node: int | None, text: str | None, then: Any, eos: bool) -> torch.Tensor:
        """The allowed next tokens inside a word (see ``RowTables.mask``), cached by what decides them.

        Args:
            opts: The options the word is one of.
            node: The word's tokens' node in ``opts``'s trie (``None``: off the trie).
            text: The word's text when an open class of ``opts`` may continue it, else ``None``.
            then: The options after the word when it is whole and allowed (``None``: it is not).
            eos: Whether the expression is complete after the word.
        """
        key = (opts, node, text, then, eos)
        found = self.masks.get(key)
        if found is None:
            index = self.index
            found = index.mask(list(self.trie(opts).children[node]) if node is not None else [])
            for cls in opts.open if text is not None else ():
                if not cls.prefix.fullmatch(text):
                    continue
                if cls.free and text:
                    found |= index.class_mask(cls, False)
                else:
                    ids = [i for i in index.class_ids(cls, False) if cls.prefix.fullmatch(text + index.text[i])]
                    found |= index.mask(ids)
            if then is not None:
                found |= self.start_mask(then)
            if eos or not bool(found.any()):
                found[index.eos_id] = True
            if len(self.masks) >= self.limit:
                self.masks.clear()
            self.masks[key] = found
        return found


def option_masks(index: TokenIndex) -> OptionMasks:
    """The option-set caches of ``index`` (one per token index, kept on it across batches)."""
    found = getattr(index, "_processor_cache", None)
    if not isinstance(found, OptionMasks):
        found = OptionMasks(index)
        index._processor_cache = found  # type: ignore[attr-defined]
    return found


__all__ = ["OptionMasks", "option_masks"]
