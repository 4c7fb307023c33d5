"""The processor's per-tokenizer tables: each token's text, word starts, closed words' token ids, open classes.

The project's tokenizers (and T5's sentencepiece) pre-tokenise on whitespace with Metaspace: every
word's first token starts with ``▁`` and the others do not, so a token that starts with ``▁`` begins
a new word, and a word's tokens do not depend on its neighbours. :class:`TokenIndex` is built once
per tokenizer and shared by every batch; :class:`WordTrie` is the token-id trie of a closed word set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

import torch
from transformers import PreTrainedTokenizerBase

SPACE = "▁"
_ANCHOR = "("


class OpenWordClass(Protocol):
    """An open word class (see :class:`kbqa_lit.decoding.grammar.OpenWord`)."""

    name: str
    chars: str
    prefix: re.Pattern[str]
    word: re.Pattern[str]
    free: bool


class WordTrie:
    """Token-id trie of a closed word set: node → {token: child}, node → word ending there."""

    def __init__(self, words: dict[str, tuple[int, ...]]) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.word: list[str | None] = [None]
        for word, ids in words.items():
            node = 0
            for t in ids:
                nxt = self.children[node].get(t)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][t] = nxt
                    self.children.append({})
                    self.word.append(None)
                node = nxt
            self.word[node] = word

    def walk(self, ids: Sequence[int]) -> int | None:
        """The node the token ids ``ids`` lead to from the root (``None``: they leave the trie)."""
        node: int | None = 0
        for t in ids:
            node = self.children[node].get(t)  # type: ignore[index]
            if node is None:
                return None
        return node


class TokenIndex:
    """Per-tokenizer tables of the processor (build once, share across batches).

    Args:
        tokenizer: A Metaspace-style tokenizer (the project's trained BPE, T5, LLaMA).
        vocab_size: Width of the model's scores (default ``len(tokenizer)``; T5 pads its
            embedding matrix beyond the tokenizer).
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, vocab_size: int | None = None) -> None:
        self.tokenizer = tokenizer
        n = len(tokenizer)
        self.vocab_size = max(int(vocab_size or n), n)
        self.eos_id = int(tokenizer.eos_token_id)  # type: ignore[arg-type]
        special = self.special = frozenset(tokenizer.all_special_ids)
        added = set(tokenizer.get_added_vocab().values())
        pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
        self.is_start = [bool(p) and p.startswith(SPACE) and i not in special for i, p in enumerate(pieces)]
        self.text = [p[1:] if s else (p or "") for p, s in zip(pieces, self.is_start, strict=True)]
        #: Tokens an open word may use: not special, not an added token (slots come as closed words).
        self._plain = [i not in special and i not in added and bool(pieces[i]) for i in range(n)]
        self._anchor = self._encode(_ANCHOR)
        self._word_ids: dict[str, tuple[int, ...] | None] = {}
        self._class_masks: dict[tuple[str, str, bool], torch.Tensor] = {}
        self._class_ids: dict[tuple[str, str, bool], list[int]] = {}

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def word_ids(self, word: str) -> tuple[int, ...] | None:
        """The canonical token ids of ``word`` as it appears after another word (``None``: unusable)."""
        if word not in self._word_ids:
            ids = self._encode(f"{_ANCHOR} {word}")
            ids = ids[len(self._anchor) :] if ids[: len(self._anchor)] == self._anchor else self._encode(word)
            ok = bool(ids) and self.is_start[ids[0]] and not any(self.is_start[t] for t in ids[1:])
            self._word_ids[word] = tuple(ids) if ok else None
        return self._word_ids[word]

    def text_of(self, ids: Sequence[int]) -> str:
        """The text of one word's tokens (the leading ``▁`` dropped)."""
        return "".join(self.text[t] for t in ids)

    def class_ids(self, cls: OpenWordClass, start: bool) -> list[int]:
        """Tokens that may start (``start``) or continue a word of ``cls`` by their characters."""
        key = (cls.name, cls.chars, start)
        if key not in self._class_ids:
            chars = re.compile(f"{cls.chars}*")
            self._class_ids[key] = [
                i
                for i in range(len(self.text))
                if self._plain[i]
                and self.is_start[i] == start
                and (start or self.text[i])
                and chars.fullmatch(self.text[i])
            ]
        return self._class_ids[key]

    def class_mask(self, cls: OpenWordClass, start: bool) -> torch.Tensor:
        """:meth:`class_ids` as a boolean mask."""
        key = (cls.name, cls.chars, start)
        if key not in self._class_masks:
            self._class_masks[key] = self.mask(self.class_ids(cls, start))
        return self._class_masks[key]

    def mask(self, ids: Sequence[int]) -> torch.Tensor:
        """A boolean mask with ``ids`` set."""
        m = torch.zeros(self.vocab_size, dtype=torch.bool)
        if ids:
            m[torch.as_tensor(list(ids), dtype=torch.long)] = True
        return m


__all__ = ["SPACE", "OpenWordClass", "TokenIndex", "WordTrie"]
