"""A bounded sample of an entity's neighbourhood: the edges the KB-path search reads, with caps.

Reading "every edge within two hops" costs what the neighbourhood holds: a hub (a country with
10^5 citizens) or an ordinary entity next to one (a person whose nationality is that country)
makes one query enumerate 10^5–10^7 rows, and the cost grows with the KB. Here every read has a
``LIMIT`` (:class:`Caps`, documented defaults), so the rows read per entity are bounded whatever
the KB's size:

- two queries per node, its outgoing and its incoming edges, each at most ``edges`` (the start
  entity) or ``neighbour_edges`` (a neighbour) of them (``SELECT … WHERE { n ?p ?o } LIMIT k``);
- at most ``neighbours`` second-hop nodes, spread round-robin over the first hop's
  ``(direction, relation)`` groups so that every relation of the entity is followed;
- whether nodes have a ``type.object.name`` comes from one ``VALUES`` query over them (index lookups).

What a cap leaves out is left out of the paths (a rare relation among a hub's 10^5 edges may not
be seen); every path still exists in the KB. Queries of one step go in one batch
(``execute_many`` where the store has it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kbqa_lit.errors import EndpointUnreachableError, StoreError, UserInputError
from kbqa_lit.kb.index.connectivity import usable_id
from kbqa_lit.kb.lf.iri import NAME_RELATION, iri, local_id

OUT, IN = "out", "in"


@dataclass(frozen=True)
class Caps:
    """How much of a neighbourhood is read (each a query ``LIMIT`` or a count of queries).

    Attributes:
        edges: Edges of the start entity read, per direction.
        neighbours: Second-hop nodes whose edges are read, spread over the first hop's relations.
        neighbour_edges: Edges read per second- or third-hop node, per direction.
        far_nodes: Third-hop nodes read (paths through a nameless mediator only).
    """

    edges: int = 2000
    neighbours: int = 100
    neighbour_edges: int = 200
    far_nodes: int = 100

    def __post_init__(self) -> None:
        for name in ("edges", "neighbours", "neighbour_edges", "far_nodes"):
            if getattr(self, name) < 1:
                raise UserInputError(f"neighbourhood caps: {name} must be >= 1, got {getattr(self, name)!r}")


DEFAULT_CAPS = Caps()


@dataclass(frozen=True)
class Edge:
    """One edge seen from a node: its direction, relation (namespace stripped) and other end."""

    direction: str
    relation: str
    other: str
    other_is_iri: bool


def edge_query(node: str, limit: int, direction: str = OUT) -> str:
    """The query of a node's outgoing (``out``) or incoming (``in``) edges, ``LIMIT limit``.

    One tab-separated string per edge. Two queries per node, because one ``UNION`` query could fill
    its ``LIMIT`` with one direction: the store does not promise the order of a union's branches.
    """
    n = f"<{iri(node)}>"
    pattern = f"{n} ?p ?o" if direction == OUT else f"?o ?p {n}"
    return (
        'SELECT (CONCAT(STR(?p), "\\t", IF(isIRI(?o), "i", "l"), "\\t", STR(?o)) AS ?x) '
        f"WHERE {{ {pattern} }} LIMIT {int(limit)}"
    )


def _run(store: object, queries: Sequence[str], what: str) -> list[list[str]]:
    many = getattr(store, "execute_many", None)
    results = many(list(queries)) if callable(many) else [store.execute(q) for q in queries]  # type: ignore[attr-defined]
    out = []
    for result in results:
        if not result.ok:
            error = EndpointUnreachableError if getattr(result, "unreachable", False) else StoreError
            raise error(f"could not read {what} from {getattr(store, 'identity', store)}: {result.error}")
        out.append(list(result.answers))
    return out


def read_edges(store: object, nodes: Sequence[str], limit: int) -> dict[str, list[Edge]]:
    """Each node's edges (at most ``limit`` per node and direction; two queries per node, in one batch).

    A node id that cannot stand in an IRI has no edges and makes no query.

    Raises:
        StoreError: When a query fails (:class:`EndpointUnreachableError` when the endpoint stays down).
    """
    ids = list(dict.fromkeys(nodes))
    nodes = [n for n in ids if usable_id(n)]
    if not nodes:
        return {n: [] for n in ids}
    queries = [edge_query(n, limit, d) for n in nodes for d in (OUT, IN)]
    answers = _run(store, queries, "edges")
    found: dict[str, list[Edge]] = {}
    for i, node in enumerate(nodes):
        edges = []
        for direction, values in ((OUT, answers[2 * i]), (IN, answers[2 * i + 1])):
            for value in values:
                parts = value.split("\t", 2)
                if len(parts) == 3:
                    edges.append(Edge(direction, local_id(parts[0]), local_id(parts[2]), parts[1] == "i"))
        found[node] = edges
    return {n: found.get(n, []) for n in ids}


def named(store: object, nodes: Iterable[str]) -> set[str]:
    """The nodes that have a ``type.object.name`` (one ``VALUES`` query: an index lookup per node).

    Raises:
        StoreError: When the query fails.
    """
    nodes = [n for n in dict.fromkeys(nodes) if usable_id(n)]
    if not nodes:
        return set()
    values = " ".join(f"<{iri(n)}>" for n in nodes)
    q = f"SELECT ?m WHERE {{ VALUES ?m {{ {values} }} FILTER EXISTS {{ ?m <{iri(NAME_RELATION)}> ?n }} }}"
    return {local_id(m) for m in _run(store, [q], "names")[0]}


def spread(groups: Mapping[object, Sequence[str]], total: int, skip: Iterable[str] = ()) -> list[str]:
    """At most ``total`` distinct nodes taken round-robin from the groups (each group in its order)."""
    seen = set(skip)
    out: list[str] = []
    queues = [list(g) for g in groups.values()]
    positions = [0] * len(queues)
    while len(out) < total and any(p < len(q) for p, q in zip(positions, queues, strict=True)):
        for i, queue in enumerate(queues):
            while positions[i] < len(queue):
                node = queue[positions[i]]
                positions[i] += 1
                if node not in seen:
                    seen.add(node)
                    out.append(node)
                    break
            if len(out) >= total:
                break
    return out


__all__ = ["DEFAULT_CAPS", "IN", "OUT", "Caps", "Edge", "edge_query", "named", "read_edges", "spread"]
