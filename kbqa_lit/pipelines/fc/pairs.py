"""FC-KBQA's middle-grained constraint: KB-connected pairs of the detected components.

From the extractors' top classes and relations (``(id, score)``, best first) and the linked
entities, :class:`PairBuilder` builds three pair sets, each ordered by the sum of its parts'
scores (ties keep the input order):

- **class–relation** ``P_c-r``: ``(c, r)`` when ``c`` is ``r``'s domain, ``(c, (R r))`` when it is
  ``r``'s range (the reverse relation reaches ``c``'s instances);
- **relation–relation** ``P_r-r``: ``(r1, r2)`` when ``r1``'s range is ``r2``'s domain by the
  ontology, confirmed by executing the two-hop connection ``?x r1 ?y . ?y r2 ?z`` on the KB
  (:class:`~kbqa_lit.kb.connectivity.RelationChains`: batched ASKs, cached across questions);
  ``r1 = r2`` is allowed (``containedby`` of ``containedby``);
- **relation–entity** ``P_r-e``: the pruning step's edges
  (:attr:`~kbqa_lit.pipelines.fc.pruning.LinkedEntity.relations`), built only when some skeleton
  candidate has an ``<entity>`` slot (or no skeletons are given); the entity's part of the score
  is its linking score.

**Type match** (``type_match``; the paper says "is"): ``exact`` — the class ids are equal (the
paper); ``hierarchy`` (default) — equal, or one is a superclass of the other in the ontology
(``location.city`` reaches ``location.location``); ``kb`` — the ontology's classes are not
consulted: relation–relation pairs are every ordered pair the KB chains, class–relation pairs
are those with a typed instance on that side in the KB
(:class:`~kbqa_lit.kb.connectivity.TypedRelations`); for KBs whose ontology lacks the class
hierarchy, such as the synthetic world (its cities are ``location.location`` only by type
triples). Literal ranges (``type.int``...) never chain. Without a store the ontology alone
decides (``kb`` then needs one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.schema_source import LITERAL_TYPE_PREFIX
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.connectivity import RelationChains, TypedRelations
from kbqa_lit.kb.ontology import Ontology
from kbqa_lit.kb.sexpr import SKELETON_TOKENS
from kbqa_lit.pipelines.fc.pruning import LinkedEntity

TYPE_MATCHES = ("exact", "hierarchy", "kb")


@dataclass
class PairSet:
    """The pairs of one question, each list best first.

    Attributes:
        class_relation: ``P_c-r``.
        relation_relation: ``P_r-r``.
        relation_entity: ``P_r-e``.
    """

    class_relation: list[Pair] = field(default_factory=list)
    relation_relation: list[Pair] = field(default_factory=list)
    relation_entity: list[Pair] = field(default_factory=list)

    @property
    def all(self) -> list[Pair]:
        """Every pair: class–relation, relation–relation, relation–entity."""
        return [*self.class_relation, *self.relation_relation, *self.relation_entity]


def _ranked(pairs: list[Pair]) -> list[Pair]:
    return sorted(pairs, key=lambda p: -p.score)  # stable: ties keep the input order


class PairBuilder:
    """Build the KB-connected pairs of a question (see the module docstring).

    Args:
        ontology: Domains, ranges and the class hierarchy.
        store: The KB that confirms relation–relation pairs (and decides under ``kb``); ``None``:
            the ontology alone.
        type_match: ``exact``, ``hierarchy`` or ``kb``.
        batch_size: ASK queries per batch.
    """

    def __init__(self, ontology: Ontology, store: Any = None, type_match: str = "hierarchy", batch_size: int = 100):
        if type_match not in TYPE_MATCHES:
            raise UserInputError(f"type_match must be one of {', '.join(TYPE_MATCHES)}, got {type_match!r}")
        if type_match == "kb" and store is None:
            raise UserInputError("type_match 'kb' needs a store")
        self.ontology = ontology
        self.type_match = type_match
        self.chains = RelationChains(store, batch_size) if store is not None else None
        self.typed = TypedRelations(store, batch_size) if store is not None else None

    def same_type(self, a: str | None, b: str | None) -> bool:
        """Whether two classes match under ``type_match`` (literal types never do)."""
        if not a or not b or a.startswith(LITERAL_TYPE_PREFIX) or b.startswith(LITERAL_TYPE_PREFIX):
            return False
        if a == b:
            return True
        return self.type_match != "exact" and (b in self.ontology.superclasses(a) or a in self.ontology.superclasses(b))

    def class_relation(
        self, classes: Sequence[tuple[str, float]], relations: Sequence[tuple[str, float]]
    ) -> list[Pair]:
        """``P_c-r``, best first."""
        cands = [(c, sc, r, sr, side) for c, sc in classes for r, sr in relations for side in ("domain", "range")]
        if self.type_match == "kb":
            assert self.typed is not None
            ok = self.typed.holds([(c, r, side) for c, _, r, _, side in cands])
        else:
            onto = self.ontology
            ok = [
                self.same_type(c, onto.domain(r) if side == "domain" else onto.range(r)) for c, _, r, _, side in cands
            ]
        pairs = [
            Pair("class-relation", c, r if side == "domain" else f"(R {r})", sc + sr)
            for (c, sc, r, sr, side), good in zip(cands, ok, strict=True)
            if good
        ]
        return _ranked(pairs)

    def relation_relation(self, relations: Sequence[tuple[str, float]]) -> list[Pair]:
        """``P_r-r``, best first: ontology-compatible (unless ``kb``), then confirmed on the KB."""
        cands = [(r1, s1, r2, s2) for r1, s1 in relations for r2, s2 in relations]
        if self.type_match != "kb":
            onto = self.ontology
            cands = [c for c in cands if self.same_type(onto.range(c[0]), onto.domain(c[2]))]
        if self.chains is not None:
            ok = self.chains.chained([(r1, r2) for r1, _, r2, _ in cands])
            cands = [c for c, good in zip(cands, ok, strict=True) if good]
        return _ranked([Pair("relation-relation", r1, r2, s1 + s2) for r1, s1, r2, s2 in cands])

    def relation_entity(self, relations: Sequence[tuple[str, float]], entities: Sequence[LinkedEntity]) -> list[Pair]:
        """``P_r-e``, best first: each linked entity with each top relation it has an edge to."""
        scores = dict(relations)
        pairs = [
            Pair("relation-entity", r, e.id, scores[r] + e.score) for e in entities for r in e.relations if r in scores
        ]
        return _ranked(pairs)

    def build(
        self,
        classes: Sequence[tuple[str, float]],
        relations: Sequence[tuple[str, float]],
        entities: Sequence[LinkedEntity] = (),
        skeletons: Sequence[str] = (),
    ) -> PairSet:
        """The three pair sets of a question (relation–entity pairs only when a skeleton has ``<entity>``)."""
        wants_entities = not skeletons or any(SKELETON_TOKENS["entity"] in s for s in skeletons)
        return PairSet(
            self.class_relation(classes, relations),
            self.relation_relation(relations),
            self.relation_entity(relations, entities) if wants_entities else [],
        )


__all__ = ["TYPE_MATCHES", "PairBuilder", "PairSet"]
