"""The KB-connected pairs a gold S-expression uses, in the conventions of FC-KBQA's pair builder.

The composer's training inputs name the pairs of the gold logical form (plus distractors, see
:mod:`kbqa_lit.data.fc.composer_examples`); :func:`gold_pairs` reads them off the expression tree
the way :class:`~kbqa_lit.pipelines.fc.pairs.PairBuilder` writes them, a *hop* being ``r`` or
``(R r)`` taken from the subject side:

- **class–relation** ``(c, h)``: ``(AND c X)`` with ``h`` a first hop of ``X``
  (``(AND music.album (JOIN (R music.artist.album) e))`` → ``(music.album, (R music.artist.album))``);
- **relation–relation** ``(h1, h2)``: ``(JOIN h1 X)`` with ``h2`` a first hop of ``X`` (a chain:
  ``h1``'s objects are ``h2``'s subjects); a relation path ``(JOIN r1 r2)``; and two hops leaving
  one node — the conjuncts of an ``AND``, ``ARGMAX``/``ARGMIN``'s set and relation path, ``TC``'s
  set and relation — as ``(reverse(h1), h2)`` (joined on their subjects);
- a pair of two backward hops ``((R a), (R b))`` is written as the builder writes it, the
  forward pair ``(b, a)``;
- **relation–entity** ``(r, e)``: ``(JOIN h e)`` with an entity ``e`` (``r`` the hop's relation).

The *first hops* of a set expression are those leaving its answer node: ``(JOIN h X)`` → ``h``;
``AND`` → its conjuncts'; ``ARGMAX``/``ARGMIN``/``TC``/comparisons → their set's (a comparison's
relation path's first relation); a class or an entity has none.
"""

from __future__ import annotations

from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.kb.lf.sexpr import COMPARATORS, Atom, Call, SExpr, atom_kind, base_relation, parse_sexpr, reverse_hop


def _hop(node: SExpr) -> str | None:
    if isinstance(node, Atom):
        return node.text if atom_kind(node.text) == "schema" else None
    if node.op == "R" and len(node.args) == 1 and isinstance(node.args[0], Atom):
        return f"(R {node.args[0].text})"
    return None


def _path_hops(node: SExpr) -> list[str]:
    """The hops of a relation path (``r``, ``(R r)`` or ``(JOIN r1 r2)``), in order."""
    hop = _hop(node)
    if hop is not None:
        return [hop]
    if isinstance(node, Call) and node.op == "JOIN":
        return [h for arg in node.args for h in _path_hops(arg)]
    return []


def first_hops(node: SExpr) -> list[str]:
    """The hops leaving the answer node of a set expression (see the module docstring)."""
    if isinstance(node, Atom):
        return []
    if node.op == "JOIN" and len(node.args) == 2:
        hop = _hop(node.args[0])
        return [hop] if hop is not None else []
    if node.op == "AND":
        return [h for arg in node.args for h in first_hops(arg)]
    if node.op in ("ARGMAX", "ARGMIN", "TC") and node.args:
        return first_hops(node.args[0])
    if node.op in COMPARATORS and node.args:
        return _path_hops(node.args[0])[:1]
    return []


def _walk(node: SExpr, out: dict[Pair, None]) -> None:
    if isinstance(node, Atom):
        return
    args = node.args

    def add(kind: str, first: str, second: str) -> None:
        if first.startswith("(R ") and second.startswith("(R "):  # the builder's form: the forward pair
            first, second = base_relation(second), base_relation(first)
        out[Pair(kind, first, second, 1.0)] = None  # type: ignore[arg-type]

    if node.op == "AND":
        for c in (a.text for a in args if isinstance(a, Atom) and atom_kind(a.text) == "schema"):
            for arg in args:
                for hop in first_hops(arg):
                    add("class-relation", c, hop)
        hops = [first_hops(a) for a in args]
        for i, left in enumerate(hops):
            for right in hops[i + 1 :]:
                for h1 in left:
                    for h2 in right:
                        add("relation-relation", reverse_hop(h1), h2)
    elif node.op == "JOIN" and len(args) == 2:
        h1, path = _hop(args[0]), _path_hops(node)
        if h1 is None:
            pass
        elif isinstance(args[1], Atom) and atom_kind(args[1].text) == "entity":
            add("relation-entity", base_relation(h1), args[1].text)
        elif isinstance(args[1], Atom) and len(path) == 2:  # a relation path (JOIN r1 r2)
            add("relation-relation", path[0], path[1])
        else:
            for h2 in first_hops(args[1]):
                add("relation-relation", h1, h2)
    elif node.op in ("ARGMAX", "ARGMIN", "TC") and len(args) >= 2:
        path = _path_hops(args[1])
        for h1 in first_hops(args[0]):
            if path:
                add("relation-relation", reverse_hop(h1), path[0])
    for arg in args:
        _walk(arg, out)


def gold_pairs(s_expression: str) -> list[Pair]:
    """The pairs of a gold S-expression (score 1.0 each), class–relation, relation–relation, relation–entity.

    Raises:
        SExprError: When the S-expression is malformed.
    """
    found: dict[Pair, None] = {}
    _walk(parse_sexpr(s_expression), found)
    order = {"class-relation": 0, "relation-relation": 1, "relation-entity": 2}
    return sorted(found, key=lambda p: order[p.kind])


__all__ = ["base_relation", "first_hops", "gold_pairs", "reverse_hop"]
