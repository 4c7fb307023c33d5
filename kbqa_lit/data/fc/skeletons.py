"""FC-KBQA's logical skeletons: masked questions, S-expression skeletons and the top-2 chain rule.

**Masked question** (:func:`mask_mentions`): the question's mentions, numbered in order of
appearance, become ``<entity0>``, ``<entity1>``... (case-insensitive, whole words; a longer
mention claims its words before a shorter one inside it; a mention that does not occur is skipped
and takes no number). Linking passes the entity mentions; literals stay as written ("after
1990" says which comparison the skeleton needs).

**Skeleton** (:func:`lf_skeleton`): :func:`kbqa_lit.kb.lf.sexpr.skeleton` — every relation, class,
entity and literal becomes ``<rel>``, ``<class>``, ``<entity>``, ``<literal>``; the operators and
parentheses stay, **a reverse relation is written** ``(R <rel>)``: the direction is part of the
structure the parser predicts, not of the relation the extractor finds.
``(AND music.album (JOIN (R music.artist.album) m.0abc))`` → ``(AND <class> (JOIN (R <rel>) <entity>))``.

**Top-2 rule** (:func:`chain_alternative`, :func:`top2_skeletons`). A *chain* is a maximal nest of
expression-position JOINs ``(JOIN ρ1 (JOIN ρ2 ... (JOIN ρn a)))`` (each ``ρ`` is ``<rel>`` or
``(R <rel>)``); it is *anchored* when ``a`` is ``<entity>`` or ``<literal>``. The rule rewrites
the first anchored chain in pre-order (leftmost, outermost first):

- length 1 (a single-relation slot) → a two-hop chain: ``(JOIN ρ a)`` → ``(JOIN ρ (JOIN ρ a))``,
  the added inner hop taking the outer hop's direction;
- length 2 → a single relation: ``(JOIN ρ1 (JOIN ρ2 a))`` → ``(JOIN ρ1 a)``, the outer hop kept;
- longer chains, or no anchored chain: no rewrite.

The second candidate is the rewrite when there is one, else the parser's second beam. Beams that
are not well-formed skeletons are passed over (the parser's beams are not grammar-constrained).
Relation paths inside ``ARGMAX``/``ARGMIN``/comparisons are not expressions and never rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Union

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sexpr import COMPARATORS, SKELETON_TOKENS, skeleton

ENTITY_MASK = "<entity{}>"
REL, ENTITY, LITERAL = SKELETON_TOKENS["relation"], SKELETON_TOKENS["entity"], SKELETON_TOKENS["literal"]
_TOKEN_RE = re.compile(r"\(|\)|[^\s()]+")

Node = Union[str, list["Node"]]  # noqa: UP007 - a recursive runtime alias


def mask_mentions(question: str, mentions: Sequence[str]) -> str:
    """The question with its mentions replaced by ``<entity0>``, ``<entity1>``... in order of appearance."""
    spans: list[tuple[int, int]] = []
    for mention in sorted(dict.fromkeys(m for m in mentions if m and m.strip()), key=lambda m: -len(m)):
        words = r"\s+".join(re.escape(w) for w in mention.split())
        for m in re.finditer(rf"(?<!\w){words}(?!\w)", question, flags=re.IGNORECASE):
            if all(m.end() <= a or m.start() >= b for a, b in spans):
                spans.append((m.start(), m.end()))
    out, last = [], 0
    for k, (a, b) in enumerate(sorted(spans)):
        out += [question[last:a], ENTITY_MASK.format(k)]
        last = b
    return "".join([*out, question[last:]])


def parser_example(ex: KBQAExample) -> tuple[str, str] | None:
    """The skeleton parser's training pair of an example: (masked question, skeleton of its gold S-expression).

    The mentions are the example's topic-entity labels (training may read the gold entities;
    inference masks the linker's mentions). ``None`` without a gold S-expression.

    Raises:
        SExprError: When the gold S-expression is malformed.
    """
    if not ex.s_expression:
        return None
    return mask_mentions(ex.question, [str(v) for v in ex.topic_entities.values()]), lf_skeleton(ex.s_expression)


def lf_skeleton(s_expression: str) -> str:
    """The skeleton of an S-expression (``(R <rel>)`` for reverse relations).

    Raises:
        SExprError: When the S-expression is malformed.
    """
    return skeleton(s_expression)


def parse_skeleton(text: str) -> Node:
    """A skeleton as nested lists of tokens (``"(JOIN <rel> <entity>)"`` → ``["JOIN", "<rel>", "<entity>"]``).

    Raises:
        SExprError: On unbalanced parentheses or empty text.
    """
    tokens = _TOKEN_RE.findall(text)
    stack: list[list[Node]] = [[]]
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1 or not stack[-1]:
                raise SExprError(f"unbalanced or empty parentheses in skeleton {text!r}")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise SExprError(f"not one skeleton: {text!r}")
    return stack[0][0]


def render_skeleton(node: Node) -> str:
    """Single-spaced text of a parsed skeleton (the inverse of :func:`parse_skeleton`)."""
    if isinstance(node, str):
        return node
    return "(" + " ".join(render_skeleton(n) for n in node) + ")"


def _is_rel(node: Node) -> bool:
    return node == REL or node == ["R", REL]


def _is_join(node: Node) -> bool:
    return isinstance(node, list) and len(node) == 3 and node[0] == "JOIN" and _is_rel(node[1])


def _chain(node: Node) -> tuple[list[Node], Node]:
    """The hops ``[ρ1..ρn]`` of the chain starting at ``node`` (a JOIN) and its end argument."""
    hops: list[Node] = []
    while _is_join(node):
        assert isinstance(node, list)
        hops.append(node[1])
        node = node[2]
    return hops, node


def _rewrite(node: Node) -> tuple[Node, bool]:
    """Rewrite the first anchored chain under ``node`` (pre-order); ``(node, False)`` when there is none."""
    if isinstance(node, str):
        return node, False
    if _is_join(node):
        hops, end = _chain(node)
        if end in (ENTITY, LITERAL):
            if len(hops) == 1:
                return ["JOIN", hops[0], ["JOIN", hops[0], end]], True
            if len(hops) == 2:
                return ["JOIN", hops[0], end], True
            return node, False
        # not anchored: look inside its end argument (the chain's hops hold no expressions)
        new_end, done = _rewrite(end)
        if not done:
            return node, False
        out: Node = new_end
        for hop in reversed(hops):
            out = ["JOIN", hop, out]
        return out, True
    head, args = node[0], node[1:]
    if head in ("ARGMAX", "ARGMIN", "TC"):
        expr_args: Sequence[int] = [0]  # their relation path / relation / time are not expressions
    elif head in COMPARATORS or head == "R":
        expr_args = []
    elif head == "JOIN":
        expr_args = [1]
    else:
        expr_args = range(len(args))
    for i in expr_args:
        if i >= len(args):  # a generated skeleton of the wrong arity, e.g. (JOIN [REL]): nothing to rewrite there
            continue
        new, done = _rewrite(args[i])
        if done:
            return [head, *args[:i], new, *args[i + 1 :]], True
    return node, False


def chain_alternative(skeleton_text: str) -> str | None:
    """The single-relation ↔ two-hop rewrite of a skeleton (see the module docstring), ``None`` if none.

    Raises:
        SExprError: When the skeleton is malformed.
    """
    new, done = _rewrite(parse_skeleton(skeleton_text))
    return render_skeleton(new) if done else None


def well_formed(beams: Sequence[str]) -> list[str]:
    """The beams that parse as skeletons, in order, without repeats."""
    return list(dict.fromkeys(b for b in beams if _parses(b)))


def _parses(text: str) -> bool:
    try:
        parse_skeleton(text)
    except SExprError:
        return False
    return True


def top2_skeletons(beams: Sequence[str]) -> list[str]:
    """The two skeleton candidates: the top beam, then its chain rewrite or else the second beam.

    Beams that do not parse as a skeleton (unbalanced parentheses, text after the expression) are
    passed over while a later beam parses; when none parses, the top beam is kept as it is and the
    second beam is used instead of a rewrite.
    """
    beams = well_formed(beams) or list(beams)
    if not beams:
        return []
    first = beams[0]
    try:
        alt = chain_alternative(first)
    except SExprError:
        alt = None
    if alt is None:
        alt = next((b for b in beams[1:] if b != first), None)
    return [first] if alt is None else [first, alt]


__all__ = [
    "ENTITY_MASK",
    "chain_alternative",
    "lf_skeleton",
    "mask_mentions",
    "parse_skeleton",
    "parser_example",
    "render_skeleton",
    "top2_skeletons",
    "well_formed",
]
