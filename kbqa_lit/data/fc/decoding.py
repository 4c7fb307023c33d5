"""The decoding constraint of one question from its components: FC's pair rules for the grammar-constrained decoder.

:func:`pair_rules` turns :class:`~kbqa_lit.data.fc.composer_examples.Components` (the detected
pairs and entities) into :class:`~kbqa_lit.decoding.pairs.PairRules`, the stricter rule set of
the project's one grammar-constrained processor. Both users build it here: the FC pipeline's
composer stage (:mod:`kbqa_lit.pipelines.fc.compose`) and the composer datamodule's
``decoding_rules`` hook, which the execution-guided callback asks under ``constrained: datamodule``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from kbqa_lit.data.fc.composer_examples import Components
from kbqa_lit.decoding.pairs import PairRules
from kbqa_lit.decoding.rules import entity_bracket


def pair_rules(
    components: Components,
    bare_entities: Sequence[str] = (),
    mode: Literal["trie", "bag"] = "bag",
    chain_heads: int = 0,
    partners: Literal["last", "any"] = "last",
) -> PairRules:
    """The pair rules of one question.

    Args:
        components: Its pairs and entities (entity brackets are the labels as the normaliser writes them).
        bare_entities: The slot words of its entities (``[E0]``...), when the composer writes slots.
        mode: ``bag`` (the paper's bag of words) or ``trie`` (exact items).
        chain_heads: See :class:`~kbqa_lit.decoding.pairs.PairRules` (0: the paper's start set).
        partners: ``last`` (the paper's: the partners of the last relation or class written) or ``any``
            (ours: of every one written); see :class:`~kbqa_lit.decoding.pairs.PairRules`.
    """
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for p in components.pairs:
        by_kind.setdefault(p.kind, []).append((p.first, p.second))
    return PairRules(
        class_relation=by_kind.get("class-relation", []),
        relation_relation=by_kind.get("relation-relation", []),
        relation_entity=by_kind.get("relation-entity", []),
        entity_labels=[entity_bracket(e, label) for e, label in components.entities.items()],
        bare_entities=bare_entities,
        mode=mode,
        chain_heads=chain_heads,
        partners=partners,
    )


__all__ = ["pair_rules"]
