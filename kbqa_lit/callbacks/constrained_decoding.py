"""The ``constrained`` setting of :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval`.

:class:`ConstrainedDecoding` builds one batch's
:class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor` over
:class:`~kbqa_lit.decoding.grammar.SExprGrammar` rule sets:

- ``grammar``: well-formed normalised S-expressions only (:class:`~kbqa_lit.decoding.grammar.BaseRules`);
- ``schema``: also only the store's relations (its relation inventory) and classes (its
  ``type.object.type`` objects, listed once), and entity brackets from the question's linked
  entities (the inference view's ``topic_entities`` and ``meta["entity_candidates"]``; never gold
  fields) and its slots ``[E0]``...;
- ``connected``: ``schema``, and an entity may stand as a join's argument only when the KB has the
  join's edge at it (:class:`~kbqa_lit.decoding.anchor.AnchoredEntityRules`; the linked entities'
  edges are read from the store, once per entity);
- ``datamodule``: the rule sets the datamodule's ``decoding_rules(example)`` gives for each
  question (FC-KBQA's KB-connected pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lightning as L
from lightning.pytorch.utilities import rank_zero_warn

from kbqa_lit.data.entity_slots import SLOT_TOKENS, topic_slots
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.decoding.anchor import AnchoredEntity, AnchoredEntityRules
from kbqa_lit.decoding.grammar import BaseRules, EntityRules, SchemaRules, SExprGrammar, entity_bracket
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from kbqa_lit.errors import StoreError, check_choice
from kbqa_lit.kb.index.entity_index import relation_edges
from kbqa_lit.kb.index.relation_inventory import RelationInventory, store_classes

#: The ``constrained`` modes.
MODES = ("none", "grammar", "schema", "connected", "datamodule")


def linked_entities(ex: KBQAExample) -> dict[str, str | None]:
    """The entities inference may name for ``ex`` (id → name): its candidates and topic entities (never gold)."""
    linked = dict(ex.meta.get("entity_candidates") or {})
    linked.update(ex.topic_entities)
    return {str(e): None if n is None else str(n) for e, n in linked.items()}


def entity_rules(ex: KBQAExample) -> EntityRules:
    """The entities inference may name for ``ex``: its linked entities and candidates, and its slots."""
    labels = [entity_bracket(e, n) for e, n in linked_entities(ex).items()]
    return EntityRules(labels, [slot for slot, _ in topic_slots(ex)])


def anchored_entities(ex: KBQAExample, edges: dict[str, tuple[frozenset[str], frozenset[str]]]) -> list[AnchoredEntity]:
    """``ex``'s linked entities with their slots and their ``(outgoing, incoming)`` relations from ``edges``."""
    slots: dict[str, list[str]] = {}
    for slot, label in topic_slots(ex):
        slots.setdefault(label.lower(), []).append(slot)
    out = []
    for e, name in linked_entities(ex).items():
        topic = ex.topic_entities.get(e)
        mine = slots.get(" ".join(str(topic).split()).lower(), []) if topic is not None else []
        outgoing, incoming = edges.get(e, (frozenset(), frozenset()))
        out.append(AnchoredEntity(entity_bracket(e, name), tuple(mine), outgoing, incoming))
    return out


