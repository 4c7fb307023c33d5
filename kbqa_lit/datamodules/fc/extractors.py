"""``ExtractorDataModule``: training groups of FC-KBQA's relation and class extractors.

A subclass of the shared
:class:`~kbqa_lit.datamodules.relation_retrieval.RelationRetrievalDataModule` (same rows, batches,
BM25 candidates and split handling) with FC-KBQA's three differences:

- the items are the relations (``kind: relation``) or the classes (``kind: class``) of the gold
  S-expression; the class inventory is the ontology's classes
  (:func:`~kbqa_lit.data.fc.schema_source.ontology_classes`);
- the encoder reads ``(q, [D] domain-class [N] name [R] range-class)`` for a relation and
  ``(q, [D] domain [N] class-name)`` for a class (:mod:`kbqa_lit.data.fc.extractor_texts`);
- a group's negatives come from the positive's Freebase domain (first dotted segment), 48 by
  default, other domains filling in when the domain is small
  (:func:`~kbqa_lit.data.fc.extractor_texts.same_domain_negatives`; no BM25-hard negatives).

Validation and test rows (and inference) rank the BM25 top ``eval_candidates`` of the inventory
(the **BM25 recall size**; 0 or an inventory no larger ranks everything).

The ontology comes from ``ontology`` (a ``schema.json``, or a directory with GrailQA's
``fb_roles``), else ``<data_dir>/schema.json`` (the synthetic world). Without one, relation texts
fall back to the id's prefix as domain class and no range, and the class inventory is the gold
classes of the split files. A tokenizer trained in code (``tokenizer_name_or_path: null``) learns
the training questions and the item texts, markers included.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from kbqa_lit.backbones.encoders import MINILM
from kbqa_lit.data.fc.extractor_texts import DEFAULT_NEGATIVES, class_item, relation_item, same_domain_negatives
from kbqa_lit.data.fc.schema_source import SCHEMA_FILE, load_schema, ontology_classes
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.relation_retrieval import PairCollator, RelationRetrievalDataModule, gold_schema_items
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.index.relation_inventory import RelationInventory
from kbqa_lit.kb.lf.ontology import Ontology

log = logging.getLogger(__name__)
EXTRACTOR_KINDS = ("relation", "class")


def gold_classes(ex: KBQAExample, path: object = "") -> list[str]:
    """The classes of an example's gold S-expression, in order ([] without one).

    Raises:
        DataFormatError: When the S-expression does not parse (naming the file and the qid).
    """
    return gold_schema_items(ex, "classes", path)


class ExtractorDataModule(RelationRetrievalDataModule):
    """Data for FC-KBQA's relation or class extractor (a :class:`~kbqa_lit.modules.fc.extractor.ComponentExtractor`).

    Args:
        kind: ``relation`` or ``class``: which gold items make the groups.
        ontology: A ``schema.json`` or a directory with ``fb_roles``; default
            ``<data_dir>/schema.json`` when present.
        store: Store directory or endpoint URL whose relations form the relation inventory.
        inventory_file: A relation inventory file (relations only).
        tokenizer_name_or_path: The encoder's tokenizer; ``None`` trains a WordPiece tokenizer.
        vocab_size: Vocabulary size of a trained tokenizer.
        num_negatives: Negatives per positive (the paper: 48).
        eval_candidates: The BM25 recall size: candidates per question at validation, test and
            inference (0: the whole inventory).
        max_length: Pair length limit in tokens.
        batch_size: Training groups per batch (the paper: 8).
        eval_batch_size: Questions per validation/test batch.
        num_workers: DataLoader worker processes.
        seed: Seed of the negative sampling and of the training order.
        **kwargs: The file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`.
    """

    def __init__(
        self,
        kind: Literal["relation", "class"] = "relation",
        ontology: str | None = None,
        store: str | None = None,
        inventory_file: str | None = None,
        tokenizer_name_or_path: str | None = MINILM,
        vocab_size: int = 2000,
        num_negatives: int = DEFAULT_NEGATIVES,
        eval_candidates: int = 100,
        max_length: int = 64,
        batch_size: int = 8,
        eval_batch_size: int = 8,
        num_workers: int = 0,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        check_choice("kind", kind, EXTRACTOR_KINDS)
        self.ontology: Ontology | None = None
        self._listed_classes: list[str] = []
        super().__init__(
            store=store,
            inventory_file=inventory_file,
            tokenizer_name_or_path=tokenizer_name_or_path,
            vocab_size=vocab_size,
            num_negatives=num_negatives,
            hard_negative_ratio=0.0,
            eval_candidates=eval_candidates,
            max_length=max_length,
            batch_size=batch_size,
            eval_batch_size=eval_batch_size,
            num_workers=num_workers,
            seed=seed,
            **kwargs,
        )

    # ------------------------------------------------------------------ ontology and inventory

    def _load_ontology(self) -> None:
        spec = self.hparams.get("ontology")
        self._ensure_data()
        if spec is None and self.data_dir is not None and (self.data_dir / SCHEMA_FILE).is_file():
            spec = str(self.data_dir / SCHEMA_FILE)
        if spec is None:
            log.warning("no ontology: relation items fall back to their id's prefix as domain class, no range")
            return
        self.ontology, self._listed_classes = load_schema(spec)

    def _load_inventory(self) -> RelationInventory:
        self._load_ontology()
        if self.hparams.kind == "relation":
            return super()._load_inventory()
        if self.ontology is not None:
            classes = ontology_classes(self.ontology, self._listed_classes)
            return RelationInventory.from_relations(classes, source=f"classes of {self.hparams.get('ontology') or ''}")
        found = [
            c for s in ("train", "val", "test") if self._has(s) for ex in self.examples(s) for c in gold_classes(ex)
        ]
        log.warning("no ontology: the class inventory is the %d gold classes of the splits", len(set(found)))
        inv = RelationInventory.from_relations(found, source="gold classes")
        if not len(inv):
            raise UserInputError("no class inventory: set ontology (a schema.json or a directory with fb_roles)")
        return inv

    def _tokenizer_texts(self) -> list[str]:
        """What a trained tokenizer learns: the first split's questions and the item texts, markers included."""
        first = next((s for s in ("train", "val", "test") if self._has(s)), None)
        texts = [ex.question for ex in self.examples(first)] if first else []
        return texts + [self.item_text(item) for item in self.inventory.relations]

    # ------------------------------------------------------------------ items

    def item_text(self, item: str) -> str:
        """The item text the encoder reads after the question (see :mod:`kbqa_lit.data.fc.extractor_texts`)."""
        return relation_item(item, self.ontology) if self.hparams.kind == "relation" else class_item(item)

    def gold_items(self, ex: KBQAExample, path: object = "") -> list[str]:
        """The gold relations or classes of an example (by ``kind``)."""
        return super().gold_items(ex, path) if self.hparams.kind == "relation" else gold_classes(ex, path)

    def negatives(self, ex: KBQAExample, positive: str, gold: Sequence[str]) -> list[str]:
        """Same-domain negatives of one group (deterministic given ``seed``)."""
        return same_domain_negatives(
            positive,
            self.inventory.relations,
            exclude=gold,
            k=self.hparams.num_negatives,
            seed=self.hparams.seed,
            key=ex.qid,
        )

    def _collator(self) -> PairCollator:
        return PairCollator(self.tokenizer, self.inventory, self.hparams.max_length, text_of=self.item_text)


__all__ = ["EXTRACTOR_KINDS", "ExtractorDataModule", "gold_classes"]
