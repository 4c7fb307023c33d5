"""Words for KB ids: relation words, node names, triples and chains as text (prompts and logs).

A relation is written by its last dotted segment with underscores as spaces
(``metaqa.movie.directed_by`` → ``directed by``); a node by its label, falling back to the id (a
literal answer is its own name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kbqa_lit.data.chain_wording import relation_words as relation_name
from kbqa_lit.kb.lf.chains import Hop

#: ``label(id) -> name or None`` (e.g. :meth:`kbqa_lit.kb.index.entity_index.EntityIndex.label`).
Labeler = Callable[[str], str | None]


def relation_words(relation: str) -> str:
    """``metaqa.movie.directed_by`` → ``directed by`` (last dotted segment, ``_`` as spaces, single spaces)."""
    return " ".join(relation_name(relation).split()) or relation


def node_name(node: str, label: Labeler | None = None) -> str:
    """The label of a node, else the node id itself (literals are their own names)."""
    if label is not None:
        name = label(node)
        if name:
            return name
    return node


def triple_text(triple: tuple[str, str, str], label: Labeler | None = None) -> str:
    """``(subject name, relation words, object name)``: one context line of the reasoning prompt."""
    s, r, o = triple
    return f"({node_name(s, label)}, {relation_words(r)}, {node_name(o, label)})"


def hop_words(hop: Hop) -> str:
    """A hop in words: ``directed by`` forward, ``directed by (inverse)`` backward."""
    words = relation_words(hop.relation)
    return words if hop.forward else f"{words} (inverse)"


def chain_words(chain: Iterable[Hop]) -> str:
    """A chain in words, hops joined by ``→`` (``directed by → directed by (inverse)``)."""
    return " → ".join(hop_words(h) for h in chain)


def names_text(nodes: Iterable[str], label: Labeler | None = None, limit: int = 5) -> str:
    """At most ``limit`` names joined by commas, then ``and N more`` (``none`` when empty)."""
    names = [node_name(n, label) for n in nodes]
    if not names:
        return "none"
    shown = ", ".join(names[: max(1, limit)])
    rest = len(names) - max(1, limit)
    return f"{shown} and {rest} more" if rest > 0 else shown


__all__ = ["Labeler", "chain_words", "hop_words", "names_text", "node_name", "relation_words", "triple_text"]
