"""The decomposition variants (CoQ's ablations), the ``gold`` source, and the meta fields they write.

Variants:

- ``full``: the decomposition as the model wrote it (``[SUBQ] q1 [ANS] a1 ...``);
- ``placeholders``: every answer (the final one too) replaced by ``#1``, ``#2``, ..., also where a
  later sub-question mentions it;
- ``no_answers`` ("w/o intermediate answers", the paper's ablation): only the sub-questions,
  ``[SUBQ] q1 [SUBQ] q2 ...`` — no ``[ANS]`` part at all (unlike ``placeholders``, which keeps
  ``[ANS] #k``); an earlier answer mentioned in a later sub-question becomes its placeholder ``#k``
  there, so no answer text is left in the chain;
- ``none``: no decomposition (no backend is called).

Sources: ``backend`` (an LLM) or ``gold`` — the example's own gold ``decomposition`` (the
synthetic world has one per question), status ``gold``, no backend needed.

Fields written on each example (the shared contract of CoQ's front half):

- ``decomposition``: ``[SUBQ] q1 [ANS] a1 ...`` without the ``[SCHEMA]`` part (``None`` for
  ``none`` and for failures — the example falls back to no decomposition);
- ``meta["decomposition_schema"]``: ``{"entities": [...], "relations": [...]}``, the ``[SCHEMA]``
  part as written (for ``gold``: the topic entities' names, relations only when asked);
- ``meta["decomposition_status"]``: ``ok``, ``gold``, ``failed`` or ``none``;
- ``meta["decomposition_error"]``: why it failed (only when failed);
- ``meta["decomposition_variant"]``: the variant that produced the row.
"""

from __future__ import annotations

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError, check_choice
from kbqa_lit.kb.lf.sexpr import schema_items
from kbqa_lit.pipelines.coq.decomposition.parser import Decomposition, parse_decomposition, with_placeholders

VARIANTS = ("full", "placeholders", "no_answers", "none")
SOURCES = ("backend", "gold")
STATUSES = ("ok", "gold", "failed", "none")
META_KEYS = (
    "decomposition_schema",
    "decomposition_status",
    "decomposition_error",
    "decomposition_variant",
)


def check_variant(variant: str, source: str = "backend") -> None:
    """Raise :class:`~kbqa_lit.errors.UserInputError` for an unknown variant or source."""
    check_choice("decomposition variant", variant, VARIANTS)
    check_choice("decomposition source", source, SOURCES)


def apply_variant(decomposition: Decomposition, variant: str) -> Decomposition:
    """The decomposition as the variant uses it (``none`` leaves it as is; callers drop it)."""
    check_variant(variant)
    return with_placeholders(decomposition) if variant in ("placeholders", "no_answers") else decomposition


def render_variant(decomposition: Decomposition, variant: str) -> str:
    """The ``decomposition`` text of a variant: ``[SUBQ] q1 [ANS] a1 ...``, or ``[SUBQ] q1 [SUBQ] q2 ...``.

    Args:
        decomposition: The parsed decomposition.
        variant: ``full``, ``placeholders`` or ``no_answers`` (``none`` renders like ``full``).
    """
    used = apply_variant(decomposition, variant)
    return used.render(with_answers=variant != "no_answers")


def gold_decomposition(ex: KBQAExample, with_relations: bool = False) -> Decomposition:
    """The example's gold decomposition, parsed; its schema from the gold annotation.

    Args:
        ex: An example whose ``decomposition`` holds the gold ``[SUBQ] ... [ANS] ...`` text.
        with_relations: Also list the gold S-expression's relations as schema relations (an
            oracle: off by default, so the schema carries what a question alone reveals — its
            topic entities).

    Returns:
        The decomposition (``ok=False`` when the example has none or it does not parse).
    """
    if not ex.decomposition or not ex.decomposition.strip():
        return Decomposition.failure("the example has no gold decomposition")
    parsed = parse_decomposition(ex.decomposition)
    if not parsed.ok:
        return Decomposition.failure(f"bad gold decomposition: {parsed.error}")
    if not parsed.entities:
        parsed.entities = list(dict.fromkeys(ex.topic_entities.values()))
    if with_relations and not parsed.relations and ex.s_expression:
        try:
            parsed.relations = list(schema_items(ex.s_expression).relations)
        except SExprError:
            pass
    return parsed


def write_fields(
    ex: KBQAExample,
    decomposition: Decomposition | None,
    *,
    variant: str,
    status: str,
) -> KBQAExample:
    """Write the decomposition fields onto ``ex`` (in place) and return it.

    Args:
        ex: The example.
        decomposition: The parsed decomposition (``None`` for the ``none`` variant).
        variant: The variant that produced it (applied here).
        status: ``ok`` or ``gold`` for a usable decomposition; ``failed``/``none`` are derived.
    """
    for key in META_KEYS:
        ex.meta.pop(key, None)
    ex.meta["decomposition_variant"] = variant
    if variant == "none" or decomposition is None:
        ex.decomposition = None
        ex.meta["decomposition_status"] = "none"
        return ex
    if not decomposition.ok:
        ex.decomposition = None
        ex.meta["decomposition_status"] = "failed"
        ex.meta["decomposition_error"] = decomposition.error or "unknown error"
        return ex
    used = apply_variant(decomposition, variant)
    ex.decomposition = used.render(with_answers=variant != "no_answers")
    ex.meta["decomposition_schema"] = used.schema_dict()
    ex.meta["decomposition_status"] = status
    return ex


__all__ = [
    "META_KEYS",
    "SOURCES",
    "STATUSES",
    "VARIANTS",
    "apply_variant",
    "check_variant",
    "gold_decomposition",
    "render_variant",
    "write_fields",
]
