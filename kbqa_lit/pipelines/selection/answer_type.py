"""Answer-type agreement: does a candidate's answer have the kind of thing the question asks for?

"*Which country* is LMIT located in?" asks for a country; a form that answers with LMIT's city
executes, and execution-guided selection takes it. The question's **answer noun** (the word
after *which*/*what*, or after *how many*) names the expected kind; the KB's classes name the
kinds its answers have (``type.object.type``). :class:`AnswerTypes` compares the two with a
pretrained sentence encoder (all-MiniLM-L6-v2 as it comes; ``cities`` is close to
``location.city``'s words ``city``):

1. :func:`answer_noun` reads the noun phrase after ``which``, ``what``, ``what kind/type of`` or
   ``how many`` (``in which N``… too), up to a stop word or a verb form. Questions without one
   (*where*, *who*, *what is*) expect nothing.
2. The noun **expects a class** when its cosine with some KB class's words (the last dotted
   segment, ``_`` as spaces) reaches ``threshold``; nouns like *year* or *seats* match no class
   and expect nothing.
3. A candidate's answers **agree** when the best cosine between the noun and the classes of its
   answers (entity answers only; a sample of ``sample`` of them) reaches ``threshold``. Literal
   answers (numbers, dates) have no class and never agree with a noun that expects one.

After *how many*, the counted set is what must agree: :func:`counted` strips a ``COUNT``.
Only the question and the candidates' answers are read — never a gold field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.backbones.sentence_encoder import CachedEmbeddings
from kbqa_lit.errors import StoreError, UserInputError
from kbqa_lit.kb.index.relation_inventory import store_classes
from kbqa_lit.kb.lf.iri import NS, TYPE_RELATION, is_entity_id, local_id
from kbqa_lit.kb.lf.normalize import schema_name

#: Words that end an answer noun phrase (auxiliaries, prepositions, determiners, pronouns).
_STOPS = frozenset(
    "is are was were be been being do does did has have had can could will would should may might must "
    "the a an of to in on at by for from with as about into than that this these those it its his her "
    "their he she they there who whom whose which what where when how and or not".split()
)
_KIND_OF = re.compile(r"\b(?:what|which)\s+(?:kind|kinds|type|types|sort|sorts)\s+of\s+", re.IGNORECASE)
_WH = re.compile(r"\b(?:how\s+many|which|what)\s+", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z'-]*", re.IGNORECASE)
_COUNT = re.compile(r"^\s*\(\s*COUNT\s+(.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_MAX_WORDS = 4


def _phrase(text: str) -> str:
    """The words at the start of ``text`` up to a stop word, a verb form (``-ed``/``-ing``) or punctuation."""
    words: list[str] = []
    for token in re.split(r"\s+", text.strip()):
        match = _WORD.fullmatch(token.strip(',.;:?!"()'))
        word = match.group(0).lower() if match else ""
        if not word or word in _STOPS or (words and len(word) > 4 and word.endswith(("ed", "ing"))):
            break
        words.append(word)
        if token != token.rstrip(',.;:?!"()') or len(words) == _MAX_WORDS:
            break
    return " ".join(words)


@dataclass(frozen=True)
class AnswerNoun:
    """The noun that names what a question asks for.

    Attributes:
        noun: The word or phrase (``country``, ``cities``, ``radio program``).
        counting: Whether it follows *how many* (the count's set is of this kind).
    """

    noun: str
    counting: bool = False


def answer_noun(question: str) -> AnswerNoun | None:
    """The question's answer noun phrase, or ``None`` when it has none (*where*, *who*, *what is* …).

    The words after the first *how many*, *what/which kind of*, *which* or *what*, up to a stop
    word, a verb form or punctuation, at most four (``which radio program was …`` → ``radio
    program``; ``what type of school`` → ``school``).
    """
    kind = _KIND_OF.search(question)
    match = kind or _WH.search(question)
    if match is None:
        return None
    phrase = _phrase(question[match.end() :])
    if not phrase:
        return None
    return AnswerNoun(phrase, counting=kind is None and match.group(0).lower().startswith("how"))


def counted(sexpr: str) -> str | None:
    """The set a ``(COUNT …)`` counts, or ``None`` when ``sexpr`` is not a count."""
    match = _COUNT.match(sexpr)
    return match.group(1).strip() if match else None


class AnswerTypes:
    """The expected kind of a question's answer, and whether a candidate's answers have it.

    Args:
        encoder: Sentence encoder name or folder (all-MiniLM-L6-v2 offline by default).
        threshold: Cosine a noun needs with a class's words to expect it / to agree with it.
        sample: Entity answers whose classes are read per candidate.

    Raises:
        UserInputError: When ``threshold`` is outside ``(0, 1]`` or ``sample < 1``.
    """

    def __init__(self, encoder: str = MINILM, threshold: float = 0.8, sample: int = 20) -> None:
        if not 0 < threshold <= 1:
            raise UserInputError(f"answer types: threshold must be in (0, 1], got {threshold!r}")
        if sample < 1:
            raise UserInputError(f"answer types: sample must be >= 1, got {sample!r}")
        self.encoder_name, self.threshold, self.sample = encoder, float(threshold), int(sample)
        self._words = CachedEmbeddings(encoder)
        self._classes: tuple[object, list[str]] | None = None  # the last KB read, and its classes

    def __getstate__(self) -> dict[str, object]:  # the classes are read again by a copy
        return {**self.__dict__, "_classes": None}

    def kb_classes(self, kb: object) -> list[str]:
        """The classes the KB's entities have (one ``SELECT DISTINCT``, cached while the same KB is asked).

        Raises:
            StoreError: When the query fails.
        """
        if self._classes is None or self._classes[0] is not kb:
            self._classes = (kb, sorted(store_classes(kb)))
        return self._classes[1]

    def fit(self, noun: AnswerNoun | None, classes: Sequence[str]) -> float:
        """The best cosine between the noun and the words of ``classes`` (0 for no noun or class)."""
        if noun is None or not classes:
            return 0.0
        words = [schema_name(c) for c in classes]
        return float((self._words.embed(words) @ self._words.embed([noun.noun])[0]).max())

    def expects(self, kb: object, noun: AnswerNoun | None) -> bool:
        """Whether the noun names one of the KB's classes (then answers must agree with it)."""
        return self.fit(noun, self.kb_classes(kb)) >= self.threshold

    def answer_classes(self, kb: object, answers: Sequence[str]) -> list[str]:
        """The classes of (a sample of) the entity answers; literals have none.

        Raises:
            StoreError: When the query fails.
        """
        ids = [a for a in dict.fromkeys(answers) if is_entity_id(a)][: self.sample]
        if not ids:
            return []
        values = " ".join(f"<{NS}{i}>" for i in ids)
        result = kb.execute(f"SELECT DISTINCT ?c WHERE {{ VALUES ?x {{ {values} }} ?x <{NS}{TYPE_RELATION}> ?c }}")  # type: ignore[attr-defined]
        if not result.ok:
            raise StoreError(f"could not read the classes of {len(ids)} answers: {result.error}")
        return sorted({local_id(c) for c in result.answers})

    def agrees(self, kb: object, noun: AnswerNoun | None, answers: Sequence[str]) -> bool:
        """Whether the answers have a class close enough to the noun."""
        return self.fit(noun, self.answer_classes(kb, answers)) >= self.threshold


__all__ = ["AnswerNoun", "AnswerTypes", "answer_noun", "counted"]
