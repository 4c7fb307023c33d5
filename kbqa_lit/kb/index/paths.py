"""Relation paths from an entity: the one-, two- and three-hop chains the KB has there, as S-expressions.

The edges around the entity are read as a bounded sample (:mod:`~kbqa_lit.kb.index.neighbourhood`:
every query has a ``LIMIT``, the nodes followed are capped by :class:`~kbqa_lit.kb.index.neighbourhood.Caps`),
so the cost per entity does not grow with the KB — a hub with 10^6 edges, or an ordinary entity
next to one, reads at most a few tens of thousands of rows. Each distinct chain becomes the join
that follows it from the entity::

    e r ?x              →  (JOIN (R r) e)
    ?x r e              →  (JOIN r e)
    e r1 ?m . ?m r2 ?x  →  (JOIN (R r2) (JOIN (R r1) e))

Only fact relations count (:func:`~kbqa_lit.kb.index.relation_inventory.is_fact_relation`: no names,
types or labels), a second hop starts from an IRI (never a literal) and does not come straight
back to the entity. Every path returned is executable by construction: the KB has at least one
instance of it. What the caps leave out (a rare relation among a hub's many edges) is not returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.errors import StoreError, UserInputError, check_choice
from kbqa_lit.kb.index.neighbourhood import DEFAULT_CAPS, IN, OUT, Caps, Edge, named, read_edges, spread
from kbqa_lit.kb.index.relation_inventory import is_fact_relation
from kbqa_lit.kb.lf.chains import Chain, Hop, chain_to_sexpr

#: ``OUT`` (``e r ?x``, a forward :class:`~kbqa_lit.kb.lf.chains.Hop`) and ``IN`` (``?x r e``, a
#: backward one) are the directions of an edge seen from the entity outwards.


@dataclass(frozen=True)
class RelationPath:
    """A chain of relations from one entity, with the S-expression that follows it.

    Attributes:
        entity: The entity the chain starts from.
        hops: The chain, from the entity outwards.
        sexpr: The S-expression whose answers are the chain's far ends.
    """

    entity: str
    hops: Chain
    sexpr: str

    @property
    def relations(self) -> tuple[str, ...]:
        """The relations of the hops, in order."""
        return tuple(h.relation for h in self.hops)


def _path(entity: str, hops: Chain) -> RelationPath:
    return RelationPath(entity, hops, chain_to_sexpr(entity, hops))


def relation_paths(
    store: object, entity: str, max_hops: int = 2, limit: int = 20000, caps: Caps = DEFAULT_CAPS
) -> list[RelationPath]:
    """The distinct one-hop (and, with ``max_hops=2``, two-hop) relation paths from ``entity``.

    Args:
        store: A knowledge base with ``execute(sparql)`` (embedded store or endpoint).
        entity: The entity id (e.g. ``m.0abc``).
        max_hops: 1 or 2.
        limit: At most this many paths are returned.
        caps: How much of the neighbourhood is read (:class:`~kbqa_lit.kb.index.neighbourhood.Caps`).

    Returns:
        The paths, one-hop first, each group sorted by its S-expression (a deterministic order).

    Raises:
        UserInputError: When ``max_hops`` is not 1 or 2 or ``limit < 1``.
        StoreError: When the query fails (e.g. its timeout).
    """
    check_choice("max_hops", max_hops, (1, 2))
    if limit < 1:
        raise UserInputError(f"limit must be >= 1, got {limit!r}")
    edges = _entity_edges(store, entity, caps)
    one: dict[str, RelationPath] = {}
    for edge in edges:
        if is_fact_relation(edge.relation):
            path = _path(entity, (Hop(edge.relation, edge.direction == OUT),))
            one.setdefault(path.sexpr, path)
    two: dict[str, RelationPath] = {}
    if max_hops == 2:
        around = _neighbour_edges(store, entity, edges, caps)
        for first in edges:
            if not is_fact_relation(first.relation):
                continue
            for second in around.get(first.other, ()):
                if second.other != entity and is_fact_relation(second.relation):
                    hops = (Hop(first.relation, first.direction == OUT), Hop(second.relation, second.direction == OUT))
                    path = _path(entity, hops)
                    two.setdefault(path.sexpr, path)
    ordered = [one[k] for k in sorted(one)] + [two[k] for k in sorted(two)]
    return ordered[:limit]


def _entity_edges(store: object, entity: str, caps: Caps) -> list[Edge]:
    try:
        return read_edges(store, [entity], caps.edges)[entity]
    except StoreError as exc:  # EndpointUnreachableError stays one
        raise type(exc)(f"could not read the relation paths of {entity}: {exc}") from None


def _neighbour_edges(store: object, entity: str, edges: Sequence[Edge], caps: Caps) -> dict[str, list[Edge]]:
    """The edges of at most ``caps.neighbours`` IRI neighbours, spread over the entity's relations."""
    groups: dict[tuple[str, str], list[str]] = {}
    for edge in edges:
        if edge.other_is_iri and edge.other != entity and is_fact_relation(edge.relation):
            groups.setdefault((edge.direction, edge.relation), []).append(edge.other)
    nodes = spread(groups, caps.neighbours)
    try:
        return read_edges(store, nodes, caps.neighbour_edges)
    except StoreError as exc:  # EndpointUnreachableError stays one
        raise type(exc)(f"could not read the relation paths of {entity}: {exc}") from None


