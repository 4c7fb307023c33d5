"""KB reads shared by the entity indexes: names, aliases and degrees as ``id<TAB>value`` rows; 1-hop relations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.index.connectivity import usable_id
from kbqa_lit.kb.index.relation_inventory import EXCLUDED_RELATIONS, is_fact_relation
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, iri, local_id


def relation_edges(
    store: Any, entity_ids: Sequence[str], batch_size: int = 100
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per entity, the fact relations of its edges: ``(outgoing, incoming)`` (``e r ?o`` / ``?s r e``).

    Raises:
        StoreError: When a query fails.
    """
    found: dict[str, tuple[set[str], set[str]]] = {e: (set(), set()) for e in dict.fromkeys(entity_ids)}
    ids = [e for e in found if usable_id(e)]  # an id that is no IRI has no edges (and makes no SPARQL)
    for i in range(0, len(ids), batch_size):
        values = " ".join(f"<{iri(e)}>" for e in ids[i : i + batch_size])
        q = (
            'SELECT (CONCAT(STR(?e), "\\t", STR(?p), "\\t", ?d) AS ?x) WHERE { VALUES ?e { '
            f'{values} }} {{ ?e ?p ?o BIND("out" AS ?d) }} UNION {{ ?s ?p ?e BIND("in" AS ?d) }} }}'
        )
        for eid, rest in read_pairs(store, q, "1-hop relations"):
            rel_iri, _, direction = rest.rpartition("\t")
            rel = local_id(rel_iri)
            if eid in found and is_fact_relation(rel):
                found[eid][0 if direction == "out" else 1].add(rel)
    return {e: (frozenset(out), frozenset(into)) for e, (out, into) in found.items()}


def labels_query(relation: str) -> str:
    """Rows ``id<TAB>label`` of every IRI subject of ``relation`` (names: ``type.object.name``)."""
    return f'SELECT (CONCAT(STR(?e), "\\t", STR(?n)) AS ?x) WHERE {{ ?e <{iri(relation)}> ?n FILTER(isIRI(?e)) }}'


def degrees_query() -> str:
    """Rows ``id<TAB>degree``: each IRI's fact edges, either direction (names, types, aliases not counted)."""
    skip = ", ".join(f"<{iri(r)}>" for r in sorted(EXCLUDED_RELATIONS))
    return (
        'SELECT (CONCAT(STR(?e), "\\t", STR(COUNT(*))) AS ?x) WHERE { '
        f"{{ ?e ?p ?o }} UNION {{ ?s ?p ?e }} FILTER(isIRI(?e) && ?p NOT IN ({skip})) }} GROUP BY ?e"
    )


def read_names(store: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, int]]:
    """Names ``(id, name)``, aliases ``(id, alias)`` and degrees ``{id: fact edges}`` of a store (three queries).

    Raises:
        StoreError: When a query fails (e.g. times out: open the store with a longer timeout).
    """
    names = read_pairs(store, labels_query(NAME_RELATION), "names")
    aliases = read_pairs(store, labels_query(ALIAS_RELATION), "aliases")
    degrees = {e: int(d) for e, d in read_pairs(store, degrees_query(), "degrees")}
    return names, aliases, degrees


def read_pairs(store: Any, sparql: str, what: str) -> list[tuple[str, str]]:
    """Rows ``(local id, rest)`` of a query whose one column is ``CONCAT(STR(?e), TAB, ...)``.

    Raises:
        StoreError: When the query fails (``what`` names the read in the message).
    """
    result = store.execute(sparql)
    if not result.ok:
        raise StoreError(f"could not read {what} from {getattr(store, 'identity', store)}: {result.error}")
    out = []
    for value in result.answers:
        head, sep, tail = value.partition("\t")
        if sep:
            out.append((local_id(head), tail))
    return out


__all__ = ["degrees_query", "labels_query", "read_names", "read_pairs", "relation_edges"]
