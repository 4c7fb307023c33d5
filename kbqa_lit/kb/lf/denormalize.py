"""From a normalised S-expression back to KB ids: :func:`denormalize_sexpr` and :func:`denormalize_all`.

The inverse of :func:`~kbqa_lit.kb.lf.normalize.normalize_sexpr` (the scheme is described there).
Denormalisation maps a label to ids in this order: exact match in ``label_to_ids`` (then in the
``candidates``), case- and space-insensitive match, then fuzzy match (the best of the
:class:`difflib.SequenceMatcher` ratio and a token-set ratio, at least ``fuzzy_threshold``) over
every known (id, label) pair. It also reads ``[Justin Bieber]`` without inner spaces, upper-case
operator words (``GREATER EQUAL``) and raw ids/operators, as models sometimes write them.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.normalize import (
    DATATYPE_FROM_WORDS,
    LOCAL_NAME_RE,
    OPERATOR_FROM_WORDS,
    QUOTED_RE,
    SCHEMA_SEP_RE,
    TWO_WORD_OPERATOR_HEADS,
    WORD_RE,
    XSD,
    find_span_end,
    words_to_schema,
)
from kbqa_lit.kb.lf.sexpr import (
    ENTITY_RE,
    NUMBER_RE,
    SCHEMA_RE,
    TYPED_VALUE_RE,
    parse_sexpr,
    to_sexpr_string,
)


def invert_labels(labels: Mapping[str, str | None]) -> dict[str, list[str]]:
    """Turn id → label into label → ids (ids in the map's order; missing labels skipped)."""
    inverse: dict[str, list[str]] = {}
    for ent, label in labels.items():
        if label:
            inverse.setdefault(label, []).append(ent)
    return inverse


# --------------------------------------------------------------------------- entity matching


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _ratio(a: str, b: str, floor: float = 0.0) -> float:
    """:class:`difflib.SequenceMatcher` ratio, or 0.0 early when it cannot reach ``floor``."""
    matcher = difflib.SequenceMatcher(None, a, b)
    if floor and (matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor):
        return 0.0
    return matcher.ratio()


def _token_set_ratio(a: str, b: str, floor: float = 0.0) -> float:
    """Similarity of two word sets: shared words first, then each side's own words, sorted."""
    ta, tb = set(a.split()), set(b.split())
    shared = " ".join(sorted(ta & tb))
    sa = (shared + " " + " ".join(sorted(ta - tb))).strip()
    sb = (shared + " " + " ".join(sorted(tb - ta))).strip()
    return _ratio(sa, sb, floor)


def label_similarity(a: str, b: str) -> float:
    """Fuzzy similarity in [0, 1] of two labels, case- and space-insensitive.

    The best of the :class:`difflib.SequenceMatcher` ratio (misspellings) and a token-set ratio
    (word order: ``"Bieber Justin"`` vs ``"Justin Bieber"``).
    """
    fa, fb = _fold(a), _fold(b)
    if fa == fb:
        return 1.0
    return max(_ratio(fa, fb), _token_set_ratio(fa, fb))


class _EntityIndex:
    """Every known (label, id) pair, looked up exactly, case-insensitively, then fuzzily."""

    def __init__(
        self,
        label_to_ids: Mapping[str, Sequence[str]] | None,
        candidates: Sequence[tuple[str, str]] | None,
    ) -> None:
        self.exact: dict[str, list[str]] = {}
        for label, ids in (label_to_ids or {}).items():
            for ent in [ids] if isinstance(ids, str) else ids:
                self._add(label, ent)
        for ent, label in candidates or ():
            self._add(label, ent)
        self.folded: dict[str, list[str]] = {}
        for label, ids in self.exact.items():
            bucket = self.folded.setdefault(_fold(label), [])
            bucket.extend(e for e in ids if e not in bucket)

    def _add(self, label: str, ent: str) -> None:
        if not label:
            return
        bucket = self.exact.setdefault(label, [])
        if ent not in bucket:
            bucket.append(ent)

    def resolve(self, mention: str, threshold: float) -> list[str]:
        """Ids for a label, best first; empty when nothing matches."""
        if mention in self.exact:
            return list(self.exact[mention])
        folded = _fold(mention)
        if folded in self.folded:
            return list(self.folded[folded])
        scored: list[tuple[float, int, str]] = []
        for order, (key, ids) in enumerate(self.folded.items()):
            score = max(_ratio(folded, key, threshold), _token_set_ratio(folded, key, threshold))
            if score >= threshold:
                scored.extend((-score, order, ent) for ent in ids)
        ids_out: list[str] = []
        for _, _, ent in sorted(scored):
            if ent not in ids_out:
                ids_out.append(ent)
        return ids_out


# --------------------------------------------------------------------------- denormalise


@dataclass(frozen=True)
class _Token:
    kind: str  # open | close | span | quoted | word
    text: str
    pos: int


def _scan(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, n = 0, len(text)
    while pos < n:
        ch = text[pos]
        if ch.isspace():
            pos += 1
        elif ch in "()":
            tokens.append(_Token("open" if ch == "(" else "close", ch, pos))
            pos += 1
        elif ch == "[":
            end = find_span_end(text, pos)
            if end == -1:
                raise SExprError(f"'[' at offset {pos} is never closed")
            tokens.append(_Token("span", text[pos + 1 : end].strip(), pos))
            pos = end + 1
        elif ch == '"':
            m = QUOTED_RE.match(text, pos)
            if m is None:
                raise SExprError(f"unterminated quoted literal at offset {pos}")
            tokens.append(_Token("quoted", m.group(), pos))
            pos = m.end()
        else:
            m = WORD_RE.match(text, pos)
            assert m is not None  # a non-space, non-paren character starts a word
            tokens.append(_Token("word", m.group(), pos))
            pos = m.end()
    return tokens


class _Reader:
    """Recursive-descent reader of normalised text into S-expression pieces with entity slots."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.pieces: list[str | int] = []  # text, or the index of an entity mention
        self.mentions: list[str] = []

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Token:
        tok = self.peek()
        if tok is None:
            raise SExprError("unbalanced parentheses: the expression ends too early")
        self.i += 1
        return tok

    def read(self) -> None:
        if not self.tokens:
            raise SExprError("empty normalised S-expression")
        self.argument()
        if self.peek() is not None:
            tok = self.tokens[self.i]
            raise SExprError(f"unexpected text after the expression at offset {tok.pos}: {tok.text!r}")

    def call(self) -> None:
        self.take()  # "("
        self.pieces.append("(" + self.operator())
        while True:
            tok = self.peek()
            if tok is None:
                raise SExprError("unbalanced parentheses: a '(' is never closed")
            if tok.kind == "close":
                self.i += 1
                break
            self.pieces.append(" ")
            self.argument()
        self.pieces.append(")")

    def operator(self) -> str:
        tok = self.take()
        if tok.kind != "word":
            raise SExprError(f"expected an operator after '(' at offset {tok.pos}, got {tok.text!r}")
        words = tok.text.lower()
        nxt = self.peek()
        if words in TWO_WORD_OPERATOR_HEADS and nxt is not None and nxt.kind == "word":
            self.i += 1
            words = f"{words} {nxt.text.lower()}"
        op = OPERATOR_FROM_WORDS.get(words)
        if op is None:
            raise SExprError(f"unknown operator {words!r} at offset {tok.pos}")
        return op

    def argument(self) -> None:
        tok = self.peek()
        if tok is None:
            raise SExprError("unbalanced parentheses: the expression ends too early")
        if tok.kind == "open":
            self.call()
            return
        self.i += 1
        if tok.kind == "close":
            raise SExprError(f"unbalanced parentheses: unexpected ')' at offset {tok.pos}")
        if tok.kind == "span":
            self.span(tok)
        elif tok.kind == "quoted":
            self.pieces.append(tok.text)
        else:
            self.word(tok)

    def span(self, tok: _Token) -> None:
        content = tok.text
        if not content:
            raise SExprError(f"empty brackets at offset {tok.pos}")
        if SCHEMA_SEP_RE.search(content):
            self.pieces.append(words_to_schema(content))
        elif ENTITY_RE.match(content):
            self.pieces.append(content)
        else:
            self.pieces.append(len(self.mentions))
            self.mentions.append(content)

    def word(self, tok: _Token) -> None:
        text = tok.text
        if ENTITY_RE.match(text) or SCHEMA_RE.match(text):  # a raw id, as some models write it
            self.pieces.append(text)
            return
        dtype_words: list[str] = []
        while (nxt := self.peek()) is not None and nxt.kind == "word":
            dtype_words.append(nxt.text)
            self.i += 1
        if not dtype_words:
            if text.upper() == "NOW":
                self.pieces.append("NOW")
            elif NUMBER_RE.match(text) or "^^" in text:
                self.pieces.append(text)
            else:
                raise SExprError(f"unknown token {text!r} at offset {tok.pos}")
            return
        phrase = " ".join(dtype_words)
        local = DATATYPE_FROM_WORDS.get(phrase.lower())
        if local is None and len(dtype_words) == 1 and LOCAL_NAME_RE.match(phrase):
            local = phrase
        if local is None or not TYPED_VALUE_RE.match(text):
            raise SExprError(f"cannot read a typed literal from {text + ' ' + phrase!r} at offset {tok.pos}")
        self.pieces.append(f"{text}^^{XSD}{local}")


def _read(text: str) -> _Reader:
    if not isinstance(text, str):
        raise SExprError(f"a normalised S-expression must be a string, got {type(text).__name__}")
    reader = _Reader(_scan(text))
    reader.read()
    return reader


def _fill(pieces: Sequence[str | int], choice: Sequence[str]) -> str:
    return "".join(p if isinstance(p, str) else choice[p] for p in pieces)


def _resolve_all(
    reader: _Reader,
    label_to_ids: Mapping[str, Sequence[str]] | None,
    candidates: Sequence[tuple[str, str]] | None,
    fuzzy_threshold: float,
) -> list[list[str]]:
    index = _EntityIndex(label_to_ids, candidates) if reader.mentions else None
    options: list[list[str]] = []
    for mention in reader.mentions:
        assert index is not None
        ids = index.resolve(mention, fuzzy_threshold)
        if not ids:
            raise SExprError(f"no entity matches the label {mention!r}")
        options.append(ids)
    return options


def denormalize_all(
    text: str,
    label_to_ids: Mapping[str, Sequence[str]] | None = None,
    candidates: Sequence[tuple[str, str]] | None = None,
    fuzzy_threshold: float = 0.8,
    max_variants: int = 16,
) -> list[str]:
    """Every reading of a normalised S-expression, one per choice of id for ambiguous labels.

    Readings come in order: the first is what :func:`denormalize_sexpr` returns; later ones
    vary the last mentions first (``itertools.product`` order over each label's ids, best
    match first). Useful for execution-guided decoding: execute them in order.

    Args:
        text: Normalised S-expression (as written by :func:`normalize_sexpr` or a model).
        label_to_ids: Label → entity ids (e.g. ``invert_labels(topic_entities)``).
        candidates: Further (id, label) pairs, e.g. from entity linking.
        fuzzy_threshold: Least similarity (see :func:`label_similarity`) of a fuzzy match.
        max_variants: At most this many readings.

    Returns:
        Distinct S-expressions, each valid for :func:`kbqa_lit.kb.lf.sexpr.parse_sexpr`.

    Raises:
        SExprError: When the text is malformed or a label matches no entity.

    """
    reader = _read(text)
    options = _resolve_all(reader, label_to_ids, candidates, fuzzy_threshold)
    first = _fill(reader.pieces, [ids[0] for ids in options])
    parse_sexpr(first)  # the structure is the same for every reading
    out: list[str] = []
    for choice in itertools.product(*options):
        if len(out) >= max_variants:
            break
        expr = _fill(reader.pieces, choice)
        if expr not in out:
            out.append(expr)
    return out


def denormalize_sexpr(
    text: str,
    label_to_ids: Mapping[str, Sequence[str]] | None = None,
    candidates: Sequence[tuple[str, str]] | None = None,
    fuzzy_threshold: float = 0.8,
) -> str:
    """Map a normalised S-expression back to an executable one.

    Labels in brackets become entity ids: exact match first, then case- and space-insensitive,
    then the best fuzzy match over every known (id, label) pair; ``[ m.0abc ]`` is the id
    itself. When a label names several entities, the first id wins (see :func:`denormalize_all`).

    Args:
        text: Normalised S-expression, e.g. ``( join [ people , person , nationality ] [ Justin Bieber ] )``.
        label_to_ids: Label → entity ids (e.g. ``invert_labels(topic_entities)``).
        candidates: Further (id, label) pairs, e.g. from entity linking.
        fuzzy_threshold: Least similarity (see :func:`label_similarity`) of a fuzzy match.

    Returns:
        Single-spaced S-expression text that :func:`kbqa_lit.kb.lf.sexpr.parse_sexpr` accepts.

    Raises:
        SExprError: When the text is malformed or a label matches no entity.

    """
    reader = _read(text)
    options = _resolve_all(reader, label_to_ids, candidates, fuzzy_threshold)
    expr = _fill(reader.pieces, [ids[0] for ids in options])
    return to_sexpr_string(parse_sexpr(expr))
