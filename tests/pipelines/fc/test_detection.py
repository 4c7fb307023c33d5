"""FC-KBQA detection: BM25 recall, then tiny real extractors keep their top-k relations and classes."""

from __future__ import annotations

import pytest

from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.errors import UserInputError
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.pipelines.fc.detection import ComponentDetector
from tests.helpers.tiny import TINY_BERT


def test_detection_keeps_the_top_k_of_the_bm25_recall(tmp_path):
    rel_dm = ExtractorDataModule(data_dir=str(tmp_path / "w"), synthetic_seed=0, tokenizer_name_or_path=None)
    cls_dm = ExtractorDataModule(kind="class", data_dir=str(tmp_path / "w"), tokenizer_name_or_path=None)
    rel = ComponentExtractor(
        "relation", encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=rel_dm.tokenizer
    )
    rel.set_ontology(rel_dm.ontology)
    cls = ComponentExtractor("class", encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=cls_dm.tokenizer)
    classes = list(cls_dm.inventory.relations)
    detector = ComponentDetector(rel, rel_dm.inventory, cls, classes, recall_size=5, top_k=3)
    q = "Where was Amos Garrick born?"
    found = detector.detect(q)
    assert len(found.relations) == 3 and len(found.classes) == 3
    assert {r for r, _ in found.relations} <= set(rel_dm.bm25.prefilter(q, 5))
    assert [s for _, s in found.relations] == sorted((s for _, s in found.relations), reverse=True)
    assert found.relations == rel.rank(q, detector.relation_recall.prefilter(q), top_l=3)
    assert ComponentDetector(rel, rel_dm.inventory, top_k=2).detect(q).classes == []
    with pytest.raises(UserInputError):
        ComponentDetector(rel, rel_dm.inventory, cls)
