"""The two item texts of CoQ's joint relation/entity classifier (pure text; no KB, no tokenizer).

::

    Relation Classification: q ; D ; people , person , place of birth
    Entity Classification: q ; D ; Justin Bieber | people , person , place of birth | ...

``D`` is the decomposition (or one sub-chain of it; left out when empty). Relations are written
as words (:func:`~kbqa_lit.kb.lf.normalize.schema_to_words`). Used by the datamodule that builds
training items, by the classifier's inference API and by pattern scoring, so the three agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kbqa_lit.kb.lf.normalize import schema_to_words

REL_PREFIX = "Relation Classification: "
ENT_PREFIX = "Entity Classification: "
PART_SEP = " ; "
ENT_REL_SEP = " | "
#: Task ids of the ``task`` tensor of a batch.
REL_TASK, ENT_TASK = 0, 1


def _clean(text: str) -> str:
    return " ".join(text.split())


def relation_text(question: str, decomposition: str | None, relation: str) -> str:
    """``Relation Classification: q ; D ; relation words`` (``D`` left out when empty)."""
    parts = [question, decomposition or "", schema_to_words(relation)]
    return _clean(REL_PREFIX + PART_SEP.join(p.strip() for p in parts if p and p.strip()))


def entity_text(question: str, decomposition: str | None, label: str, relations: Sequence[str] = ()) -> str:
    """``Entity Classification: q ; D ; label | r1 words | r2 words`` (``D`` left out when empty)."""
    entity = ENT_REL_SEP.join([label.strip() or "?", *(schema_to_words(r) for r in relations)])
    parts = [question, decomposition or "", entity]
    return _clean(ENT_PREFIX + PART_SEP.join(p.strip() for p in parts if p and p.strip()))


def entity_item_relations(one_hop: Iterable[str], refined: Sequence[str], limit: int) -> list[str]:
    """The entity's 1-hop relations that are among ``refined``, in ``refined`` order, at most ``limit``."""
    have = set(one_hop)
    return [r for r in dict.fromkeys(refined) if r in have][:limit]


__all__ = [
    "ENT_PREFIX",
    "ENT_REL_SEP",
    "ENT_TASK",
    "PART_SEP",
    "REL_PREFIX",
    "REL_TASK",
    "entity_item_relations",
    "entity_text",
    "relation_text",
]
