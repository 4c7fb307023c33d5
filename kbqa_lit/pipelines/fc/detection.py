"""FC-KBQA's fine-grained detection at inference: BM25 recall, then the extractors' top-k.

:class:`ComponentDetector` recalls the BM25 top ``recall_size`` relations (and classes) of a
question (:class:`~kbqa_lit.kb.index.relation_inventory.BM25RelationRanker`; the whole inventory when it
is no larger) and keeps the extractor's best ``top_k`` (the paper's 10) with their scores — the
inputs of entity pruning (:mod:`kbqa_lit.pipelines.fc.linking`) and of the pairs
(:mod:`kbqa_lit.pipelines.fc.pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.relation_inventory import BM25RelationRanker, RelationInventory


class Ranker(Protocol):
    """What detection needs from an extractor (:class:`~kbqa_lit.modules.fc.extractor.ComponentExtractor`)."""

    def rank(self, question: str, inventory: Sequence[str], top_l: int = 10) -> list[tuple[str, float]]:
        """The ``top_l`` best ``(id, score)`` of ``inventory``, best first."""
        ...


@dataclass
class Detected:
    """The components detected for one question, best first.

    Attributes:
        relations: ``(relation id, extractor score)``.
        classes: ``(class id, extractor score)`` (empty without a class extractor).
    """

    relations: list[tuple[str, float]] = field(default_factory=list)
    classes: list[tuple[str, float]] = field(default_factory=list)


class ComponentDetector:
    """BM25 recall + extractor ranking for relations and (optionally) classes.

    Args:
        relation_extractor: Ranks relations.
        relations: The relation inventory.
        class_extractor: Ranks classes (``None``: no classes are detected).
        classes: The class ids (required with a class extractor).
        recall_size: BM25 candidates per question (0: the whole inventory).
        top_k: Components kept per kind (the paper: 10).
    """

    def __init__(
        self,
        relation_extractor: Ranker,
        relations: RelationInventory,
        class_extractor: Ranker | None = None,
        classes: Sequence[str] = (),
        recall_size: int = 100,
        top_k: int = 10,
    ) -> None:
        if top_k < 1:
            raise UserInputError(f"top_k must be >= 1, got {top_k}")
        if class_extractor is not None and not classes:
            raise UserInputError("a class extractor needs the class ids to rank")
        self.relation_extractor = relation_extractor
        self.class_extractor = class_extractor
        self.relation_recall = BM25RelationRanker(relations, top_n=recall_size)
        self.class_recall = (
            BM25RelationRanker(RelationInventory.from_relations(classes, source="classes"), top_n=recall_size)
            if class_extractor is not None
            else None
        )
        self.top_k = top_k

    def detect(self, question: str) -> Detected:
        """The top-k relations and classes of ``question``."""
        rels = self.relation_extractor.rank(question, self.relation_recall.prefilter(question), top_l=self.top_k)
        classes: list[tuple[str, float]] = []
        if self.class_extractor is not None and self.class_recall is not None:
            classes = self.class_extractor.rank(question, self.class_recall.prefilter(question), top_l=self.top_k)
        return Detected(list(rels), list(classes))


__all__ = ["ComponentDetector", "Detected", "Ranker"]
