"""Relation inventory from a real Oxigraph store of the synthetic world, and the BM25 pre-filter."""

from __future__ import annotations

import json

import pytest

from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.index.relation_inventory import (
    BM25RelationRanker,
    RelationInventory,
    inventory_cache_path,
    load_inventory,
    recall_at,
)
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("inv")
    build_world(root / "world", seed=0, size="small")
    build_store(root / "store", [root / "world" / "kb.nt"], "nt")
    return root


@pytest.fixture(scope="module")
def inventory(world):
    with open_store(world / "store") as store:
        return RelationInventory.from_store(store)


def test_store_inventory_excludes_plumbing_and_is_cached(world, inventory):
    assert "people.person.place_of_birth" in inventory
    assert "type.object.name" not in inventory and "type.object.type" not in inventory
    assert "common.topic.alias" not in inventory
    assert list(inventory.relations) == sorted(inventory.relations)
    cache = inventory_cache_path(world / "store")
    data = json.loads(cache.read_text())
    assert data["relations"] == list(inventory.relations)
    assert inventory.words("people.person.place_of_birth") == "people , person , place of birth"
    # the N-Triples scan and the cache agree with the store
    assert RelationInventory.from_ntriples(world / "world" / "kb.nt").relations == inventory.relations
    assert load_inventory(world / "store").relations == inventory.relations


def test_inventory_covers_every_gold_relation(world, inventory):
    from kbqa_lit.data.schema import read_jsonl
    from kbqa_lit.kb.lf.sexpr import schema_items

    gold = {r for ex in read_jsonl(world / "world" / "test.jsonl") for r in schema_items(ex.s_expression).relations}
    assert gold and gold <= set(inventory.relations)


def test_inventory_file_forms_and_errors(tmp_path):
    lines = tmp_path / "rels.txt"
    lines.write_text("film.film.genre\n# comment\nmusic.album.genre\ntype.object.name\n")
    assert RelationInventory.from_file(lines).relations == ("film.film.genre", "music.album.genre")
    as_json = tmp_path / "rels.json"
    as_json.write_text(json.dumps({"relations": ["b.c.d", "a.b.c"]}))
    assert RelationInventory.from_file(as_json).relations == ("a.b.c", "b.c.d")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"relations": ["not a relation"]}))
    with pytest.raises(DataFormatError, match="bad.json"):
        RelationInventory.from_file(bad)
    with pytest.raises(UserInputError):
        load_inventory(tmp_path / "missing")


def test_bm25_ranks_gold_relation_first(inventory):
    bm25 = BM25RelationRanker(inventory, top_n=5)
    ranked = [r for r, _ in bm25.rank("What kind of music genre is on the album Midnight Fever?", 3)]
    assert ranked[0] == "music.album.genre"
    ranked = [r for r, _ in bm25.rank("Which films did the directors direct?", 5)]
    assert "film.film.directed_by" in ranked[:3]
    top = bm25.prefilter("what sport does the team play")
    assert len(top) == 5 and "sports.sports_team.sport" in top


def test_prefilter_is_off_for_small_inventories(inventory):
    assert BM25RelationRanker(inventory, top_n=len(inventory)).prefilter("anything") == list(inventory.relations)
    assert BM25RelationRanker(inventory, top_n=0).prefilter("anything") == list(inventory.relations)


def test_recall_at():
    assert recall_at(["a", "b"], ["a", "c", "b"], 1) == 0.5
    assert recall_at(["a", "b"], ["a", "c", "b"], 3) == 1.0
