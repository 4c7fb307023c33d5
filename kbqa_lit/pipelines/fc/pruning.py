"""Relation-aware entity pruning (FC-KBQA): keep candidates with a KB edge to a top-k relation.

For every mention, a candidate entity survives when the KB holds an edge — in either direction —
between it and at least one of the relation extractor's top-k relations; the edges of all
candidates × relations are asked in batched ``VALUES`` queries and cached
(:class:`~kbqa_lit.kb.index.connectivity.Connectivity`). Among the survivors the most popular (degree)
is picked, ties broken by the linker's score and then the id. When no candidate survives, the
mention is dropped (``on_empty="drop"``, the paper's: an entity with no connected relation is
pruned; ``configs/fc/detect.yaml``) or keeps its unpruned pick (``"keep"``, ours and the class's
default: linking errors of the relation extractor should not erase an entity;
``configs/fc/detect_extended.yaml``). The surviving edges are the relation–entity pairs ``P_r-e``
of :mod:`kbqa_lit.pipelines.fc.pairs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.index.connectivity import Connectivity

ON_EMPTY = ("keep", "drop")


@dataclass(frozen=True)
class ScoredEntity:
    """A candidate entity of a mention.

    Attributes:
        id: Entity id.
        score: The linker's score.
        label: Its name ("" when unknown).
        degree: Its popularity, when the linker knows it.
    """

    id: str
    score: float
    label: str = ""
    degree: int | None = None


@dataclass(frozen=True)
class EntityMention:
    """A mention and its candidates, best first.

    Attributes:
        mention: The question text.
        candidates: Scored candidate entities.
    """

    mention: str
    candidates: tuple[ScoredEntity, ...]


@dataclass(frozen=True)
class LinkedEntity:
    """The entity picked for a mention.

    Attributes:
        mention: The question text.
        id: The picked entity.
        score: The linker's score of it.
        label: Its name.
        degree: Its popularity.
        relations: The top-k relations it has a KB edge to (best first).
        pruned: Whether pruning decided the pick (false: no store, or every candidate was pruned).
    """

    mention: str
    id: str
    score: float
    label: str
    degree: int
    relations: tuple[str, ...]
    pruned: bool


class RelationAwarePruner:
    """Pick one entity per mention, pruning candidates without an edge to the top-k relations.

    Args:
        store: The KB (``None``: no pruning, the most popular candidate is picked).
        degree: Popularity of a candidate without one (default 0).
        top_k: Relations (best first) whose edges count.
        on_empty: ``keep`` (ours) or ``drop`` (the paper's) a mention whose candidates are all pruned.
        batch_size: (relation, entity) pairs per ``VALUES`` query.
    """

    def __init__(
        self,
        store: Any,
        degree: Callable[[str], int] | None = None,
        top_k: int = 10,
        on_empty: str = "keep",
        batch_size: int = 100,
    ) -> None:
        check_choice("on_empty", on_empty, ON_EMPTY)
        if top_k < 1:
            raise UserInputError(f"top_k must be >= 1, got {top_k}")
        self.connectivity = Connectivity(store, batch_size) if store is not None else None
        self.degree = degree
        self.top_k = top_k
        self.on_empty = on_empty

    def _degree(self, cand: ScoredEntity) -> int:
        if cand.degree is not None:
            return cand.degree
        return int(self.degree(cand.id)) if self.degree is not None else 0

    def edges(self, entities: Sequence[str], relations: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Entity → the given relations it has a KB edge to (in the relations' order); batched, cached."""
        if self.connectivity is None:
            return {e: () for e in entities}
        rels = list(dict.fromkeys(relations))
        ents = list(dict.fromkeys(entities))
        pairs = [(r, e) for e in ents for r in rels]
        ok = dict(zip(pairs, self.connectivity.connected(pairs), strict=True))
        return {e: tuple(r for r in rels if ok[(r, e)]) for e in ents}

    def _best(self, cands: Sequence[ScoredEntity]) -> ScoredEntity:
        return min(cands, key=lambda c: (-self._degree(c), -c.score, c.id))

    def pick(self, mentions: Sequence[EntityMention], relations: Sequence[str]) -> list[LinkedEntity]:
        """One :class:`LinkedEntity` per mention with candidates (see the module docstring)."""
        top = list(dict.fromkeys(relations))[: self.top_k]
        edges = self.edges([c.id for m in mentions for c in m.candidates], top)
        out: list[LinkedEntity] = []
        for m in mentions:
            if not m.candidates:
                continue
            alive = [c for c in m.candidates if edges[c.id]] if self.connectivity is not None else []
            if not alive and self.connectivity is not None and self.on_empty == "drop":
                continue
            best = self._best(alive or m.candidates)
            out.append(
                LinkedEntity(
                    m.mention, best.id, best.score, best.label, self._degree(best), edges[best.id], bool(alive)
                )
            )
        return out


__all__ = ["ON_EMPTY", "EntityMention", "LinkedEntity", "RelationAwarePruner", "ScoredEntity"]
