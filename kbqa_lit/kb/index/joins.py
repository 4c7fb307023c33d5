"""Two-entity joins: the forms that meet two linked entities at one node, as S-expressions.

A question that names two entities ("When did *Basil Maddox* join *the Dragons*?", "What *Science
Fiction* films did *Teo Sinclair* direct?") is rarely a chain from one of them: its answer is a node
related to both, or one hop beyond such a node (Freebase's mediators: a roster, a performance, an
education record). :func:`entity_joins` finds, for two entities ``a`` and ``b``, every node ``m``
that an edge of ``a`` and an edge of ``b`` both reach, and writes

    ?m r1 a . ?m r2 b               →  (AND (JOIN r1 a) (JOIN r2 b))
    ?m r1 a . ?m r2 b . ?m r3 ?x    →  (JOIN (R r3) (AND (JOIN r1 a) (JOIN r2 b)))

(an edge leaving the entity, ``a r1 ?m``, is written ``(JOIN (R r1) a)``). The edges are read as
:mod:`~kbqa_lit.kb.index.neighbourhood` reads them: bounded by :class:`~kbqa_lit.kb.index.neighbourhood.Caps`
(a hub's rare edge may be left out), fact relations only. Every form returned has at least one
answer in the KB.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbqa_lit.errors import StoreError, UserInputError
from kbqa_lit.kb.index.neighbourhood import DEFAULT_CAPS, IN, OUT, Caps, Edge, read_edges
from kbqa_lit.kb.index.relation_inventory import is_fact_relation
from kbqa_lit.kb.lf.chains import Hop, chain_to_sexpr


@dataclass(frozen=True)
class JoinForm:
    """A form that uses two entities (see the module docstring).

    Attributes:
        entities: The two entities, in the order the caller gave them.
        relations: The relations it follows: the two that meet, then the hop beyond (if any).
        sexpr: The S-expression.
    """

    entities: tuple[str, str]
    relations: tuple[str, ...]
    sexpr: str


def _hop(edge: Edge, start: str) -> str:
    """One hop along ``edge`` (seen from the nodes of ``start``, an entity or a form), as a JOIN."""
    return chain_to_sexpr(start, (Hop(edge.relation, edge.direction == OUT),))


def _by_node(edges: list[Edge], skip: str) -> dict[str, list[Edge]]:
    out: dict[str, list[Edge]] = {}
    for edge in edges:
        if edge.other_is_iri and edge.other != skip and is_fact_relation(edge.relation):
            out.setdefault(edge.other, []).append(edge)
    return out


def entity_joins(
    store: object, first: str, second: str, limit: int = 2000, caps: Caps = DEFAULT_CAPS
) -> list[JoinForm]:
    """The distinct forms that meet ``first`` and ``second`` at one node, and go one hop beyond it.

    Args:
        store: A knowledge base with ``execute(sparql)``.
        first: One entity id.
        second: The other entity id.
        limit: At most this many forms are returned.
        caps: How much is read: the entities' ``edges``, the edges of at most ``neighbours`` meeting
            nodes (``neighbour_edges`` each).

    Returns:
        The meeting forms (sorted by S-expression), then the forms one hop beyond (sorted).

    Raises:
        UserInputError: When the two entities are the same or ``limit < 1``.
        StoreError: When a read fails.
    """
    if first == second:
        raise UserInputError(f"entity_joins needs two different entities, got {first!r} twice")
    if limit < 1:
        raise UserInputError(f"limit must be >= 1, got {limit!r}")
    try:
        edges = read_edges(store, [first, second], caps.edges)
        near_a, near_b = _by_node(edges[first], second), _by_node(edges[second], first)
        meeting = [m for m in near_a if m in near_b][: caps.neighbours]
        beyond = read_edges(store, meeting, caps.neighbour_edges) if meeting else {}
    except StoreError as exc:  # EndpointUnreachableError stays one
        raise type(exc)(f"could not read the joins of {first} and {second}: {exc}") from None
    meets: dict[str, JoinForm] = {}
    further: dict[str, JoinForm] = {}
    pair = (first, second)
    for m in meeting:
        for ea in near_a[m]:
            for eb in near_b[m]:
                inner = f"(AND {_hop(ea, first)} {_hop(eb, second)})"
                meets.setdefault(inner, JoinForm(pair, (ea.relation, eb.relation), inner))
                for ec in beyond.get(m, ()):
                    if ec.other in pair or not is_fact_relation(ec.relation):
                        continue
                    if (ec.relation, ec.direction) in {(ea.relation, _flip(ea)), (eb.relation, _flip(eb))}:
                        continue  # back along an edge it came by: the other entities of that relation
                    sexpr = _hop(ec, inner)
                    further.setdefault(sexpr, JoinForm(pair, (ea.relation, eb.relation, ec.relation), sexpr))
    ordered = [meets[k] for k in sorted(meets)] + [further[k] for k in sorted(further)]
    return ordered[:limit]


def _flip(edge: Edge) -> str:
    """The direction of ``edge`` seen from its other end (``m``)."""
    return IN if edge.direction == OUT else OUT


__all__ = ["JoinForm", "entity_joins"]