class ConstrainedDecoding:
    """One constrained-decoding mode and what it caches (the token index, the store's schema).

    Args:
        mode: One of :data:`MODES` (see the module docstring).
        num_beams: The beam search's width (the processor's rows per question).
        max_new_tokens: The search's token budget (the processor's guard).

    Raises:
        ValueError: When ``mode`` is not one of :data:`MODES`.
    """

    def __init__(self, mode: str, num_beams: int, max_new_tokens: int) -> None:
        check_choice("constrained", mode, MODES)
        self.mode = mode
        self.num_beams = int(num_beams)
        self.max_new_tokens = int(max_new_tokens)
        self._token_index: TokenIndex | None = None
        self._schema_rules: SchemaRules | None = None
        self._edges: dict[str, tuple[frozenset[str], frozenset[str]]] = {}

    def reset(self) -> None:
        """Forget the caches (the token index, the schema and the entity edges read from a store)."""
        self._token_index, self._schema_rules, self._edges = None, None, {}

    def processor(
        self, pl_module: L.LightningModule, batch: Any, examples: Sequence[KBQAExample], kb: Any
    ) -> GrammarLogitsProcessor | None:
        """The batch's processor (``None`` when the mode is ``none``).

        Args:
            pl_module: The generator; its ``tokenizer`` and ``model.config`` are read.
            batch: The batch (``input_ids`` gives a decoder-only model's prompt length).
            examples: The batch's inference views, in order.
            kb: The open store (read once for ``schema``; per new linked entity for ``connected``).

        Raises:
            RuntimeError: When the module has no tokenizer, or ``datamodule`` mode meets a
                datamodule without ``decoding_rules``.
        """
        if self.mode == "none":
            return None
        tokenizer = getattr(pl_module, "tokenizer", None)
        if tokenizer is None:
            raise RuntimeError(f"constrained={self.mode!r} needs the module's tokenizer (pl_module.tokenizer)")
        config = getattr(getattr(pl_module, "model", None), "config", None)
        if self._token_index is None or self._token_index.tokenizer is not tokenizer:
            self._token_index = TokenIndex(tokenizer, getattr(config, "vocab_size", None))
        base = BaseRules(SLOT_TOKENS)
        if self.mode == "grammar":
            grammars: list[SExprGrammar] = [SExprGrammar([base])]
        elif self.mode == "datamodule":
            rules_of = getattr(getattr(pl_module.trainer, "datamodule", None), "decoding_rules", None)
            if not callable(rules_of):
                raise RuntimeError("constrained='datamodule' needs a datamodule with decoding_rules(example)")
            grammars = [SExprGrammar([base, *rules_of(ex)]) for ex in examples]
        elif self.mode == "connected":
            schema = self.schema(kb)
            edges = self.edges(kb, [e for ex in examples for e in linked_entities(ex)])
            grammars = [
                SExprGrammar([base, schema, AnchoredEntityRules(anchored_entities(ex, edges))]) for ex in examples
            ]
        else:
            schema = self.schema(kb)
            grammars = [SExprGrammar([base, schema, entity_rules(ex)]) for ex in examples]
        encoder_decoder = bool(getattr(config, "is_encoder_decoder", True))
        return GrammarLogitsProcessor(
            self._token_index,
            grammars,
            num_beams=self.num_beams,
            prefix_length=1 if encoder_decoder else int(batch["input_ids"].shape[1]),
            max_new_tokens=self.max_new_tokens,
            budget_top_k=2 * self.num_beams,  # generate's beam search takes the 2 * num_beams best tokens
        )

    def edges(self, kb: Any, entity_ids: Sequence[str]) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """``(outgoing, incoming)`` relations per entity, read from ``kb`` once per entity."""
        missing = [e for e in dict.fromkeys(entity_ids) if e not in self._edges]
        if missing:
            self._edges.update(relation_edges(kb, missing))
        return self._edges

    def schema(self, kb: Any) -> SchemaRules:
        """The store's relations (its inventory) and classes (``type.object.type`` objects), read once."""
        if self._schema_rules is None:
            inventory = RelationInventory.from_store(kb)
            classes: list[str] | None
            try:
                classes = store_classes(kb)
            except StoreError as exc:
                classes = None
                rank_zero_warn(f"constrained=schema: could not list the store's classes ({exc}); any class allowed")
            self._schema_rules = SchemaRules(inventory.relations, classes)
        return self._schema_rules


__all__ = ["MODES", "ConstrainedDecoding", "anchored_entities", "entity_rules", "linked_entities"]
