"""Class and relation lists read the schema's nodes (bounded), not every triple of the KB, when it has them."""

from __future__ import annotations

import pytest

from kbqa_lit.kb.index.relation_inventory import CLASS_LIMIT, RelationInventory, classes_cache_path, store_classes
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.selection.answer_type import AnswerTypes
from tests.helpers.music_kb import build_music_store
from tests.helpers.scale_kb import RecordingStore, build_scale_store

_SCAN = "?s <http://rdf.freebase.com/ns/type.object.type> ?c"


@pytest.fixture(scope="module")
def scale(tmp_path_factory: pytest.TempPathFactory):
    store, _ = build_scale_store(tmp_path_factory.mktemp("classes"))
    yield store
    store.close()


def test_a_kb_with_schema_nodes_is_asked_for_them_with_a_limit(scale) -> None:
    rec = RecordingStore(scale)
    classes = AnswerTypes().kb_classes(rec)
    assert {"location.country", "people.person", "film.performance", "common.topic"} <= set(classes)
    assert len(rec.queries) == 1 and _SCAN not in rec.queries[0]  # the unbounded scan would fail here
    assert "type.type" in rec.queries[0] and rec.queries[0].endswith(f"LIMIT {CLASS_LIMIT}")
    assert rec.rows[0] < 100  # the ontology's size, not the KB's


def test_a_kb_without_schema_nodes_is_scanned_once_and_cached(tmp_path) -> None:
    path = build_music_store(tmp_path, studies=True)
    with open_store(path) as kb:
        rec = RecordingStore(kb)
        first = store_classes(rec)
        assert "location.city" in first and any(_SCAN in q for q in rec.queries)
        assert classes_cache_path(kb.path).is_file()
        rec = RecordingStore(kb)
        assert store_classes(rec) == first and not any(_SCAN in q for q in rec.queries)


def test_the_relation_inventory_of_a_kb_with_schema_nodes_reads_them(scale, tmp_path) -> None:
    rec = RecordingStore(scale)
    inv = RelationInventory.from_store(rec, cache_path=tmp_path / "inv.json")
    assert "people.person.nationality" in inv and "film.performance.actor" in inv
    assert len(rec.queries) == 1 and "?s ?p ?o" not in rec.queries[0]  # no scan of every triple
    assert "type.property" in rec.queries[0] and rec.queries[0].endswith(f"LIMIT {CLASS_LIMIT}")
