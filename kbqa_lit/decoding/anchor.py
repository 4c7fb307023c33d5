"""The KB-anchored entity rule of the S-expression grammar (:mod:`kbqa_lit.decoding.grammar`).

A generator that writes ``( join ( reverse [ people , person , place of birth ] ) [E0] )`` for
"where was the performer of Radio Sessions born" names a relation that the album ``[E0]`` does not
have: the expression is well formed, schema-valid and empty. :class:`AnchoredEntityRules` lets an
entity stand as the argument of a join only when the KB has the join's edge at it:

- ``( join [ r ] E )`` (the ``x`` with ``x r E``): ``E`` needs an incoming ``r``;
- ``( join ( reverse [ r ] ) E )`` (the ``x`` with ``E r x``): ``E`` needs an outgoing ``r``.

Elsewhere (``and``, comparisons, a join whose relation is not known yet) every given entity is
allowed. So a decoder that has written a relation the linked entities do not have must open a
nested expression instead, ``( join ( reverse [ ... place of birth ] ) ( join ( reverse [ r2 ] ) [E0] ) )``,
and there the inner relation is anchored in turn. The edges come from the store
(:func:`kbqa_lit.kb.index.entity_index.relation_edges`), for the question's linked entities only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kbqa_lit.decoding.rules import Context, EntityRules, RoleVocab
from kbqa_lit.kb.lf.normalize import schema_to_words


@dataclass(frozen=True)
class AnchoredEntity:
    """One linked entity as the decoder may write it, with the relations of its KB edges.

    Attributes:
        label: Its bracket text (a usable label, else its id; ``None``: only as slot words).
        slots: The slot words (``[E0]``...) that stand for it.
        outgoing: Relation ids of its edges ``E r ?o``.
        incoming: Relation ids of its edges ``?s r E``.
    """

    label: str | None
    slots: tuple[str, ...] = ()
    outgoing: frozenset[str] = field(default_factory=frozenset)
    incoming: frozenset[str] = field(default_factory=frozenset)


class AnchoredEntityRules:
    """Entities as a join's argument only where the KB has the join's edge (see the module docstring).

    Args:
        entities: The question's linked entities with their edges.
    """

    context_free = False

    def __init__(self, entities: Iterable[AnchoredEntity]) -> None:
        self.entities = list(entities)
        self._edges = [
            (
                frozenset(schema_to_words(r) for r in e.outgoing),
                frozenset(schema_to_words(r) for r in e.incoming),
            )
            for e in self.entities
        ]
        self._vocabs: dict[tuple[str, bool] | None, RoleVocab] = {}

    def allowed(self, relation: str | None, reverse: bool) -> RoleVocab:
        """The entities that may follow ``relation`` (bracket words) in a join (``None``: any entity)."""
        key = None if relation is None else (relation, reverse)
        found = self._vocabs.get(key)
        if found is None:
            keep = [
                e
                for e, (out, into) in zip(self.entities, self._edges, strict=True)
                if relation is None or relation in (out if reverse else into)
            ]
            rules = EntityRules([e.label for e in keep if e.label], [s for e in keep for s in e.slots])
            found = rules.vocab("entity", ())
            assert found is not None  # EntityRules always answers for "entity"
            self._vocabs[key] = found
        return found

    def vocab(self, role: str, context: Context) -> RoleVocab | None:
        """The anchored entities for ``entity``; ``None`` for other roles."""
        if role != "entity":
            return None
        if context and context[-1][0] == "JOIN":
            items = context[-1][1]
            relations = [text for i, r, text in items if i == 0 and r == "relation"]
            if relations:
                reverse = any(i == 0 and r == "reverse" for i, r, _ in items)
                return self.allowed(relations[-1], reverse)
        return self.allowed(None, False)


__all__ = ["AnchoredEntity", "AnchoredEntityRules"]
