"""What a question's gold S-expression gives on a knowledge base, for scoring the questions a KB can answer.

A mini-KB (GrailQA's star mini-KB, for instance) holds the facts of some questions only; a figure
"on the questions the KB answers" needs to know which. :func:`gold_kbcheck` executes the gold
S-expression and compares its answers with the gold answers, with MetaQA's ``kbcheck`` labels:
``exact`` (the same set), ``extra`` (the KB gives more, all gold included), ``missing`` (some gold
answer is not given, or nothing is), ``none`` (no gold S-expression, or it does not convert or
execute). Reads the gold fields: scoring after the fact, never an input of a stage.
"""

from __future__ import annotations

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import KnowledgeBase

#: The labels :func:`gold_kbcheck` gives.
KBCHECK = ("exact", "extra", "missing", "none")


def gold_kbcheck(ex: KBQAExample, kb: KnowledgeBase) -> str:
    """``exact``, ``extra``, ``missing`` or ``none``: see the module docstring."""
    if not ex.s_expression:
        return "none"
    try:
        result = kb.execute(sexpr_to_sparql(ex.s_expression, semantics=ex.semantics))
    except (SExprError, RecursionError):
        return "none"
    if not result.ok:
        return "none"
    given, gold = set(result.answers), {a.id for a in ex.answers}
    if given == gold:
        return "exact"
    return "extra" if gold and gold <= given else "missing"


__all__ = ["KBCHECK", "gold_kbcheck"]
