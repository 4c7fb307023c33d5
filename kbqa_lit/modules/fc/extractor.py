"""``ComponentExtractor``: FC-KBQA's relation or class extractor, the shared cross-encoder on FC's items.

The model, loss and metrics are :class:`~kbqa_lit.modules.cross_encoder.CrossEncoderRetriever`'s
(a linear head on the encoder's ``[CLS]`` output; the cross-entropy of a softmax over each group
with the positive first, i.e. ``L = −log e^{s(q,r+)} / (e^{s(q,r+)} + Σ_{r'∈N} e^{s(q,r')})``);
what changes is the item text read after the question — ``[D] domain-class [N] name [R]
range-class`` for a relation, ``[D] domain [N] class-name`` for a class
(:mod:`kbqa_lit.data.fc.extractor_texts`). Training batches come from
:class:`~kbqa_lit.datamodules.fc.extractors.ExtractorDataModule`, which builds the same texts.

Inference: :meth:`ComponentExtractor.rank` over BM25-recalled candidates, keeping the top 10
(the paper's). Relation texts need the domain and range classes: ``ontology`` names the schema
source (kept in the checkpoint's hyper-parameters) or :meth:`ComponentExtractor.set_ontology`
gives one.
"""

from __future__ import annotations

from typing import Any, Literal

from kbqa_lit.backbones.encoders import MINILM
from kbqa_lit.data.fc.extractor_texts import class_item, relation_item
from kbqa_lit.data.fc.schema_source import load_ontology
from kbqa_lit.errors import check_choice
from kbqa_lit.kb.lf.ontology import Ontology
from kbqa_lit.modules.cross_encoder import CrossEncoderRetriever

EXTRACTOR_KINDS = ("relation", "class")


class ComponentExtractor(CrossEncoderRetriever):
    """Scores (question, relation) or (question, class) pairs with FC-KBQA's item texts.

    Args:
        kind: ``relation`` or ``class``.
        ontology: Schema source of the relation texts' domain and range classes (a ``schema.json``
            or a directory with ``fb_roles``); read on first use; ``None``: the id's prefix as
            domain class and no range (unless :meth:`set_ontology` gives one).
        encoder_name_or_path: See :class:`~kbqa_lit.modules.cross_encoder.CrossEncoderRetriever`
            (default the offline all-MiniLM-L6-v2; ``bert-base-uncased`` as in the paper).
        encoder_config: BERT config fields (a tiny BERT without a name).
        tokenizer: The tokenizer (linked from the datamodule by the CLI).
        pooling: ``cls`` (the paper's) or ``mean``.
        dropout: Dropout before the scoring Linear.
        learning_rate: Peak AdamW learning rate (the paper: 2e-5).
        weight_decay: AdamW weight decay.
        warmup_steps: Linear warm-up steps (0: ``warmup_ratio``).
        warmup_ratio: Warm-up share of all optimiser steps.
        max_length: Pair length limit (tokens) at inference.
    """

    def __init__(
        self,
        kind: Literal["relation", "class"] = "relation",
        ontology: str | None = None,
        encoder_name_or_path: str | None = MINILM,
        encoder_config: dict[str, Any] | None = None,
        tokenizer: Any = None,
        pooling: str = "cls",
        dropout: float = 0.1,
        learning_rate: float = 2e-5,
        weight_decay: float = 0.01,
        warmup_steps: int = 0,
        warmup_ratio: float = 0.1,
        max_length: int = 64,
    ) -> None:
        check_choice("kind", kind, EXTRACTOR_KINDS)
        super().__init__(
            encoder_name_or_path=encoder_name_or_path,
            encoder_config=encoder_config,
            tokenizer=tokenizer,
            pooling=pooling,
            dropout=dropout,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            warmup_steps=warmup_steps,
            warmup_ratio=warmup_ratio,
            max_length=max_length,
        )
        self._ontology: Ontology | None = None

    def set_ontology(self, ontology: Ontology | None) -> None:
        """Use this ontology for the relation texts (instead of reading ``ontology``)."""
        self._ontology = ontology

    @property
    def ontology(self) -> Ontology | None:
        """The ontology of the relation texts (read from ``ontology`` on first use)."""
        if self._ontology is None and self.hparams.get("ontology"):
            self._ontology = load_ontology(self.hparams.ontology)
        return self._ontology

    def item_text(self, item: str) -> str:
        """``[D] ... [N] ... [R] ...`` of a relation or ``[D] ... [N] ...`` of a class."""
        return relation_item(item, self.ontology) if self.hparams.kind == "relation" else class_item(item)


__all__ = ["EXTRACTOR_KINDS", "ComponentExtractor"]
