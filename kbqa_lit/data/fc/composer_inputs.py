"""FC-KBQA's composer input: the question, the KB-connected pairs and the skeletons in one text.

Two formats (``input_format``):

- ``paper`` (the default; FC-KBQA §4.5)::

      question; [CL]c1 [REL]r1; [REL]r1 [REL]r2; [ENT]e1; [ENT]e2; [LF]skeleton1; [LF]skeleton2

  The question, the class–relation pairs (a range pair names the reverse relation,
  ``[CL]c [REL](R r)``), the relation–relation pairs (``r1``'s objects are ``r2``'s subjects; a hop
  may be ``(R r)``), every linked entity (``[ENT]e``), the skeletons. Relation–entity pairs are not
  written (they still constrain decoding: :mod:`kbqa_lit.data.fc.decoding`).
- ``entity-pairs`` (ours, the project's first format)::

      question; [CL]c1 [REL]r1; [REL]r1 [REL]r2; [REL]r3 [ENT]e1; [ENT]e2; [LF]skeleton1; [LF]skeleton2

  As ``paper`` plus the relation–entity pairs after the relation–relation ones; an entity that is
  in a relation–entity pair gets no bare ``[ENT]e`` segment.

Segments are joined by ``"; "`` in that order. Items come in the order given: each pair list best
first (detection orders it by the sum of its parts' scores, :mod:`kbqa_lit.pipelines.fc.pairs`), the
entities in linking order. An entity is written as ``entity_text[id]`` when given (e.g. its label),
else its id.

**Cut only by the length limit**: while the text is longer than ``max_tokens``, the last (worst)
pair of the kind that has the most pairs left is dropped — the written kinds (two in ``paper``,
three in ``entity-pairs``) shrink evenly (on a tie class–relation pairs go first, then
relation–relation ones). The question, the entities and the skeletons are never cut. Length is the
sum of the segments' token counts (``count_tokens``, default whitespace words; pass a tokenizer's
for model tokens) plus one per separator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kbqa_lit.errors import check_choice

PairKind = Literal["class-relation", "relation-relation", "relation-entity"]
PAIR_KINDS: tuple[PairKind, ...] = ("class-relation", "relation-relation", "relation-entity")
InputFormat = Literal["paper", "entity-pairs"]
#: The composer input formats: the paper's (§4.5) first, the default.
INPUT_FORMATS: tuple[InputFormat, ...] = ("paper", "entity-pairs")
#: The pair kinds each format writes, in segment order.
FORMAT_KINDS: dict[str, tuple[PairKind, ...]] = {
    "paper": ("class-relation", "relation-relation"),
    "entity-pairs": PAIR_KINDS,
}
MARK_CLASS, MARK_REL, MARK_ENT, MARK_LF = "[CL]", "[REL]", "[ENT]", "[LF]"
SEPARATOR = "; "


@dataclass(frozen=True)
class Pair:
    """A KB-connected pair of components.

    Attributes:
        kind: ``class-relation``, ``relation-relation`` or ``relation-entity``.
        first: The class, the first relation, or the relation.
        second: The relation (``(R r)`` when the class is its range), the second relation, or the entity.
        score: The sum of the parts' scores.
    """

    kind: PairKind
    first: str
    second: str
    score: float


def check_input_format(input_format: str) -> str:
    """``input_format`` when it is one of :data:`INPUT_FORMATS`.

    Raises:
        UserInputError: When it is not.
    """
    return check_choice("input_format", input_format, INPUT_FORMATS)


def pair_text(pair: Pair, entity_text: Mapping[str, str] | None = None) -> str:
    """``[CL]c [REL]r``, ``[REL]r1 [REL]r2`` or ``[REL]r [ENT]e`` of one pair."""
    if pair.kind == "class-relation":
        return f"{MARK_CLASS}{pair.first} {MARK_REL}{pair.second}"
    if pair.kind == "relation-relation":
        return f"{MARK_REL}{pair.first} {MARK_REL}{pair.second}"
    name = (entity_text or {}).get(pair.second, pair.second)
    return f"{MARK_REL}{pair.first} {MARK_ENT}{name}"


def _words(text: str) -> int:
    return len(text.split())


def composer_input(
    question: str,
    pairs: Sequence[Pair],
    entities: Sequence[str] = (),
    skeletons: Sequence[str] = (),
    entity_text: Mapping[str, str] | None = None,
    max_tokens: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
    input_format: InputFormat = "paper",
) -> str:
    """The composer's input text (see the module docstring).

    Args:
        question: The question.
        pairs: The pairs; within each kind, best first (kinds may be interleaved).
        entities: The linked entities, best first (``paper``: each gets an ``[ENT]`` segment;
            ``entity-pairs``: those in no relation–entity pair).
        skeletons: The skeleton candidates (top-2).
        entity_text: Entity id → the text written for it (default: the id).
        max_tokens: The length limit (``None``: no limit).
        count_tokens: Tokens of a text (default: whitespace words).
        input_format: ``paper`` (§4.5: no relation–entity pairs) or ``entity-pairs`` (ours).

    Raises:
        UserInputError: For an unknown ``input_format``.
    """
    kinds = FORMAT_KINDS[check_input_format(input_format)]
    count = count_tokens or _words
    by_kind: dict[PairKind, list[str]] = {k: [] for k in kinds}
    for pair in pairs:
        if pair.kind in by_kind:
            by_kind[pair.kind].append(pair_text(pair, entity_text))
    # an entity is written once: in its relation–entity pairs where they are written, else bare
    paired = {p.second for p in pairs if p.kind == "relation-entity"} if "relation-entity" in kinds else set()
    names = entity_text or {}
    bare = [f"{MARK_ENT}{names.get(e, e)}" for e in dict.fromkeys(entities) if e not in paired]
    fixed = [" ".join(question.split()), *bare, *(f"{MARK_LF}{s}" for s in skeletons)]
    if max_tokens is not None:
        costs = {k: [count(t) for t in texts] for k, texts in by_kind.items()}
        n_segments = len(fixed) + sum(len(c) for c in costs.values())
        total = sum(count(t) for t in fixed) + sum(sum(c) for c in costs.values()) + n_segments - 1
        while total > max_tokens and any(by_kind.values()):
            kind = max(kinds, key=lambda k: (len(by_kind[k]), -kinds.index(k)))
            by_kind[kind].pop()
            total -= costs[kind].pop() + 1
    segments = [fixed[0], *(t for k in kinds for t in by_kind[k]), *fixed[1:]]
    return SEPARATOR.join(segments)


__all__ = [
    "FORMAT_KINDS",
    "INPUT_FORMATS",
    "MARK_CLASS",
    "MARK_ENT",
    "MARK_LF",
    "MARK_REL",
    "PAIR_KINDS",
    "InputFormat",
    "Pair",
    "check_input_format",
    "composer_input",
    "pair_text",
]
