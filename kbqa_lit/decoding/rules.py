"""Word classes, bracket vocabularies and rule sets of the S-expression grammar (:mod:`kbqa_lit.decoding.grammar`).

A rule set decides what may stand in brackets (and as bare entity words such as the slots
``[E0]``) for each role ``relation``, ``class``, ``entity`` and ``literal``: :class:`BaseRules`
(anything well formed), :class:`SchemaRules` (an inventory of schema ids), :class:`EntityRules`
(a question's linked labels and slots). :class:`OpenWord` classes (numbers, free bracket words)
and the :class:`Vocab` kinds (:class:`PhraseVocab` over a closed list, :class:`FreeSchema`,
:class:`FreeLabel`) are what the rules return; see :mod:`kbqa_lit.decoding.grammar` for how the
grammar asks them.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from kbqa_lit.kb.lf.normalize import _label_usable, schema_to_words

State = Hashable
Context = tuple[tuple[str, tuple[tuple[int, str, str], ...]], ...]


@dataclass(frozen=True)
class OpenWord:
    """An open class of words (numbers, free bracket text...), checked character by character.

    Attributes:
        name: A short name (``number``, ``label``...).
        chars: A regex character class every character of such a word belongs to.
        prefix: Fullmatches every prefix that can still grow into such a word.
        word: Fullmatches a complete word.
        free: A valid non-empty prefix stays valid when extended by characters of ``chars`` (only
            a word's start needs ``prefix``).
    """

    name: str
    chars: str
    prefix: re.Pattern[str]
    word: re.Pattern[str]
    free: bool = False


def _open(name: str, chars: str, prefix: str | None = None, word: str | None = None, free: bool = True) -> OpenWord:
    return OpenWord(name, chars, re.compile(prefix or f"{chars}*"), re.compile(word or f"{chars}+"), free)


SCHEMA_HEAD = _open("schema-head", "[A-Za-z0-9_]", r"(?:[A-Za-z_][A-Za-z0-9_]*)?", r"[A-Za-z_][A-Za-z0-9_]*")
SCHEMA_WORD = _open("schema-word", "[A-Za-z0-9_]")
SCHEMA_TAIL = _open("schema-tail", "[A-Za-z0-9_-]")
LABEL_WORD = _open("label", r"\S", r"(?:[^\]\s]\S*)?", r"[^\]\s]\S*")
VALUE = _open("value", r"[0-9.:+\-eETZ]", r"(?:[+-]?[0-9.][0-9.:+\-eETZ]*|[+-])?", r"[+-]?[0-9.][0-9.:+\-eETZ]*", False)
QUOTED = _open("quoted", r"\S", r'(?:"\S*)?', r'"\S*')
ANY_WORD = _open("any", r"\S")
QUOTED_DONE = re.compile(r'"(?:[^"\\]|\\.)*"(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^[^\s()]+)?')
QUOTED_OPEN = re.compile(r'"(?:[^"\\]|\\.)*\\?')


@dataclass(frozen=True)
class WordOptions:
    """What may come next: closed words and open word classes.

    Attributes:
        words: Allowed words, exactly.
        open: Allowed open word classes (any word of the class may be allowed; :meth:`SExprGrammar.step` decides).
    """

    words: frozenset[str] = frozenset()
    open: tuple[OpenWord, ...] = ()

    def __or__(self, other: WordOptions) -> WordOptions:
        return word_options(self.words | other.words, tuple(dict.fromkeys(self.open + other.open)))


@lru_cache(maxsize=65536)
def word_options(words: frozenset[str], open_: tuple[OpenWord, ...] = ()) -> WordOptions:
    """One shared object per distinct option set (cheap equality and hashing for caches)."""
    return WordOptions(words, open_)


NONE = word_options(frozenset())


# --------------------------------------------------------------------------- bracket vocabularies


class Vocab(Protocol):
    """What may stand between ``[`` and ``]``, word by word (cursor states are hashable)."""

    def start(self) -> Hashable:
        """The cursor before the first word."""
        ...

    def options(self, cur: Hashable) -> WordOptions:
        """Words allowed after ``cur`` (``]`` is added by the grammar)."""
        ...

    def step(self, cur: Hashable, word: str) -> Hashable | None:
        """The cursor after ``word``, or ``None``."""
        ...

    def accepts(self, cur: Hashable) -> bool:
        """Whether the content may end here."""
        ...


class PhraseVocab:
    """A closed set of phrases (relation words, entity labels) as a word trie.

    Args:
        phrases: Bracket contents, e.g. ``people , person , place of birth`` or ``Justin Bieber``.
    """

    def __init__(self, phrases: Iterable[str]) -> None:
        self._children: list[dict[str, int]] = [{}]
        self._final: list[bool] = [False]
        self._opts: dict[int, WordOptions] = {}
        for phrase in phrases:
            words = phrase.split()
            if not words or "]" in words:
                continue
            node = 0
            for w in words:
                nxt = self._children[node].get(w)
                if nxt is None:
                    nxt = len(self._children)
                    self._children[node][w] = nxt
                    self._children.append({})
                    self._final.append(False)
                node = nxt
            self._final[node] = True

    def __len__(self) -> int:
        return sum(self._final)

    def start(self) -> int:
        """The trie's root."""
        return 0

    def options(self, cur: Hashable) -> WordOptions:
        """The words that continue some phrase."""
        node = int(cur)  # type: ignore[call-overload]
        if node not in self._opts:
            self._opts[node] = word_options(frozenset(self._children[node]))
        return self._opts[node]

    def step(self, cur: Hashable, word: str) -> int | None:
        """The trie node after ``word``."""
        return self._children[int(cur)].get(word)  # type: ignore[call-overload]

    def accepts(self, cur: Hashable) -> bool:
        """Whether a phrase ends here."""
        return self._final[int(cur)]  # type: ignore[call-overload]


