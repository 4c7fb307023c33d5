"""Relation paths from an entity: every one- and two-hop chain the KB has there, as S-expressions.

One query per entity reads the relations of its edges and of its neighbours' edges, each with its
direction, and turns every distinct chain into the join that follows it from the entity::

    e r ?x              →  (JOIN (R r) e)
    ?x r e              →  (JOIN r e)
    e r1 ?m . ?m r2 ?x  →  (JOIN (R r2) (JOIN (R r1) e))

Only fact relations count (:func:`~kbqa_lit.kb.index.relation_inventory.is_fact_relation`: no names,
types or labels), a second hop starts from an IRI (never a literal) and does not come straight
back to the entity. Every path returned is executable by construction: the KB has at least one
instance of it. The query projects one tab-separated string per solution (the stores return the
first projected variable), as :func:`~kbqa_lit.kb.index.entity_index.relation_edges` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbqa_lit.errors import EndpointUnreachableError, StoreError, UserInputError, check_choice
from kbqa_lit.kb.index.connectivity import usable_id
from kbqa_lit.kb.index.relation_inventory import EXCLUDED_RELATIONS, is_fact_relation
from kbqa_lit.kb.lf.chains import Chain, Hop, chain_to_sexpr
from kbqa_lit.kb.lf.iri import NS, iri, local_id

#: How the query writes a hop's direction from the entity outwards: ``out`` (``e r ?x``, a forward
#: :class:`~kbqa_lit.kb.lf.chains.Hop`), ``in`` (``?x r e``, a backward one).
OUT, IN = "out", "in"


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


def _query(entity: str, max_hops: int, limit: int) -> str:
    e = f"<{iri(entity)}>"
    first = f'{{ {e} ?p1 ?m BIND("{OUT}" AS ?d1) }} UNION {{ ?m ?p1 {e} BIND("{IN}" AS ?d1) }}'
    if max_hops == 1:
        return f'SELECT DISTINCT (CONCAT(?d1, "\\t", STR(?p1), "\\t\\t") AS ?x) WHERE {{ {first} }} LIMIT {limit}'
    second = (
        f'OPTIONAL {{ FILTER(isIRI(?m)) {{ ?m ?p2 ?y BIND("{OUT}" AS ?d2) }} UNION '
        f'{{ ?y ?p2 ?m BIND("{IN}" AS ?d2) }} FILTER(?y != {e}) }}'
    )
    return (
        'SELECT DISTINCT (CONCAT(?d1, "\\t", STR(?p1), "\\t", COALESCE(?d2, ""), "\\t", '
        f'COALESCE(STR(?p2), "")) AS ?x) WHERE {{ {first} {second} }} LIMIT {limit}'
    )


def relation_paths(store: object, entity: str, max_hops: int = 2, limit: int = 20000) -> list[RelationPath]:
    """The distinct one-hop (and, with ``max_hops=2``, two-hop) relation paths from ``entity``.

    Args:
        store: A knowledge base with ``execute(sparql)`` (embedded store or endpoint).
        entity: The entity id (e.g. ``m.0abc``).
        max_hops: 1 or 2.
        limit: At most this many distinct ``(relation, direction)`` combinations are read (the
            query's ``LIMIT``; a hub entity of a large KB can have many).

    Returns:
        The paths, one-hop first, each group sorted by its S-expression (a deterministic order).

    Raises:
        UserInputError: When ``max_hops`` is not 1 or 2 or ``limit < 1``.
        StoreError: When the query fails (e.g. its timeout).
    """
    check_choice("max_hops", max_hops, (1, 2))
    if limit < 1:
        raise UserInputError(f"limit must be >= 1, got {limit!r}")
    if not usable_id(entity):  # no IRI: no edges (and no SPARQL made of it)
        return []
    result = store.execute(_query(entity, max_hops, limit))  # type: ignore[attr-defined]
    if not result.ok:
        error = EndpointUnreachableError if getattr(result, "unreachable", False) else StoreError
        raise error(
            f"could not read the relation paths of {entity} from {getattr(store, 'identity', store)}: {result.error}"
        )
    one: dict[str, RelationPath] = {}
    two: dict[str, RelationPath] = {}
    for value in result.answers:
        parts = value.split("\t")
        if len(parts) != 4:
            continue
        d1, p1, d2, p2 = parts
        r1 = local_id(p1)
        if not is_fact_relation(r1):
            continue
        first = _path(entity, (Hop(r1, d1 == OUT),))
        one.setdefault(first.sexpr, first)
        if not p2:
            continue
        r2 = local_id(p2)
        if not is_fact_relation(r2):
            continue
        path = _path(entity, (*first.hops, Hop(r2, d2 == OUT)))
        two.setdefault(path.sexpr, path)
    return [one[k] for k in sorted(one)] + [two[k] for k in sorted(two)]


def _hop(var: str, a: str, b: str, direction: str) -> str:
    """``{ a ?p b } UNION { b ?p a }`` with the direction bound (``out`` when ``a`` is the subject)."""
    other = IN if direction == OUT else OUT
    return (
        f'{{ {a} ?p{var} {b} BIND("{direction}" AS ?d{var}) }} UNION {{ {b} ?p{var} {a} BIND("{other}" AS ?d{var}) }}'
    )


def _mediator_query(entity: str, limit: int) -> str:
    e = f"<{iri(entity)}>"
    plumbing = ", ".join(f"<{NS}{r}>" for r in sorted(EXCLUDED_RELATIONS))
    name = f"<{NS}type.object.name>"
    # one FILTER of the whole group: a FILTER inside its own { } would see ?m and ?y unbound
    nameless = f"FILTER(NOT EXISTS {{ ?m {name} ?nm }} || NOT EXISTS {{ ?y {name} ?ny }})"
    return (
        'SELECT DISTINCT (CONCAT(?d1, "\\t", STR(?p1), "\\t", ?d2, "\\t", STR(?p2), "\\t", ?d3, "\\t", STR(?p3)) '
        f"AS ?x) WHERE {{ {_hop('1', e, '?m', OUT)} FILTER(isIRI(?m)) "
        f"{_hop('2', '?m', '?y', OUT)} FILTER(isIRI(?y) && ?y != {e} && ?p2 NOT IN ({plumbing})) "
        f"{nameless} "
        f"{_hop('3', '?y', '?z', OUT)} FILTER(?z != ?m && ?z != {e} && ?p3 NOT IN ({plumbing})) }} LIMIT {limit}"
    )


def mediator_paths(store: object, entity: str, limit: int = 20000) -> list[RelationPath]:
    """The distinct three-hop relation paths from ``entity`` through a nameless intermediate node.

    The first or the second intermediate node has no ``type.object.name`` (a mediator, Freebase's
    CVT); fact relations only, no node visited twice in a row and the far end is not ``entity``.

    Args:
        store: A knowledge base with ``execute(sparql)``.
        entity: The entity id.
        limit: At most this many distinct relation combinations are read (the query's ``LIMIT``).

    Returns:
        The paths, sorted by their S-expression.

    Raises:
        UserInputError: When ``limit < 1``.
        StoreError: When the query fails.
    """
    if limit < 1:
        raise UserInputError(f"limit must be >= 1, got {limit!r}")
    if not usable_id(entity):  # no IRI: no edges (and no SPARQL made of it)
        return []
    result = store.execute(_mediator_query(entity, limit))  # type: ignore[attr-defined]
    if not result.ok:
        error = EndpointUnreachableError if getattr(result, "unreachable", False) else StoreError
        raise error(
            f"could not read the mediator paths of {entity} from {getattr(store, 'identity', store)}: {result.error}"
        )
    found: dict[str, RelationPath] = {}
    for value in result.answers:
        parts = value.split("\t")
        if len(parts) != 6:
            continue
        hops = tuple(Hop(local_id(parts[i + 1]), parts[i] == OUT) for i in (0, 2, 4))
        if all(is_fact_relation(h.relation) for h in hops):
            path = _path(entity, hops)
            found.setdefault(path.sexpr, path)
    return [found[k] for k in sorted(found)]


__all__ = ["IN", "OUT", "RelationPath", "mediator_paths", "relation_paths"]
