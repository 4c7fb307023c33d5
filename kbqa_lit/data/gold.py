"""Gold labels of an example: answer ids per parse, gold S-expressions, the gold form's schema items.

WebQSP keeps several parses per question (``meta["parses"]``, each with its own answers and
S-expression) and is scored against the best one; every other dataset has one parse, the
example's own ``answers`` and ``s_expression``. Evaluation code (the execution-guided callback,
the TFS pipeline, ``kbqa eval``) reads gold through :func:`gold_parses` and :func:`gold_sexprs` only.
"""

from __future__ import annotations

from collections.abc import Mapping

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sexpr import SchemaItems, schema_items


def gold_parses(ex: KBQAExample) -> list[list[str]]:
    """Gold answer ids per parse (WebQSP: every parse in ``meta["parses"]``; else one parse)."""
    parses = ex.meta.get("parses") or []
    if parses:
        return [[Answer.from_obj(a).id for a in (p.get("answers") or [])] for p in parses]
    return [[a.id for a in ex.answers]]


def gold_sexprs(ex: KBQAExample) -> list[str]:
    """Gold S-expressions (every parse's for WebQSP), possibly none."""
    parses = ex.meta.get("parses") or []
    found = [p["s_expression"] for p in parses if isinstance(p, Mapping) and p.get("s_expression")]
    if not found and ex.s_expression:
        found = [ex.s_expression]
    return found


def gold_items(ex: KBQAExample) -> SchemaItems | None:
    """The relations, classes, entities and literals of the example's gold S-expression.

    Args:
        ex: The example.

    Returns:
        Its gold S-expression's schema items; ``None`` without one or when it does not parse.

    """
    if not ex.s_expression:
        return None
    try:
        return schema_items(ex.s_expression)
    except SExprError:
        return None
