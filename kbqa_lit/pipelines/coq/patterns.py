"""CoQ step 3: patterns = KB-connected (relation, entity) pairs, scored over the decomposition's sub-chains.

Candidate patterns are the pairs ``(r, e)`` of the example's candidate relations × candidate
entities (the top-l of each, the paper's l×l pairs; or only the refined ones, the ``refined``
setting of :class:`~kbqa_lit.pipelines.coq.pattern_writer.PatternWriter`) that are connected in
the KB — ``ASK { { <e> <r> ?x } UNION { ?x <r> <e> } }`` with full IRIs, asked for many pairs
at once with ``VALUES`` and cached per pair (:class:`~kbqa_lit.kb.index.connectivity.Connectivity`, a
shared part since FC-KBQA prunes entities with it). Each candidate is scored over the
sub-chains ``D_i = [SUBQ] q_i [ANS] a_i`` of the decomposition::

    s(P) = Σ_i [ s(q, D_i, r) + s(q, D_i, e) ]

with the classifier's probabilities (:class:`PatternScorer`, e.g.
:class:`~kbqa_lit.modules.coq.schema_classifier.SchemaClassifier`); without a decomposition there is
one chunk and ``D`` is left out of the item (as in the "w/o decomposition" training items). The
top-k are kept (k=5 CWQ, 3 WebQSP).

Modes of :class:`PatternSelector`: ``scored`` (the paper), ``random`` (a seeded sample of the
candidate entities' 1-hop relations — KB-connected by construction —, score ``None``) and
``oracle`` (the gold pairs of the S-expression, see
:func:`~kbqa_lit.data.coq.generator_inputs.gold_patterns`, score ``None``, not cut to k).
Patterns are dicts ``{"relation", "entity", "label", "score"}``, the shape
:mod:`kbqa_lit.data.coq.generator_inputs` reads from ``meta["patterns"]``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from kbqa_lit.data.coq.classifier_texts import entity_item_relations
from kbqa_lit.data.coq.generator_inputs import gold_patterns
from kbqa_lit.data.linking import inference_decomposition
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.index.connectivity import Connectivity, ask_query
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, TYPE_RELATION, is_entity_id

PATTERN_SELECTION_MODES = ("scored", "random", "oracle")
_SUBQ_RE = re.compile(r"(?=\[SUBQ\])")
_NON_SCHEMA = frozenset({NAME_RELATION, TYPE_RELATION, ALIAS_RELATION})


class PatternScorer(Protocol):
    """What pattern scoring needs from the classifier: item probabilities."""

    def score_relations(self, question: str, decomposition: str | None, relations: Sequence[str]) -> list[float]:
        """``s(q, D, r)`` per relation."""
        ...

    def score_entities(
        self, question: str, decomposition: str | None, entities: Sequence[tuple[str, str, Sequence[str]]]
    ) -> list[float]:
        """``s(q, D, e)`` per ``(entity id, label, listed relations)``."""
        ...


def sub_chains(decomposition: str | None) -> list[str | None]:
    """Split ``[SUBQ] q1 [ANS] a1 [SUBQ] q2 ...`` into ``["[SUBQ] q1 [ANS] a1", ...]``.

    A missing or empty decomposition gives ``[None]``: one chunk, the question alone. Text before
    the first ``[SUBQ]`` and a trailing ``[SCHEMA]`` part are dropped.
    """
    if not decomposition or not decomposition.strip():
        return [None]
    text = decomposition.split("[SCHEMA]", 1)[0]
    chunks = [" ".join(c.split()) for c in _SUBQ_RE.split(text)]
    chunks = [c for c in chunks if c.startswith("[SUBQ]")]
    return list(chunks) if chunks else [" ".join(text.split()) or None]


def pattern_scores(
    question: str,
    decomposition: str | None,
    pairs: Sequence[tuple[str, str]],
    scorer: PatternScorer,
    entity_labels: Mapping[str, str] | None = None,
    entity_relations: Mapping[str, Sequence[str]] | None = None,
    refined_relations: Sequence[str] = (),
    max_entity_relations: int = 8,
) -> list[float]:
    """``s(P) = Σ_i [s(q, D_i, r) + s(q, D_i, e)]`` for each pair, over :func:`sub_chains`.

    Args:
        question: The question ``q``.
        decomposition: The decomposition (``None``: one chunk without ``D``).
        pairs: ``(relation, entity)`` pairs.
        scorer: Gives the item probabilities.
        entity_labels: Entity id → label for the entity items (default: the id).
        entity_relations: Entity id → 1-hop relations; the entity item lists those among
            ``refined_relations``.
        refined_relations: The refined relations (order kept in the entity items).
        max_entity_relations: At most this many relations per entity item.
    """
    if not pairs:
        return []
    labels = entity_labels or {}
    hops = entity_relations or {}
    rels = list(dict.fromkeys(r for r, _ in pairs))
    ents = list(dict.fromkeys(e for _, e in pairs))
    items = [
        (e, labels.get(e) or e, entity_item_relations(hops.get(e, []), refined_relations, max_entity_relations))
        for e in ents
    ]
    totals = [0.0] * len(pairs)
    for chunk in sub_chains(decomposition):
        rel_s = dict(zip(rels, scorer.score_relations(question, chunk, rels), strict=True))
        ent_s = dict(zip(ents, scorer.score_entities(question, chunk, items), strict=True))
        for i, (r, e) in enumerate(pairs):
            totals[i] += float(rel_s[r]) + float(ent_s[e])
    return totals


class PatternSelector:
    """Pick the top-k patterns of an example from its candidate (or refined) relations and entities.

    Args:
        store: The KB (for connectivity); not used by ``oracle``.
        top_k: Patterns kept (5 CWQ, 3 WebQSP).
        mode: ``scored``, ``random`` (seeded) or ``oracle`` (gold pairs).
        seed: Seed of ``random`` (combined with the question id).
        max_entity_relations: Relations listed per entity item when scoring.
        batch_size: Pairs per connectivity query.
    """

    def __init__(
        self,
        store: Any,
        top_k: int = 5,
        mode: Literal["scored", "random", "oracle"] = "scored",
        seed: int = 0,
        max_entity_relations: int = 8,
        batch_size: int = 100,
    ) -> None:
        check_choice("pattern mode", mode, PATTERN_SELECTION_MODES)
        if top_k < 1:
            raise UserInputError(f"top_k must be >= 1, got {top_k}")
        self.connectivity = Connectivity(store, batch_size) if store is not None else None
        self.top_k, self.mode, self.seed = top_k, mode, seed
        self.max_entity_relations = max_entity_relations

    def candidate_pairs(self, relations: Sequence[str], entities: Sequence[str]) -> list[tuple[str, str]]:
        """The connected pairs of ``relations × entities`` (relation-major order)."""
        if self.connectivity is None:
            raise UserInputError("pattern selection needs a store for connectivity")
        pairs = [(r, e) for r in dict.fromkeys(relations) for e in dict.fromkeys(entities)]
        return [p for p, ok in zip(pairs, self.connectivity.connected(pairs), strict=True) if ok]

    def one_hop_pairs(
        self, entities: Sequence[str], entity_relations: Mapping[str, Sequence[str]] | None
    ) -> list[tuple[str, str]]:
        """``(r, e)`` for every entity and each of its 1-hop schema relations (connected by construction)."""
        hops = entity_relations or {}
        pairs = [
            (r, e) for e in dict.fromkeys(entities) for r in dict.fromkeys(hops.get(e, [])) if r not in _NON_SCHEMA
        ]
        return [p for p in pairs if is_entity_id(p[1])]

    def select(
        self,
        ex: KBQAExample,
        relations: Sequence[str],
        entities: Sequence[str],
        scorer: PatternScorer | None = None,
        entity_labels: Mapping[str, str] | None = None,
        entity_relations: Mapping[str, Sequence[str]] | None = None,
        use_decomposition: bool = True,
        refined_relations: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The patterns of ``ex`` (best first) from the pairs of ``relations`` × ``entities``.

        Args:
            ex: The example (question, decomposition, qid, gold S-expression for ``oracle``).
            relations: Relation ids the pairs are built from, best first (the top-l candidates, or
                the refined ones).
            entities: Entity ids the pairs are built from, best first.
            scorer: The classifier (required by ``scored``).
            entity_labels: Entity id → label (default: the example's labels).
            entity_relations: Entity id → 1-hop relations, for the entity items (and the pairs of
                ``random``).
            use_decomposition: Score over the sub-chains (false: one chunk without ``D``).
            refined_relations: The refined relations an entity item lists (as the classifier saw
                them); ``None``: ``relations``.
        """
        labels = dict(ex.entity_labels())
        labels.update(entity_labels or {})
        if self.mode == "oracle":
            return [
                {"relation": r, "entity": e, "label": labels.get(e), "score": None}
                for r, e in gold_patterns(ex.s_expression)
            ]
        if self.mode == "random":
            pool = self.one_hop_pairs(entities, entity_relations)
            picked = random.Random(f"{self.seed}:{ex.qid}").sample(pool, min(self.top_k, len(pool)))
            return [{"relation": r, "entity": e, "label": labels.get(e), "score": None} for r, e in picked]
        pairs = self.candidate_pairs(relations, entities)
        if scorer is None:
            raise UserInputError("pattern mode 'scored' needs a scorer (the schema classifier)")
        d = inference_decomposition(ex) if use_decomposition else None  # never a gold decomposition
        listed = list(relations if refined_relations is None else refined_relations)
        scores = pattern_scores(
            ex.question, d, pairs, scorer, labels, entity_relations, listed, self.max_entity_relations
        )
        ranked = sorted(zip(pairs, scores, strict=True), key=lambda x: -x[1])[: self.top_k]
        return [{"relation": r, "entity": e, "label": labels.get(e), "score": s} for (r, e), s in ranked]


__all__ = [
    "PATTERN_SELECTION_MODES",
    "Connectivity",
    "PatternScorer",
    "PatternSelector",
    "ask_query",
    "pattern_scores",
    "sub_chains",
]
