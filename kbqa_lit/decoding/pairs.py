"""FC-KBQA's KB-connected pairs as a rule set of the S-expression grammar (:mod:`kbqa_lit.decoding.grammar`).

:class:`PairRules` is the stricter rule set of the one grammar-constrained decoder
(:class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor` over
:class:`~kbqa_lit.decoding.grammar.SExprGrammar`): ``SExprGrammar([BaseRules(slots), PairRules(...)])``.
It decides the ``relation``, ``class`` and ``entity`` brackets from what was written before. The
grammar's context holds every atom written so far in writing order (the enclosing calls outermost
first, each call's atoms as they were written: an open call's atoms all come after those of the
calls around it), so "the last component written" is the last ``relation`` or ``class`` atom of
the flattened context.

The paper's decoding (Zhang et al. 2023) restricts the vocabulary at the start to the detected
entities, the classes of ``P_c-r`` and the skeleton's keywords, and after each generated component
to the partners of the **last** generated component in the pairs. The defaults are the paper's;
ours are named options:

- **the start set** (before any relation or class): the detected entities (labels in brackets,
  slot words bare), the classes of ``P_c-r``, and the relations of ``P_r-e``. The grammar's
  keywords and literals are :class:`~kbqa_lit.decoding.rules.BaseRules`'. The ``P_r-e`` relations
  are what keeps an expression writable: an S-expression writes a JOIN's relation before its
  entity, ``( join [ r ] [ e ] )``, so an entity's partners must be allowed before it (without
  them, and without a class, only ``( count ( count ...`` could be written until cut). When that
  leaves no relation and there is no class, every relation of ``P_r-r`` is allowed.
  ``chain_heads`` = k > 0 (ours; default 0, the paper's start set) also allows the relations up to
  k ``P_r-r`` pairs away from a ``P_r-e`` relation: ``( join ( reverse [ r1 ] ) ( join ( reverse
  [ r2 ] ) [ e ] ) )`` writes ``r1`` before the relation that touches the entity, so with k = 0
  such a chain is writable only after a class paired with ``r1``;
- **after a component** (``partners``): ``last`` (the paper's, default) — only the partners of the
  most recently written relation or class: after a relation ``r`` the relations paired with ``r``
  in ``P_r-r`` (in either position: the builder stores a chain of two backward hops as the
  forward pair, so a pair's order need not be the writing order), after a class ``c`` the
  relations paired with ``c`` in ``P_c-r``; ``any`` (ours, the earlier behaviour) — the start set
  and the partners of every relation and class written anywhere before. Under ``last`` a relation
  whose structural partner is not the last one written is not writable: in
  ``( argmax ( join ( reverse [ r1 ] ) ( join [ r2 ] [ e ] ) ) [ r3 ] )`` ``r3`` pairs with
  ``r1`` (they leave the same node) but follows ``r2``.

Entities do not take part in the partner rule: an entity bracket may be any detected entity, and
writing one does not change which relations follow (the last relation or class still decides);
an entity's ``P_r-e`` relations are in the start set. Pairs name relation ids; a reverse hop
``(R r)`` counts as ``r`` (the grammar writes the direction as ``( reverse [ r ] )``, the rule
restricts which relation). Literals and keywords are left to the earlier rules
(:class:`~kbqa_lit.decoding.rules.BaseRules`).

**Modes** (``mode``): ``bag`` (default, the paper's bag of tokens, at the grammar's word level) — a
bracket is any non-empty sequence of words drawn from the allowed items of its role, no longer
than the longest of them, so it may spell an item outside the allowed set (words of two allowed
relations mixed), which execution then rejects (and which, under ``last``, has no partners);
``trie`` (ours, strict) — a bracket spells exactly one allowed item (a word trie, followed token
by token by the processor's token-id tries).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Literal

from kbqa_lit.decoding.rules import Context, PhraseVocab, RoleVocab, WordOptions, word_options
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.lf.normalize import schema_to_words
from kbqa_lit.kb.lf.sexpr import base_relation

PAIR_MODES = ("trie", "bag")
#: Whose partners a relation must be: the last relation or class written (the paper's) or any written before.
PAIR_PARTNERS = ("last", "any")


class BagVocab:
    """Any non-empty sequence of words from a bag, no longer than the longest item (the bag-of-tokens mode).

    Args:
        phrases: The allowed items; their words make the bag.
    """

    def __init__(self, phrases: Iterable[str]) -> None:
        items = [p.split() for p in phrases]
        self.words = frozenset(w for words in items for w in words if w != "]")
        self.max_words = max((len(words) for words in items), default=0)
        self._opts = word_options(self.words)
        self._none = word_options(frozenset())

    def __len__(self) -> int:
        return len(self.words)

    def start(self) -> int:
        """Words so far: none."""
        return 0

    def options(self, cur: Hashable) -> WordOptions:
        """Every word of the bag while the bracket is shorter than the longest item."""
        return self._opts if int(cur) < self.max_words else self._none  # type: ignore[call-overload]

    def step(self, cur: Hashable, word: str) -> int | None:
        """One word more for a word of the bag (within the length), else ``None``."""
        n = int(cur)  # type: ignore[call-overload]
        return n + 1 if word in self.words and n < self.max_words else None

    def accepts(self, cur: Hashable) -> bool:
        """At least one word."""
        return int(cur) >= 1  # type: ignore[call-overload]


class PairRules:
    """KB-connected pairs of one question as grammar rules (see the module docstring).

    Args:
        class_relation: ``P_c-r`` as ``(class id, relation id or "(R r)")``.
        relation_relation: ``P_r-r`` as ``(relation, relation)`` (either may be ``(R r)``).
        relation_entity: ``P_r-e`` as ``(relation id, entity id)``.
        entity_labels: Bracket texts of the detected entities (labels as the normaliser writes them).
        bare_entities: Slot words of the detected entities (``[E0]``...).
        mode: ``bag`` (words of the items; the paper's) or ``trie`` (exact items).
        chain_heads: Also allow from the start the relations up to this many ``P_r-r`` pairs away from a
            ``P_r-e`` relation (0: the paper's start set).
        partners: ``last`` (the partners of the last relation or class written; the paper's) or ``any``
            (the start set and the partners of every relation and class written before).

    Raises:
        UserInputError: On an unknown ``mode`` or ``partners``, or a negative ``chain_heads``.
    """

    context_free = False

    def __init__(
        self,
        class_relation: Iterable[tuple[str, str]] = (),
        relation_relation: Iterable[tuple[str, str]] = (),
        relation_entity: Iterable[tuple[str, str]] = (),
        entity_labels: Iterable[str] = (),
        bare_entities: Iterable[str] = (),
        mode: Literal["trie", "bag"] = "bag",
        chain_heads: int = 0,
        partners: Literal["last", "any"] = "last",
    ) -> None:
        check_choice("mode", mode, PAIR_MODES)
        check_choice("partners", partners, PAIR_PARTNERS)
        if int(chain_heads) < 0:
            raise UserInputError(f"chain_heads must be >= 0, got {chain_heads}")
        self.mode = mode
        self.partners = partners
        words = schema_to_words
        self.after_class: dict[str, frozenset[str]] = {}
        for c, r in class_relation:
            self.after_class[words(c)] = self.after_class.get(words(c), frozenset()) | {words(base_relation(r))}
        self.after_relation: dict[str, frozenset[str]] = {}
        for pair in relation_relation:
            a, b = (words(base_relation(r)) for r in pair)
            self.after_relation[a] = self.after_relation.get(a, frozenset()) | {b}
            self.after_relation[b] = self.after_relation.get(b, frozenset()) | {a}
        start = frontier = frozenset(words(base_relation(r)) for r, _ in relation_entity)
        for _ in range(int(chain_heads)):
            frontier = frozenset(r for f in frontier for r in self.after_relation.get(f, ())) - start
            start = start | frontier
        if not start and not self.after_class:  # else no expression could be completed
            start = frozenset(self.after_relation)
        self.start_relations = start
        self.classes = frozenset(self.after_class)
        labels = [" ".join(str(label).split()) for label in entity_labels]
        self._vocabs: dict[frozenset[str], RoleVocab] = {}
        self._class_vocab = self._role_vocab(self.classes)
        entity = self._role_vocab(frozenset(label for label in labels if label))
        self._entity_vocab = RoleVocab(entity.brackets, frozenset(bare_entities))

    def _role_vocab(self, items: frozenset[str]) -> RoleVocab:
        found = self._vocabs.get(items)
        if found is None:
            vocab = PhraseVocab(items) if self.mode == "trie" else BagVocab(items)
            found = self._vocabs[items] = RoleVocab((vocab,) if len(vocab) else ())
        return found

    def partners_of(self, role: str, text: str) -> frozenset[str]:
        """The relations (as bracket words) paired with a written relation or class (none for other roles)."""
        if role == "relation":
            return self.after_relation.get(text, frozenset())
        if role == "class":
            return self.after_class.get(text, frozenset())
        return frozenset()

    def allowed_relations(self, written: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The relations (as bracket words) allowed after the atoms ``written`` (``(role, text)``, in writing order).

        ``last``: the partners of the last relation or class written, the start set before any;
        ``any``: the start set and the partners of every relation and class written.
        """
        components = [(role, text) for role, text in written if role in ("relation", "class")]
        if self.partners == "last":
            return self.partners_of(*components[-1]) if components else self.start_relations
        allowed = set(self.start_relations)
        for role, text in components:
            allowed |= self.partners_of(role, text)
        return frozenset(allowed)

    def reduce_items(self, items: tuple[tuple[int, str, str], ...]) -> tuple[tuple[int, str, str], ...]:
        """The items of one call that :meth:`allowed_relations` reads, in a form equal wherever its answer is.

        ``last``: the call's last relation or class (the context's last component is the innermost
        call's last one that has any); ``any``: each relation and class once, sorted. Argument indices,
        entities and directions are not read and become ``0`` or are dropped.
        """
        components = [(0, role, text) for _, role, text in items if role in ("relation", "class")]
        if self.partners == "last":
            return tuple(components[-1:])
        return tuple(sorted(set(components)))

    def vocab(self, role: str, context: Context) -> RoleVocab | None:
        """The allowed relations, classes or entities; ``None`` for other roles (literals)."""
        if role == "relation":
            written = [(r, text) for _, items in context for _, r, text in items]
            return self._role_vocab(self.allowed_relations(written))
        if role == "class":
            return self._class_vocab
        if role == "entity":
            return self._entity_vocab
        return None


__all__ = ["PAIR_MODES", "PAIR_PARTNERS", "BagVocab", "PairRules"]
