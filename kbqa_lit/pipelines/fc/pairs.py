"""FC-KBQA's middle-grained constraint: KB-connected pairs of the detected components.

From the extractors' top classes and relations (``(id, score)``, best first) and the linked
entities, :class:`PairBuilder` builds three pair sets, each ordered by the sum of its parts'
scores (ties keep the input order):

- **class–relation** ``P_c-r``: ``(c, r)`` when ``c`` is ``r``'s domain, ``(c, (R r))`` when it is
  ``r``'s range (the reverse relation reaches ``c``'s instances);
- **relation–relation** ``P_r-r``: ``(r1, r2)`` when ``r1``'s range is ``r2``'s domain by the
  ontology, confirmed by executing the two-hop connection ``?x r1 ?y . ?y r2 ?z`` on the KB
  (:class:`~kbqa_lit.kb.index.connectivity.RelationChains`: batched ASKs, cached across questions);
  ``r1 = r2`` is allowed (``containedby`` of ``containedby``). The paper's pairs are these forward
  connections (``reverse_hops: false`` in ``configs/fc/detect.yaml``). With ``reverse_hops`` (ours,
  the class's default and ``configs/fc/detect_extended.yaml``'s) a hop may go backwards, written
  ``(R r)`` (its domain is ``r``'s range): ``((R r1), r2)`` joins two relations on their subjects
  — the two relations of a mediator (CVT) node, as in
  ``(JOIN (R film.performance.film) (JOIN film.performance.actor e))`` — and ``(r1, (R r2))`` on
  their objects (``(film.performance.film, (R film.performance.film))``: the other performances of
  a film, the co-star path); both hops backwards is the forward pair read the other way and is
  left out. The chain must reach a node other than its start (``?x != ?z``). Measured on the small
  synthetic world (all 434 gold two-hop chains of its splits, every relation as a candidate): the
  ``kb`` pairs hold 100 % of them with reverse hops, 47 % without; ``hierarchy`` 74 % / 23 %;
- **relation–entity** ``P_r-e``: the pruning step's edges
  (:attr:`~kbqa_lit.pipelines.fc.pruning.LinkedEntity.relations`), built only when some skeleton
  candidate has an ``<entity>`` slot (or no skeletons are given); the entity's part of the score
  is its linking score.

**Type match** (``type_match``; the paper says "is"): ``exact`` — the class ids are equal (the
paper; ``configs/fc/detect.yaml``); ``hierarchy`` (default) — equal, or one is a superclass of
the other in the ontology (``location.city`` reaches ``location.location``); ``kb`` — the ontology's classes are not
consulted: relation–relation pairs are every ordered pair the KB chains, class–relation pairs
are those with a typed instance on that side in the KB
(:class:`~kbqa_lit.kb.index.connectivity.TypedRelations`); for KBs whose ontology lacks the class
hierarchy, such as the synthetic world (its cities are ``location.location`` and its actors
``people.person`` only by type triples: ``kb`` holds all 42 gold class–relation pairs of its
splits, ``exact`` and ``hierarchy`` none); ``kb`` is ``configs/fc/detect_extended.yaml``'s (ours).
Literal ranges (``type.int``...) never chain. Without a store the ontology alone decides (``kb``
then needs one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.schema_source import LITERAL_TYPE_PREFIX
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.index.connectivity import ASK_SAMPLE, RelationChains, TypedRelations
from kbqa_lit.kb.lf.ontology import Ontology
from kbqa_lit.kb.lf.sexpr import SKELETON_TOKENS, base_relation
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


def _kept(h1: str, h2: str) -> bool:
    """Whether a hop pair is a candidate: not both hops backwards (that is a forward pair read back)."""
    return not (h1.startswith("(R ") and h2.startswith("(R "))


def _ranked(pairs: list[Pair]) -> list[Pair]:
    return sorted(pairs, key=lambda p: -p.score)  # stable: ties keep the input order


class PairBuilder:
    """Build the KB-connected pairs of a question (see the module docstring).

    Args:
        ontology: Domains, ranges and the class hierarchy.
        store: The KB that confirms relation–relation pairs (and decides under ``kb``); ``None``:
            the ontology alone.
        type_match: ``exact``, ``hierarchy`` or ``kb``.
        reverse_hops: Relation–relation pairs may take a hop backwards (``(R r)``).
        batch_size: ASK queries per batch.
        ask_sample: Edges / instances each chain or typed ASK follows (``None``: all; see
            :class:`~kbqa_lit.kb.index.connectivity.RelationChains`).
    """

    def __init__(
        self,
        ontology: Ontology,
        store: Any = None,
        type_match: str = "hierarchy",
        reverse_hops: bool = True,
        batch_size: int = 100,
        ask_sample: int | None = ASK_SAMPLE,
    ) -> None:
        check_choice("type_match", type_match, TYPE_MATCHES)
        if type_match == "kb" and store is None:
            raise UserInputError("type_match 'kb' needs a store")
        self.ontology = ontology
        self.type_match = type_match
        self.reverse_hops = reverse_hops
        self.chains = RelationChains(store, batch_size, ask_sample) if store is not None else None
        self.typed = TypedRelations(store, batch_size, ask_sample) if store is not None else None

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

    def _ends(self, hop: str) -> tuple[str | None, str | None]:
        """(start class, end class) of a hop ``r`` or ``(R r)``."""
        if hop.startswith("(R "):
            return self.ontology.range(base_relation(hop)), self.ontology.domain(base_relation(hop))
        return self.ontology.domain(hop), self.ontology.range(hop)

    def relation_relation(self, relations: Sequence[tuple[str, float]]) -> list[Pair]:
        """``P_r-r``, best first: ontology-compatible (unless ``kb``), then confirmed on the KB."""
        hops = list(relations)
        if self.reverse_hops:
            hops += [(f"(R {r})", s) for r, s in relations]
        cands = [(h1, s1, h2, s2) for h1, s1 in hops for h2, s2 in hops if _kept(h1, h2)]
        joint = [(self._ends(h1)[1], self._ends(h2)[0]) for h1, _, h2, _ in cands]
        literal = [any(c and c.startswith(LITERAL_TYPE_PREFIX) for c in j) for j in joint]
        if self.type_match == "kb":
            cands = [c for c, lit in zip(cands, literal, strict=True) if not lit]
        else:
            cands = [c for c, (a, b) in zip(cands, joint, strict=True) if self.same_type(a, b)]
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
