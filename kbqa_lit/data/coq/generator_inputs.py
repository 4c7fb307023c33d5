"""The texts of CoQ's two generation tasks, built from one :class:`KBQAExample`.

Per example (Chain-of-Question, step 4)::

    Translate to S-expression: q | P1 | ... | Pk | D   →  normalised gold S-expression
    Answer the question: q | P1 | ... | Pk | D         →  answer names joined with " | "

``D`` is the example's decomposition (``[SUBQ] q1 [ANS] a1 ...``) and ``P1..Pk`` its patterns,
each a (relation, entity) pair written in the vocabulary of the normalised S-expression, so the
generator can copy it: ``[ people , person , place of birth ] , [ Justin Bieber ]`` (relation
words in brackets, `` , ``, the entity's label in brackets; an entity without a label keeps its
id; a literal is written as it is).

Where the patterns come from (the ``patterns`` switch):

- ``"gold"``: ``meta["gold_patterns"]`` when present, else the oracle patterns read off the gold
  S-expression: every ``(JOIN r e)`` / ``(JOIN (R r) e)`` whose argument ``e`` is an entity, in
  order, deduplicated (the paper's "oracle patterns" comparison; it leaks gold relations and
  entities into the input, so use it for ablations, not for reported results);
- ``"predicted"``: ``meta["patterns"]`` (written by the pattern-selection stage), else none;
- ``"none"``: no patterns (the "w/o patterns" ablation).

A stored pattern may be a string (used as it is), a ``[relation, entity, ...]`` list or a dict
with ``relation`` and ``entity`` (and optionally ``label``/``entity_label``/``name``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbqa_lit.data.entity_slots import mask_lf, mask_text, topic_slots
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError, check_choice
from kbqa_lit.kb.lf.normalize import normalize_sexpr, schema_to_words
from kbqa_lit.kb.lf.sexpr import Atom, Call, SExpr, parse_sexpr

LF_PREFIX = "Translate to S-expression: "
ANSWER_PREFIX = "Answer the question: "
SEGMENT_SEP = " | "
ANSWER_SEP = " | "
PATTERN_MODES = ("gold", "predicted", "none")


def _collect_gold_pairs(node: SExpr, out: list[tuple[str, str]]) -> None:
    if isinstance(node, Atom):
        return
    if node.op == "JOIN" and len(node.args) == 2:
        rel, arg = node.args
        if isinstance(rel, Call) and rel.op == "R" and rel.args and isinstance(rel.args[0], Atom):
            rel = rel.args[0]
        if isinstance(rel, Atom) and isinstance(arg, Atom) and arg.kind == "entity":
            out.append((rel.text, arg.text))
    for child in node.args:
        _collect_gold_pairs(child, out)


def gold_patterns(s_expression: str | None) -> list[tuple[str, str]]:
    """(relation, entity id) pairs joined directly in a gold S-expression, in order, deduplicated.

    Returns an empty list for a missing or malformed S-expression.
    """
    if not s_expression:
        return []
    try:
        node = parse_sexpr(s_expression)
    except SExprError:
        return []
    pairs: list[tuple[str, str]] = []
    _collect_gold_pairs(node, pairs)
    return list(dict.fromkeys(pairs))


def _entity_text(entity: str, label: str | None) -> str:
    if label:
        return f"[ {label} ]"
    if entity.startswith(("m.", "g.")):
        return f"[ {entity} ]"
    return entity


def render_pattern(pattern: Any, labels: Mapping[str, str]) -> str:
    """Write one stored pattern as ``[ relation words ] , [ entity label ]`` (see the module doc).

    Raises:
        ValueError: When the pattern has none of the accepted shapes.
    """
    if isinstance(pattern, str):
        return pattern.strip()
    label: str | None = None
    if isinstance(pattern, Mapping):
        rel, ent = pattern.get("relation"), pattern.get("entity")
        label = pattern.get("label") or pattern.get("entity_label") or pattern.get("name")
    elif isinstance(pattern, Sequence) and len(pattern) >= 2:
        rel, ent = pattern[0], pattern[1]
    else:
        raise ValueError(f"a pattern must be a string, [relation, entity] or a dict, got {pattern!r}")
    if rel is None or ent is None:
        raise ValueError(f"a pattern needs a relation and an entity, got {pattern!r}")
    rel, ent = str(rel), str(ent)
    label = str(label) if label else labels.get(ent)
    return f"[ {schema_to_words(rel)} ] , {_entity_text(ent, label)}"


def example_patterns(ex: KBQAExample, mode: str, top_k: int | None = None) -> list[str]:
    """The rendered patterns ``P1..Pk`` of an example under ``mode`` (``gold``/``predicted``/``none``).

    Args:
        ex: The example.
        mode: Where the patterns come from (see the module docstring).
        top_k: Keep only the first ``top_k`` patterns (``PatternWriter`` stores them best first);
            ``None`` keeps all.
    """
    check_choice("patterns", mode, PATTERN_MODES)
    if mode == "none":
        return []
    if mode == "gold":
        stored = ex.meta.get("gold_patterns")
        raw: Sequence[Any] = stored if stored is not None else gold_patterns(ex.s_expression)
    else:
        raw = ex.meta.get("patterns") or []
    labels = ex.entity_labels()
    rendered = [p for p in (render_pattern(p, labels) for p in raw) if p]
    return rendered if top_k is None else rendered[:top_k]


def source_text(prefix: str, ex: KBQAExample, patterns: Sequence[str], use_decomposition: bool) -> str:
    """``prefix + q | P1 | ... | Pk | D`` with empty parts left out, whitespace normalised."""
    parts = [ex.question.strip(), *patterns]
    if use_decomposition and ex.decomposition and ex.decomposition.strip():
        parts.append(ex.decomposition.strip())
    return " ".join((prefix + SEGMENT_SEP.join(parts)).split())


def lf_target(ex: KBQAExample) -> str | None:
    """The normalised gold S-expression, or ``None`` when there is none (or it does not parse)."""
    if not ex.s_expression:
        return None
    try:
        return normalize_sexpr(ex.s_expression, ex.entity_labels())
    except SExprError:
        return None


def answer_target(ex: KBQAExample) -> str | None:
    """Answer names (ids when nameless) joined with ``" | "``, or ``None`` without answers."""
    names = [" ".join((a.name or a.id).split()) for a in ex.answers]
    names = [n for n in names if n]
    return ANSWER_SEP.join(names) if names else None


def coq_texts(
    ex: KBQAExample,
    *,
    use_decomposition: bool = True,
    patterns: str = "gold",
    mask_entities: bool = False,
    gold: KBQAExample | None = None,
    top_k_patterns: int | None = None,
) -> dict[str, str | None]:
    """Both CoQ inputs and targets of one example.

    Args:
        ex: The example.
        use_decomposition: Put the decomposition ``D`` in the inputs.
        patterns: ``"gold"``, ``"predicted"`` or ``"none"``.
        mask_entities: In the logical-form task, write the topic entities as slots ``[E0]``...
            in the input and the target (:mod:`kbqa_lit.data.entity_slots`); the answer task
            keeps the names.
        gold: The example the targets come from (default ``ex``): the file's example when ``ex``
            is an inference view (:func:`kbqa_lit.data.linking.inference_view`) without gold entities.
        top_k_patterns: Use only the first ``top_k_patterns`` patterns (``None``: all).

    Returns:
        ``{"source", "target", "ans_source", "ans_target"}``; a target is ``None`` when the
        example has no gold for it.
    """
    pats = example_patterns(ex, patterns, top_k_patterns)
    source = source_text(LF_PREFIX, ex, pats, use_decomposition)
    gold = ex if gold is None else gold
    target = lf_target(gold)
    if mask_entities:
        slots = topic_slots(ex)
        source = mask_text(source, slots)
        target = None if target is None else mask_lf(target, slots)
    return {
        "source": source,
        "target": target,
        "ans_source": source_text(ANSWER_PREFIX, ex, pats, use_decomposition),
        "ans_target": answer_target(gold),
    }


__all__ = [
    "ANSWER_PREFIX",
    "LF_PREFIX",
    "PATTERN_MODES",
    "answer_target",
    "coq_texts",
    "example_patterns",
    "gold_patterns",
    "lf_target",
    "render_pattern",
    "source_text",
]
