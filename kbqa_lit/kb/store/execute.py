"""Run S-expressions and batches of queries on a knowledge base: convert, execute, never raise."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store.base import ExecutionResult, KnowledgeBase

if TYPE_CHECKING:
    from kbqa_lit.kb.lf.ontology import Ontology


def run_sexpr(
    kb: KnowledgeBase,
    expr: str,
    semantics: str = "exclude-topic",
    keep_ties: bool | None = None,
    ties: str | None = None,
    ontology: Ontology | None = None,
) -> tuple[str | None, ExecutionResult]:
    """Convert an S-expression to SPARQL and execute it.

    Args:
        kb: The store to execute on.
        expr: The S-expression text.
        semantics: Answer semantics or dataset alias (see :mod:`kbqa_lit.kb.lf.semantics`).
        keep_ties: Deprecated spelling of ``ties`` (``True`` is ``"all"``).
        ties: ``"first"`` or ``"all"`` for ARGMAX/ARGMIN; ``None`` takes the semantics' default.
        ontology: The Freebase schema (ARGMAX casts by range, CVT hops), optional.

    Returns:
        ``(sparql, result)``; ``sparql`` is ``None`` and ``result.ok`` is false when the
        S-expression cannot be converted. Nothing is raised for a bad expression or query.
    """
    start = time.perf_counter()
    try:
        sparql = sexpr_to_sparql(expr, semantics=semantics, keep_ties=keep_ties, ties=ties, ontology=ontology)
    except SExprError as exc:
        return None, ExecutionResult(
            answers=[], ok=False, error=f"bad S-expression: {exc}", elapsed=time.perf_counter() - start
        )
    return sparql, kb.execute(sparql)


def execute_many(kb: KnowledgeBase, queries: Sequence[str]) -> list[ExecutionResult]:
    """Execute queries in order on any knowledge base, in one batch where the store offers one.

    Uses ``kb.execute_many`` (:class:`~kbqa_lit.kb.store.BatchKnowledgeBase`: the Oxigraph and
    endpoint stores) and otherwise loops over ``kb.execute``. Never raises: an exception of a
    non-conforming store becomes a failed result (for the batch: for every query of it).

    Args:
        kb: The knowledge base.
        queries: The SPARQL texts.

    Returns:
        One result per query, in order.

    """
    queries = list(queries)
    if not queries:
        return []
    batch = getattr(kb, "execute_many", None)
    if callable(batch):
        try:
            results = list(batch(queries))
        except Exception as exc:  # stores must not raise; a wrapper or a plugin might
            return [ExecutionResult([], False, f"{type(exc).__name__}: {exc}") for _ in queries]
        if len(results) == len(queries):
            return results
        error = f"execute_many returned {len(results)} results for {len(queries)} queries"
        return [ExecutionResult([], False, error) for _ in queries]
    return [_execute_one(kb, q) for q in queries]


def _execute_one(kb: KnowledgeBase, sparql: str) -> ExecutionResult:
    try:
        return kb.execute(sparql)
    except Exception as exc:  # stores must not raise; a wrapper or a plugin might
        return ExecutionResult([], False, f"{type(exc).__name__}: {exc}")