def mediator_paths(store: object, entity: str, limit: int = 20000, caps: Caps = DEFAULT_CAPS) -> list[RelationPath]:
    """The distinct three-hop relation paths from ``entity`` through a nameless intermediate node.

    The first or the second intermediate node has no ``type.object.name`` (a mediator, Freebase's
    CVT); fact relations only, no node visited twice in a row and the far end is not ``entity``.

    Args:
        store: A knowledge base with ``execute(sparql)``.
        entity: The entity id.
        limit: At most this many paths are returned.
        caps: How much of the neighbourhood is read (:class:`~kbqa_lit.kb.index.neighbourhood.Caps`).

    Returns:
        The paths, sorted by their S-expression.

    Raises:
        UserInputError: When ``limit < 1``.
        StoreError: When the query fails.
    """
    if limit < 1:
        raise UserInputError(f"limit must be >= 1, got {limit!r}")
    edges = _entity_edges(store, entity, caps)
    around = _neighbour_edges(store, entity, edges, caps)
    try:
        named_mid = named(store, around)
        # far nodes: any behind a nameless neighbour; behind a named one, only nameless ones
        behind_nameless: dict[tuple[str, ...], list[str]] = {}
        behind_named: dict[tuple[str, ...], list[str]] = {}
        for m, m_edges in around.items():
            groups = behind_named if m in named_mid else behind_nameless
            for e2 in m_edges:
                if e2.other_is_iri and e2.other not in (entity, m) and is_fact_relation(e2.relation):
                    groups.setdefault((m in named_mid, e2.direction, e2.relation), []).append(e2.other)
        candidates = spread(behind_named, caps.far_nodes)
        nameless_far = set(candidates) - named(store, candidates)
        behind_named = {k: [y for y in ys if y in nameless_far] for k, ys in behind_named.items()}
        far = spread(
            {"a": spread(behind_nameless, caps.far_nodes), "b": spread(behind_named, caps.far_nodes)}, caps.far_nodes
        )
        far_edges = read_edges(store, far, caps.neighbour_edges)
    except StoreError as exc:  # EndpointUnreachableError stays one
        raise type(exc)(f"could not read the mediator paths of {entity}: {exc}") from None
    found: dict[str, RelationPath] = {}
    for e1 in edges:
        m = e1.other
        if not is_fact_relation(e1.relation) or m not in around:
            continue
        for e2 in around[m]:
            y = e2.other
            if y not in far_edges or y in (entity, m) or not is_fact_relation(e2.relation):
                continue
            if m in named_mid and y not in nameless_far:
                continue
            for e3 in far_edges[y]:
                if e3.other in (m, entity) or not is_fact_relation(e3.relation):
                    continue
                hops = tuple(Hop(e.relation, e.direction == OUT) for e in (e1, e2, e3))
                path = _path(entity, hops)
                found.setdefault(path.sexpr, path)
    return [found[k] for k in sorted(found)][:limit]


__all__ = ["DEFAULT_CAPS", "IN", "OUT", "Caps", "RelationPath", "mediator_paths", "relation_paths"]
