"""Run S-expressions on a knowledge base: convert, execute, never raise."""

from __future__ import annotations

import time

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import ExecutionResult, KnowledgeBase


def run_sexpr(
    kb: KnowledgeBase,
    expr: str,
    semantics: str = "exclude-topic",
    keep_ties: bool = True,
) -> tuple[str | None, ExecutionResult]:
    """Convert an S-expression to SPARQL and execute it.

    Args:
        kb: The store to execute on.
        expr: The S-expression text.
        semantics: Answer semantics (see :mod:`kbqa_lit.kb.sparql`).
        keep_ties: Whether ARGMAX/ARGMIN keep ties.

    Returns:
        ``(sparql, result)``; ``sparql`` is ``None`` and ``result.ok`` is false when the
        S-expression cannot be converted. Nothing is raised for a bad expression or query.
    """
    start = time.perf_counter()
    try:
        sparql = sexpr_to_sparql(expr, semantics=semantics, keep_ties=keep_ties)
    except SExprError as exc:
        return None, ExecutionResult(
            answers=[], ok=False, error=f"bad S-expression: {exc}", elapsed=time.perf_counter() - start
        )
    return sparql, kb.execute(sparql)
