"""Batched, cached KB connectivity checks: (relation, entity) edges and two-hop relation chains.

:class:`Connectivity` answers "is entity ``e`` an end of some ``r`` edge" —
``{ <e> <r> ?x } UNION { ?x <r> <e> }`` with full IRIs — for many pairs in one ``VALUES`` query
(``FILTER EXISTS``: each pair stops at its first edge, so a hub costs what any entity costs),
cached per pair (CoQ's KB-connected patterns and FC-KBQA's relation-aware entity pruning and
relation–entity pairs use it). :class:`RelationChains` answers "does some path
``?x <r1> ?y . ?y <r2> ?z`` exist" (FC-KBQA's relation–relation pairs; a hop written ``(R r)``
goes backwards): one ``ASK`` per pair
(it stops at the first match, which matters on a large KB), sent together through
:func:`~kbqa_lit.kb.store.execute.execute_many` (one round trip per batch on the Oxigraph and endpoint
stores) and cached per pair. :class:`TypedRelations` answers "is some instance of class ``c`` the
subject (or object) of ``r``" the same way (FC-KBQA's class–relation pairs when the ontology is
not trusted). A query that fails counts as "not connected".

A chain or typed ASK that finds nothing reads every edge of ``r1`` (every instance of ``c``): on a
large KB that cost grows with the KB (10^5 → 10^6 triples: ×8). Both therefore follow a bounded
sample by default (:data:`ASK_SAMPLE` edges / instances, a ``LIMIT`` subquery); a KB whose relation
has fewer is checked exactly, and ``sample=None`` restores the exact check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kbqa_lit.errors import check_choice
from kbqa_lit.kb.lf.iri import TYPE_RELATION, iri, is_entity_id, local_id
from kbqa_lit.kb.lf.sexpr import base_relation
from kbqa_lit.kb.lf.terms import IRI_BAD
from kbqa_lit.kb.store.execute import execute_many


def usable_id(local: str) -> bool:
    """Whether a local id can stand in an IRI (``<ns/local>``): no space, quote, ``<>``, ``{}``...

    The ids of the checks below can come from a model (relations an LLM wrote); one that is no IRI
    is connected to nothing and never reaches a query, where it would end the IRI and add SPARQL.
    """
    return isinstance(local, str) and bool(local) and not IRI_BAD.search(local)


def ask_query(relation: str, entity: str) -> str:
    """The ASK of one pair: ``{ <e> <r> ?x } UNION { ?x <r> <e> }`` with full IRIs."""
    r, e = f"<{iri(relation)}>", f"<{iri(entity)}>"
    return f"ASK {{ {{ {e} {r} ?x }} UNION {{ ?x {r} {e} }} }}"


class Connectivity:
    """Which (relation, entity) pairs are connected in the KB; batched and cached per pair.

    Args:
        store: Anything with ``execute(sparql) -> ExecutionResult`` (an Oxigraph or endpoint store).
        batch_size: Pairs per ``VALUES`` query; when a batch query fails, its pairs are asked one
            ``ASK`` at a time (a pair whose ASK fails counts as not connected).
    """

    def __init__(self, store: Any, batch_size: int = 100) -> None:
        self.store = store
        self.batch_size = batch_size
        self.cache: dict[tuple[str, str], bool] = {}

    def _ask(self, relation: str, entity: str) -> bool:
        result = self.store.execute(ask_query(relation, entity))
        return bool(result.ok and result.answers == ["true"])

    def _batch(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], bool]:
        values = " ".join(f"(<{iri(r)}> <{iri(e)}>)" for r, e in pairs)
        # FILTER EXISTS stops at a pair's first edge (a join would enumerate every edge of a hub: ×10 per 10× KB)
        query = (
            f"SELECT ?k WHERE {{ VALUES (?r ?e) {{ {values} }} FILTER EXISTS {{ {{ ?e ?r ?x }} UNION {{ ?x ?r ?e }} }} "
            'BIND(CONCAT(STR(?r), "\\t", STR(?e)) AS ?k) }'
        )
        result = self.store.execute(query)
        if not result.ok:
            return {p: self._ask(*p) for p in pairs}
        found = set()
        for value in result.answers:
            r, _, e = value.partition("\t")
            found.add((local_id(r), local_id(e)))
        return {p: p in found for p in pairs}

    def connected(self, pairs: Iterable[tuple[str, str]]) -> list[bool]:
        """Whether each ``(relation, entity)`` pair is connected (non-entity ids and unusable relations never are)."""
        pairs = list(pairs)
        todo = [p for p in dict.fromkeys(pairs) if p not in self.cache]
        for p in [p for p in todo if not is_entity_id(p[1]) or not usable_id(p[0])]:
            self.cache[p] = False
        todo = [p for p in todo if p not in self.cache]
        for start in range(0, len(todo), self.batch_size):
            self.cache.update(self._batch(todo[start : start + self.batch_size]))
        return [self.cache[p] for p in pairs]


def _hop(relation: str, start: str, end: str) -> str:
    """The triple pattern of one hop from ``start`` to ``end``: ``r`` forward, ``(R r)`` backward."""
    if relation.startswith("(R ") and relation.endswith(")"):
        return f"{end} <{iri(base_relation(relation))}> {start}"
    return f"{start} <{iri(relation)}> {end}"


#: Edges of the first relation (chains) or instances of the class (typed pairs) an ASK looks at, by default: an
#: ASK that finds nothing would otherwise read every edge of the relation (or every instance), a cost that grows
#: with the KB. A KB with fewer is checked exactly; past it, a connection that only edges beyond the sample make
#: is missed (the pair counts as not connected). ``None``: exact.
ASK_SAMPLE = 10_000


def chain_ask_query(first: str, second: str, sample: int | None = None) -> str:
    """The ASK of a two-hop chain ``?x first ?y . ?y second ?z``, ``?z`` not ``?x`` (a hop may be ``(R r)``).

    ``(R r)`` is ``r`` backwards. The chain must reach a node other than its start: ``r`` then
    ``(R r)`` would otherwise hold for every ``r`` (back along the same edge). With ``sample``, only
    the first ``sample`` edges of ``first`` are followed (a subquery with ``LIMIT``): bounded cost.
    """
    hop1 = _hop(first, "?x", "?y")
    if sample is not None:
        hop1 = f"{{ SELECT ?x ?y WHERE {{ {hop1} }} LIMIT {int(sample)} }}"
    return f"ASK {{ {hop1} . {_hop(second, '?y', '?z')} FILTER(?x != ?z) }}"


class RelationChains:
    """Which ordered relation pairs ``(r1, r2)`` chain in the KB (``?x r1 ?y . ?y r2 ?z``); cached.

    A relation written ``(R r)`` is a hop along ``r`` backwards (``((R r1), r2)``: ``r1`` and ``r2``
    share a subject, as the two relations of a mediator node do).

    Args:
        store: Anything with ``execute`` (and ideally ``execute_many``): an Oxigraph or endpoint store.
        batch_size: ASK queries per :func:`~kbqa_lit.kb.store.execute.execute_many` call.
        sample: Edges of ``r1`` each ASK follows (:data:`ASK_SAMPLE`; ``None``: all, a cost that grows with the KB).
    """

    def __init__(self, store: Any, batch_size: int = 100, sample: int | None = ASK_SAMPLE) -> None:
        self.store = store
        self.batch_size = batch_size
        self.sample = sample
        self.cache: dict[tuple[str, str], bool] = {}

    def chained(self, pairs: Iterable[tuple[str, str]]) -> list[bool]:
        """Whether each ``(r1, r2)`` pair has a two-hop path in the KB (a failed query counts as no)."""
        pairs = list(pairs)
        todo = [p for p in dict.fromkeys(pairs) if p not in self.cache]
        for p in [p for p in todo if not all(usable_id(base_relation(r)) for r in p)]:
            self.cache[p] = False
        todo = [p for p in todo if p not in self.cache]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            results = execute_many(self.store, [chain_ask_query(a, b, self.sample) for a, b in chunk])
            for pair, result in zip(chunk, results, strict=True):
                self.cache[pair] = bool(result.ok and result.answers == ["true"])
        return [self.cache[p] for p in pairs]


def typed_ask_query(cls: str, relation: str, side: str, sample: int | None = None) -> str:
    """The ASK "an instance of ``cls`` is the subject (``side="domain"``) or object (``"range"``) of ``relation``".

    With ``sample``, only the first ``sample`` instances of ``cls`` are looked at (bounded cost).
    """
    check_choice("side", side, ("domain", "range"), error=ValueError)
    c, r, t = f"<{iri(cls)}>", f"<{iri(relation)}>", f"<{iri(TYPE_RELATION)}>"
    node = "?x" if side == "domain" else "?y"
    typed = f"{node} {t} {c}"
    if sample is not None:
        typed = f"{{ SELECT {node} WHERE {{ {typed} }} LIMIT {int(sample)} }}"
    return f"ASK {{ {typed} . ?x {r} ?y }}"


class TypedRelations:
    """Which ``(class, relation, side)`` triples hold in the KB (typed instances on that side); cached.

    Args:
        store: Anything with ``execute`` (and ideally ``execute_many``).
        batch_size: ASK queries per :func:`~kbqa_lit.kb.store.execute.execute_many` call.
        sample: Instances of the class each ASK looks at (:data:`ASK_SAMPLE`; ``None``: all).
    """

    def __init__(self, store: Any, batch_size: int = 100, sample: int | None = ASK_SAMPLE) -> None:
        self.store = store
        self.batch_size = batch_size
        self.sample = sample
        self.cache: dict[tuple[str, str, str], bool] = {}

    def holds(self, triples: Iterable[tuple[str, str, str]]) -> list[bool]:
        """Whether each ``(class, relation, "domain" | "range")`` holds (a failed query counts as no)."""
        triples = list(triples)
        todo = [t for t in dict.fromkeys(triples) if t not in self.cache]
        for t in [t for t in todo if not (usable_id(t[0]) and usable_id(t[1]))]:
            self.cache[t] = False
        todo = [t for t in todo if t not in self.cache]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            results = execute_many(self.store, [typed_ask_query(*t, self.sample) for t in chunk])
            for triple, result in zip(chunk, results, strict=True):
                self.cache[triple] = bool(result.ok and result.answers == ["true"])
        return [self.cache[t] for t in triples]


__all__ = [
    "ASK_SAMPLE",
    "Connectivity",
    "RelationChains",
    "TypedRelations",
    "ask_query",
    "chain_ask_query",
    "typed_ask_query",
    "usable_id",
]
