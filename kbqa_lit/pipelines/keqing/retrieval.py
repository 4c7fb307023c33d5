r"""Keqing's retrieval: execute a logical chain hop by hop over a store, keeping the paths.

A :data:`Path` is a tuple of node ids from a seed entity outwards. :meth:`ChainExecutor.execute`
extends every start path by each hop of a chain; the result paths of one sub-question are the
start paths of the sub-question that depends on it, so a path spans the whole question.

Each hop is one batched query per ``batch_size`` distinct frontier nodes, all batches of a hop in
one :func:`~kbqa_lit.kb.store.execute.execute_many` call. The stores return the first projected
variable only, so a query projects each edge as one tab-separated string (as
:class:`~kbqa_lit.kb.index.entity_index.EntityIndex` does)::

    SELECT DISTINCT (CONCAT(STR(?s), "\t", <kind>, "\t", <datatype>, "\t", STR(?o)) AS ?x)
    WHERE { VALUES ?s { <...> ... } ?s <rel> ?o }

(the mirror, ``VALUES ?o``, for a backward hop). Object literals are answers in canonical form
(:func:`~kbqa_lit.kb.lf.literals.canonical_literal`, what the stores return); a literal node can be a
later hop's frontier (the executor remembers its SPARQL term); blank nodes are never reached.
Neighbours of a node are sorted, so the result does not depend on the store's solution order.

Semantics: ``simple-path`` (MetaQA) drops an extension whose new node already occurs on the path
(no node repeats along the whole question's path); ``plain`` (PathQuestion) keeps every one. After
each hop at most ``max_paths`` paths are kept (the first ones); the rest are counted in ``cut``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.lf.chains import Chain, Hop
from kbqa_lit.kb.lf.iri import local_id
from kbqa_lit.kb.lf.literals import canonical_literal
from kbqa_lit.kb.lf.terms import fb_iri, literal_nt
from kbqa_lit.kb.store import KnowledgeBase
from kbqa_lit.kb.store.execute import execute_many

Path = tuple[str, ...]
SEMANTICS = ("simple-path", "plain")
_FULL_IRI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|^`\\]+$")
_KIND = 'IF(isIRI(?{v}), "i", "l")'
_DTYPE = 'IF(isLiteral(?{v}), IF(LANG(?{v}) != "", CONCAT("@", LANG(?{v})), STR(DATATYPE(?{v}))), "")'


@dataclass
class ChainResult:
    """The outcome of executing one chain.

    Attributes:
        paths: The extended paths (start path + one node per hop), in order.
        triples: ``(subject, relation, object)`` of every hop on the kept paths, deduplicated in order.
        answers: The distinct end nodes of the paths, first seen first.
        cut: How many paths the ``max_paths`` cap dropped (summed over the hops).
        errors: Error texts of failed queries (their frontier nodes were not extended).
    """

    paths: list[Path] = field(default_factory=list)
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    cut: int = 0
    errors: list[str] = field(default_factory=list)


class ChainExecutor:
    """Execute chains over a store (see the module docstring).

    Args:
        store: Any knowledge base (``execute_many`` is used where the store has it).
        semantics: ``"simple-path"`` or ``"plain"``.
        max_paths: Paths kept after each hop.
        batch_size: Frontier nodes per query.

    Raises:
        UserInputError: For an unknown semantics or a cap/batch size below 1.
    """

    def __init__(
        self, store: KnowledgeBase, semantics: str = "simple-path", max_paths: int = 2000, batch_size: int = 200
    ) -> None:
        check_choice("chain semantics", semantics, SEMANTICS)
        if max_paths < 1 or batch_size < 1:
            raise UserInputError(f"max_paths and batch_size must be >= 1, got {max_paths} and {batch_size}")
        self.store = store
        self.semantics = semantics
        self.max_paths = int(max_paths)
        self.batch_size = int(batch_size)
        #: SPARQL terms of the literal nodes seen so far (so a literal can be a later frontier).
        self._literals: dict[str, str] = {}

    def seed_paths(self, entity_ids: Iterable[str]) -> list[Path]:
        """One single-node path per distinct seed id, in order.

        Raises:
            UserInputError: When an id cannot be written as an IRI.
        """
        seeds = list(dict.fromkeys(entity_ids))
        for eid in seeds:
            if self._term(eid) is None:
                raise UserInputError(f"seed {eid!r} is not an entity id")
        return [(eid,) for eid in seeds]

    def execute(self, starts: Sequence[Path], chain: Chain) -> ChainResult:
        """Extend every start path by the chain's hops.

        Args:
            starts: Start paths (seed paths, or a dependency's result paths).
            chain: The hops, from the start nodes outwards.

        Returns:
            The kept paths, their triples, the answers and what was cut or failed.

        Raises:
            UserInputError: For an empty chain, an empty start path or a relation that is not an id.
        """
        if not chain:
            raise UserInputError("cannot execute an empty chain")
        for hop in chain:
            if not isinstance(hop, Hop) or _relation_term(hop.relation) is None:
                raise UserInputError(f"not a relation hop: {hop!r}")
        paths = list(dict.fromkeys(tuple(p) for p in starts))
        if any(not p for p in paths):
            raise UserInputError("a start path is empty")
        result = ChainResult()
        for hop in chain:
            neighbours = self._neighbours(hop, [p[-1] for p in paths], result.errors)
            extended: list[Path] = []
            for path in paths:
                for node in neighbours.get(path[-1], ()):
                    if self.semantics == "simple-path" and node in path:
                        continue
                    extended.append((*path, node))
            if len(extended) > self.max_paths:
                result.cut += len(extended) - self.max_paths
                extended = extended[: self.max_paths]
            paths = extended
            if not paths:
                break
        result.paths = paths
        result.answers = list(dict.fromkeys(p[-1] for p in paths))
        result.triples = _triples(paths, chain)
        return result

    def _neighbours(self, hop: Hop, frontier: list[str], errors: list[str]) -> dict[str, list[str]]:
        """``{frontier node: sorted neighbours over the hop}`` from one batched query per batch."""
        terms = {n: t for n in dict.fromkeys(frontier) if (t := self._term(n)) is not None}
        if hop.forward:  # a literal is never a subject
            terms = {n: t for n, t in terms.items() if n not in self._literals}
        nodes = list(terms)
        queries = []
        for i in range(0, len(nodes), self.batch_size):
            values = " ".join(terms[n] for n in nodes[i : i + self.batch_size])
            queries.append(_hop_query(hop, values))
        found: dict[str, set[str]] = {}
        for res in execute_many(self.store, queries):
            if not res.ok:
                errors.append(f"{hop}: {res.error}")
                continue
            for value in res.answers:
                parsed = self._parse(value, hop.forward)
                if parsed is not None:
                    found.setdefault(parsed[0], set()).add(parsed[1])
        return {n: sorted(found[n]) for n in nodes if n in found}

    def _parse(self, value: str, forward: bool) -> tuple[str, str] | None:
        """``(frontier node, new node)`` of one projected edge string; ``None`` when malformed."""
        parts = value.split("\t", 3)
        if len(parts) != 4:
            return None
        frontier, kind, tag, other = parts
        if kind == "i":
            return local_id(frontier), local_id(other)
        if not forward:
            return None
        if tag.startswith("@"):
            text, term = other, literal_nt(other, lang=tag[1:])
        else:
            text = canonical_literal(other, tag or None)
            term = literal_nt(text, datatype=tag or None)
        self._literals.setdefault(text, term)
        return local_id(frontier), text

    def is_entity(self, node: str) -> bool:
        """Whether a node is an entity (an IRI the store can be asked about), not a literal answer."""
        return node not in self._literals and self._term(node) is not None

    def _term(self, node: str) -> str | None:
        """The SPARQL term of a node id (``None`` when it cannot be written)."""
        if node in self._literals:
            return self._literals[node]
        if _FULL_IRI_RE.match(node) and not node.startswith(("m.", "g.")):
            return f"<{node}>"
        try:
            return fb_iri(node)
        except ValueError:
            return None


def _relation_term(relation: str) -> str | None:
    try:
        return fb_iri(relation) if isinstance(relation, str) else None
    except ValueError:
        return None


def _hop_query(hop: Hop, values: str) -> str:
    """The batched query of one hop over ``VALUES`` of frontier terms."""
    rel = _relation_term(hop.relation)
    if hop.forward:
        edge = f"VALUES ?s {{ {values} }} ?s {rel} ?o ."
        frontier, other = "s", "o"
    else:
        edge = f"VALUES ?o {{ {values} }} ?s {rel} ?o ."
        frontier, other = "o", "s"
    kind, dtype = _KIND.format(v=other), _DTYPE.format(v=other)
    return (
        f'SELECT DISTINCT (CONCAT(STR(?{frontier}), "\\t", {kind}, "\\t", {dtype}, "\\t", STR(?{other})) AS ?x) '
        f"WHERE {{ {edge} }}"
    )


def _triples(paths: Sequence[Path], chain: Chain) -> list[tuple[str, str, str]]:
    """The triples traversed by the chain's hops on the paths (the last ``len(chain)`` edges)."""
    out: dict[tuple[str, str, str], None] = {}
    n = len(chain)
    for path in paths:
        if len(path) <= n:
            continue
        nodes = path[-n - 1 :]
        for hop, a, b in zip(chain, nodes, nodes[1:], strict=False):
            out.setdefault((a, hop.relation, b) if hop.forward else (b, hop.relation, a), None)
    return list(out)


__all__ = ["SEMANTICS", "ChainExecutor", "ChainResult", "Path"]
