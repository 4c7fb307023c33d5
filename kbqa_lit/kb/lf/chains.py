"""Logical chains: relation paths from a seed entity (Keqing executes them; the KB-path fallback reads them).

A :class:`Hop` is one relation with its direction; a chain is a tuple of hops read from the seed
entity outwards. ``Hop("metaqa.movie.directed_by", forward=True)`` goes from a movie to its
director (subject → object); ``forward=False`` goes from a director to the movies (object →
subject). In S-expressions the forward hop is ``(JOIN (R r) x)`` and the backward hop
``(JOIN r x)``. A chain is written ``r1> <r2`` (``>`` after a forward relation, ``<`` before a
backward one) in files and logs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kbqa_lit.kb.lf.sexpr import Atom, Call, SExpr, parse_sexpr


@dataclass(frozen=True, order=True)
class Hop:
    """One relation traversed in one direction.

    Attributes:
        relation: The relation id (``metaqa.movie.directed_by``).
        forward: ``True`` from subject to object, ``False`` from object to subject.
    """

    relation: str
    forward: bool

    def __str__(self) -> str:
        return f"{self.relation}>" if self.forward else f"<{self.relation}"


Chain = tuple[Hop, ...]


def chain_text(chain: Iterable[Hop]) -> str:
    """``r1> <r2``: a chain as one line of text (:func:`parse_chain` reads it back)."""
    return " ".join(str(h) for h in chain)


def parse_chain(text: str) -> Chain:
    """Read :func:`chain_text`'s form back into hops.

    Raises:
        ValueError: A hop is not written ``relation>`` or ``<relation``.
    """
    hops: list[Hop] = []
    for part in text.split():
        if part.endswith(">") and not part.startswith("<"):
            hops.append(Hop(part[:-1], True))
        elif part.startswith("<") and not part.endswith(">"):
            hops.append(Hop(part[1:], False))
        else:
            raise ValueError(f"bad hop {part!r} in chain {text!r}: write 'relation>' or '<relation'")
    if not hops:
        raise ValueError("empty chain")
    return tuple(hops)


def chain_from_sexpr(sexpr: str | SExpr) -> tuple[str, Chain] | None:
    """The seed and the chain of a pure JOIN chain, e.g. ``(JOIN (R r2) (JOIN r1 m.x))``.

    Returns:
        ``(seed id, hops from the seed outwards)``, or ``None`` when the expression is not a chain
        of JOINs over one entity (constraints, functions, two seeds).
    """
    node = parse_sexpr(sexpr) if isinstance(sexpr, str) else sexpr
    hops: list[Hop] = []
    while isinstance(node, Call):
        if node.op != "JOIN" or len(node.args) != 2:
            return None
        rel, node = node.args
        if isinstance(rel, Atom):
            hops.append(Hop(rel.text, False))
        elif isinstance(rel, Call) and rel.op == "R" and len(rel.args) == 1 and isinstance(rel.args[0], Atom):
            hops.append(Hop(rel.args[0].text, True))
        else:
            return None
    if not isinstance(node, Atom) or node.kind != "entity" or not hops:
        return None
    return node.text, tuple(reversed(hops))


def chain_to_sexpr(seed: str, chain: Iterable[Hop]) -> str:
    """The JOIN chain that follows ``chain`` from ``seed`` (:func:`chain_from_sexpr` reads it back)."""
    sexpr = seed
    for hop in chain:
        sexpr = f"(JOIN (R {hop.relation}) {sexpr})" if hop.forward else f"(JOIN {hop.relation} {sexpr})"
    return sexpr


__all__ = ["Chain", "Hop", "chain_from_sexpr", "chain_text", "chain_to_sexpr", "parse_chain"]