class FreeSchema:
    """Any schema id written as words: ``segment , segment ...`` (two segments or more)."""

    _HEAD, _MORE, _TAIL, _COMMA = (
        word_options(frozenset(), (SCHEMA_HEAD,)),
        word_options(frozenset({","}), (SCHEMA_WORD,)),
        word_options(frozenset({","}), (SCHEMA_TAIL,)),
        word_options(frozenset(), (SCHEMA_TAIL,)),
    )

    def start(self) -> tuple[int, int, str]:
        """(segments done, words in this segment, first word of the id)."""
        return (0, 0, "")

    def options(self, cur: Hashable) -> WordOptions:
        """Segment words and the ``,`` between segments."""
        seg, n, _ = cur  # type: ignore[misc]
        if n == 0:
            return self._HEAD if seg == 0 else self._COMMA
        return self._MORE if seg == 0 else self._TAIL

    def step(self, cur: Hashable, word: str) -> tuple[int, int, str] | None:
        """The cursor after one word, or ``None`` when the words no longer spell a schema id."""
        seg, n, first = cur  # type: ignore[misc]
        if word == ",":
            return (seg + 1, 0, first) if n else None
        pattern = SCHEMA_HEAD.word if (seg, n) == (0, 0) else SCHEMA_WORD.word if seg == 0 else SCHEMA_TAIL.word
        if not pattern.fullmatch(word) or (seg > 0 and n == 0 and word.startswith("-")):
            return None
        if seg == 0:
            first = word if n == 0 else "_"  # "_": the first segment has several words
        return (seg, n + 1, first)

    def accepts(self, cur: Hashable) -> bool:
        """Two segments or more, the last not empty, and not an entity id (``m , x``)."""
        seg, n, first = cur  # type: ignore[misc]
        return seg >= 1 and n > 0 and not (seg == 1 and first in ("m", "g"))


