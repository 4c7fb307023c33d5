"""Topic-entity slots: write a question's topic entities as ``[E0]``, ``[E1]``... and back.

A generator that writes entity labels must learn to copy them from its input; a small model
trained from scratch learns the logical-form structure long before it learns to copy names it
has rarely seen (measured on the synthetic world: after 1,000 steps the tiny T5 got the
entity-agnostic structure right for 21 of 150 dev questions but copied the topic entity for 1).
With slots, the inputs name the topic entities by position and the target says ``[E0]`` where
the normalised S-expression says ``[ label ]``; after generation :func:`unmask_lf` puts the
labels back, so denormalisation and execution see ordinary normalised S-expressions.

The slots use only what inference has: the example's ``topic_entities`` — at validation, test and
predict time the *linked* entities (:mod:`kbqa_lit.data.linking`), which denormalisation uses as
its label map anyway. Slot ``k`` is the ``k``-th distinct label in the order the labels occur in the
question (labels not in the question last, in the example's order), so training (gold entities)
and inference (linked entities, in the linker's order) number the same mention alike; at most
:data:`MAX_SLOTS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbqa_lit.data.schema import KBQAExample

MAX_SLOTS = 8
#: The slot tokens, added to every tokenizer as ordinary (not special) tokens so decoding keeps them.
SLOT_TOKENS: tuple[str, ...] = tuple(f"[E{k}]" for k in range(MAX_SLOTS))
_SLOT = re.compile(r"\[E([0-9])\]")


def topic_slots(ex: KBQAExample) -> list[tuple[str, str]]:
    """``(slot token, label)`` per distinct topic-entity label, by position in the question (at most 8)."""
    labels: dict[str, str] = {}
    for label in ex.topic_entities.values():
        label = " ".join(str(label).split())
        if label and label.lower() not in labels:
            labels[label.lower()] = label
    question = " ".join(ex.question.split()).lower()

    def position(key: str) -> int:
        at = question.find(key)
        return at if at >= 0 else len(question) + 1

    ordered = sorted(labels, key=position)  # stable: labels not in the question keep their order
    return [(SLOT_TOKENS[k], labels[key]) for k, key in enumerate(ordered[:MAX_SLOTS])]


def _longest_first(slots: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted(slots, key=lambda s: -len(s[1]))


def mask_text(text: str, slots: Sequence[tuple[str, str]]) -> str:
    """Replace each label's occurrences in free text (case-insensitive, whole words) by its slot.

    MetaQA-style brackets around a mention (``[Temuera Morrison]``) are replaced with it; an
    underscore between a label's words counts as a space (PathQuestion's ``frederica_of_...``).
    """
    for token, label in _longest_first(slots):
        words = r"[\s_]+".join(re.escape(w) for w in label.split())  # PathQuestion writes names with "_"
        pattern = rf"\[\s*{words}\s*\]|(?<!\w){words}(?!\w)"
        text = re.sub(pattern, token, text, flags=re.IGNORECASE)
    return text


def mask_lf(normalized: str, slots: Sequence[tuple[str, str]]) -> str:
    """Replace each ``[ label ]`` entity span of a normalised S-expression by its slot."""
    for token, label in _longest_first(slots):
        normalized = normalized.replace(f"[ {label} ]", token)
    return normalized


def unmask_lf(text: str, ex: KBQAExample) -> str:
    """Put the example's topic-entity labels back where a generated S-expression has slots.

    A slot the example has no topic entity for is left as it is (the beam then fails to
    denormalise, as any unknown label does).
    """
    labels = dict(topic_slots(ex))
    if not labels or "[E" not in text:
        return text

    def put(m: re.Match[str]) -> str:
        label = labels.get(m.group(0))
        return f" [ {label} ] " if label else m.group(0)

    return " ".join(_SLOT.sub(put, text).split())


def unmask_text(text: str, slots: Sequence[tuple[str, str]]) -> str:
    """Put the labels back where free text (a generated decomposition) has slots; unknown slots stay."""
    labels = dict(slots)
    if not labels or "[E" not in text:
        return text
    return _SLOT.sub(lambda m: labels.get(m.group(0), m.group(0)), text)


__all__ = ["MAX_SLOTS", "SLOT_TOKENS", "mask_lf", "mask_text", "topic_slots", "unmask_lf", "unmask_text"]