class FreeLabel:
    """Any entity label (or id): one word or more, none of them ``,`` or starting with ``]``."""

    _OPTS = word_options(frozenset(), (LABEL_WORD,))

    def start(self) -> int:
        """Words so far (capped at 1)."""
        return 0

    def options(self, cur: Hashable) -> WordOptions:
        """Any label word."""
        return self._OPTS

    def step(self, cur: Hashable, word: str) -> int | None:
        """``None`` for ``,`` and words that start with ``]`` (they could close the bracket)."""
        return None if word == "," or word.startswith("]") else 1

    def accepts(self, cur: Hashable) -> bool:
        """At least one word."""
        return cur == 1


@dataclass(frozen=True)
class RoleVocab:
    """What a rule allows for one role.

    Attributes:
        brackets: Alternatives for ``[ ... ]`` content (an empty tuple: no brackets).
        bare: Words that stand alone for the role (slot tokens ``[E0]``... for entities).
        literals: Literals are allowed (role ``literal``).
    """

    brackets: tuple[Any, ...] = ()
    bare: frozenset[str] = frozenset()
    literals: bool = False


class BaseRules:
    """Structure only: any schema id, any label, the given bare entity words, any literal.

    Args:
        bare_entities: Words that stand for an entity by themselves (the slot tokens ``[E0]``...).
    """

    context_free = True

    def __init__(self, bare_entities: Iterable[str] = ()) -> None:
        schema = (FreeSchema(),)
        self._vocab = {
            "relation": RoleVocab(schema),
            "class": RoleVocab(schema),
            "entity": RoleVocab((FreeLabel(),), frozenset(bare_entities)),
            "literal": RoleVocab(literals=True),
        }

    def vocab(self, role: str, context: Context) -> RoleVocab | None:
        """The free vocabulary of ``role``."""
        return self._vocab.get(role)

    def share_key(self) -> Hashable:
        """Equal for base rules that answer alike (the same bare words)."""
        return ("base", self._vocab["entity"].bare)


class SchemaRules:
    """Relations (and classes, when given) restricted to an inventory of schema ids.

    Args:
        relations: Relation ids (``people.person.place_of_birth``), e.g. a store's
            :class:`~kbqa_lit.kb.index.relation_inventory.RelationInventory`.
        classes: Class ids; ``None`` leaves classes to the earlier rules.
    """

    context_free = True

    def __init__(self, relations: Iterable[str], classes: Iterable[str] | None = None) -> None:
        rels = PhraseVocab(schema_to_words(r) for r in relations)
        self._vocab = {"relation": RoleVocab((rels,) if len(rels) else ())}
        if classes is not None:
            found = PhraseVocab(schema_to_words(c) for c in classes)
            self._vocab["class"] = RoleVocab((found,) if len(found) else ())

    def vocab(self, role: str, context: Context) -> RoleVocab | None:
        """The inventory's vocabulary for ``relation`` (and ``class``)."""
        return self._vocab.get(role)

    def share_key(self) -> Hashable:
        """This rule set itself (its vocabularies stand in grammar states, so only it answers alike)."""
        return ("schema", self)


def entity_bracket(entity_id: str, label: str | None) -> str:
    """What the normaliser writes in brackets for an entity: its label when usable, else its id."""
    return label if _label_usable(label) else entity_id  # type: ignore[return-value]


class EntityRules:
    """Entity brackets restricted to given labels, plus the given bare words (slot tokens).

    Args:
        labels: Bracket contents as the normaliser writes them (a usable label, else the id).
        bare: Slot tokens of the question (``[E0]``...).
    """

    context_free = True

    def __init__(self, labels: Iterable[str], bare: Iterable[str] = ()) -> None:
        phrases = [" ".join(str(label).split()) for label in labels]
        vocab = PhraseVocab(p for p in phrases if p)
        self._vocab = RoleVocab((vocab,) if len(vocab) else (), frozenset(bare))

    def vocab(self, role: str, context: Context) -> RoleVocab | None:
        """The given labels and slots for ``entity``."""
        return self._vocab if role == "entity" else None

    def share_key(self) -> Hashable:
        """The slots and whether there are labels: all that grammar states outside entity brackets depend on."""
        return ("entity", self._vocab.bare, bool(self._vocab.brackets))
