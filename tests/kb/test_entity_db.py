"""DiskEntityIndex: the entity index in an SQLite file answers as the in-memory one, built without a scan query."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.data.synthetic.fb_kb import write_scale_kb
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.index import entity_db, entity_index
from kbqa_lit.kb.index.entity_db import DiskEntityIndex, disk_index_path
from kbqa_lit.kb.index.entity_index import EntityIndex, index_cache_path
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from tests.helpers.shared_data import shared_path


class CountingStore:
    """A real store that counts the queries sent to it (the disk build of an Oxigraph store sends none)."""

    def __init__(self, store: OxigraphStore) -> None:
        self.inner, self.queries = store, []
        self.path, self.identity = store.path, store.identity

    def execute(self, sparql: str) -> Any:
        self.queries.append(sparql)
        return self.inner.execute(sparql)


@pytest.fixture(scope="module")
def scale_kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A Freebase-shaped KB of 10^5 triples (names, aliases, hubs, CVTs) in an Oxigraph store, and its questions."""
    root = tmp_path_factory.mktemp("scale")
    write_scale_kb(root / "kb", triples=100_000, seed=0)
    build_store(root / "store", [root / "kb" / "kb.nt"], "nt")
    questions = [r.question for r in read_jsonl(root / "kb" / "questions.jsonl")][:80]
    return root / "store", questions


@pytest.fixture(scope="module")
def world_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("world")
    build_world(root / "world", seed=0, size="small")
    build_store(root / "store", [root / "world" / "kb.nt"], "nt")
    return root / "store"


def _typos(index: EntityIndex, n: int) -> list[str]:
    """Questions naming entities with one letter dropped (fuzzy matches) or in lower case (normalised)."""
    names = [name for name, _ in list(index.entities.values())[:n] if len(name) > 6]
    return [f"who is {name[:3] + name[4:]}?" for name in names] + [f"where is {name.lower()}" for name in names]


def test_disk_index_answers_as_the_memory_index_at_1e5_triples(scale_kb: tuple[Path, list[str]], tmp_path: Path):
    path, questions = scale_kb
    store = OxigraphStore(path, cache_size=0)
    counting = CountingStore(store)
    try:
        memory = EntityIndex.build(store)
        disk = DiskEntityIndex.build(counting, tmp_path / "idx.sqlite")
        # names, aliases and degrees were streamed from a read-only handle: no query at all, so no GROUP BY over
        # every edge (the in-memory build's degree query, past a 120 s timeout at 10^7 triples)
        assert counting.queries == []
        stats = disk.stats
        assert stats.pop("file_mb") > 0
        assert {k: v for k, v in stats.items() if k != "build_seconds"} == {
            k: v for k, v in memory.stats.items() if k != "build_seconds"
        }
        assert len(disk) == len(memory) and memory.stats["aliases"] > 0
        hub = max(memory.entities, key=memory.degree)
        assert disk.degree(hub) == memory.degree(hub) > 1000 and disk.label(hub) == memory.label(hub)
        assert disk.label("m.not_there") is None and disk.degree("m.not_there") == 0
        asked = questions + _typos(memory, 40)
        found = 0
        for q in asked:
            expected = memory.search(q)
            assert disk.search(q) == expected, q
            found += bool(expected)
        assert found > 0.9 * len(asked)
        assert {c.match for q in asked for c in disk.search(q)} >= {"exact", "normalized", "fuzzy"}
        ids = [c.id for c in disk.search(questions[0])[:3]]
        assert disk.relations_of(ids) == memory.relations_of(ids)
    finally:
        store.close()


def test_disk_index_answers_as_the_memory_index_on_metaqa(tmp_path: Path):
    kb = shared_path("metaqa", "kb.txt")
    build_store(tmp_path / "store", [kb], "metaqa")
    store = OxigraphStore(tmp_path / "store", cache_size=0, timeout=120)
    try:
        memory = EntityIndex.build(store)
        disk = DiskEntityIndex.build(store, tmp_path / "idx.sqlite")
        lines = shared_path("metaqa", "2-hop", "qa_dev.txt").read_text(encoding="utf-8").splitlines()[:40]
        asked = [line.split("\t")[0] for line in lines] + ["what movies did [Temuera Morison] act in"]
        for q in asked:
            assert disk.search(q) == memory.search(q), q
        assert disk.search(asked[-1])[0].match == "fuzzy"
    finally:
        store.close()


def test_chunked_build_equals_one_pass(world_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = OxigraphStore(world_store, cache_size=0)
    try:
        one = DiskEntityIndex.build(store, tmp_path / "one.sqlite")
        monkeypatch.setattr(entity_db, "_BATCH", 7)
        monkeypatch.setattr(entity_db, "_POSTINGS_PER_FLUSH", 50)
        monkeypatch.setattr(entity_db, "_DEGREE_KEYS_PER_FLUSH", 5)
        monkeypatch.setattr(entity_db, "_CACHE", 3)
        small = DiskEntityIndex.build(store, tmp_path / "small.sqlite")
        memory = EntityIndex.build(store)
        names = [name for name, _ in memory.entities.values()][:30]
        asked = [f"what is {n}" for n in names] + [f"who is {n[:-2] + n[-1]}" for n in names]
        for q in asked:
            assert small.search(q) == one.search(q) == memory.search(q), q
        assert all(small.degree(e) == memory.degree(e) for e in list(memory.entities)[:200])
    finally:
        store.close()


def test_create_from_rows_and_a_failed_build_leaves_no_file(tmp_path: Path):
    rows = [("m.a", "Midnight Fever", 3), ("m.b", "Fever", 9), ("m.a", "Other Name", 1)]
    index = DiskEntityIndex.create(tmp_path / "idx.sqlite", rows, [("m.b", "The Fever"), ("m.zz", "No Entity")])
    memory = EntityIndex({"m.a": ("Midnight Fever", 3), "m.b": ("Fever", 9)}, [("m.b", "The Fever"), ("m.zz", "x")])
    assert index.label("m.a") == "Midnight Fever"  # the first name wins, as in memory
    assert index.stats["aliases"] == memory.stats["aliases"] == 1
    for q in ("who sang Midnight Fever", "the fever", "midnight fevr"):
        assert index.search(q) == memory.search(q)

    def broken():
        yield ("m.a", "A", 1)
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        DiskEntityIndex.create(tmp_path / "broken.sqlite", broken())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx.sqlite"]


def test_a_pickled_disk_index_reopens_its_file(tmp_path: Path):
    import pickle

    index = DiskEntityIndex.create(tmp_path / "idx.sqlite", [("m.a", "Midnight Fever", 3), ("m.b", "Fever", 9)])
    index.search("who sang Midnight Fevr")
    copy = pickle.loads(pickle.dumps(index))  # what a spawned worker receives
    assert copy.path == index.path and copy is not index
    assert copy.search("who sang Midnight Fevr") == index.search("who sang Midnight Fevr") != []


def test_not_an_index_is_a_clear_error(tmp_path: Path):
    with pytest.raises(UserInputError, match="no entity index file"):
        DiskEntityIndex(tmp_path / "missing.sqlite")
    (tmp_path / "junk.sqlite").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(DataFormatError, match="not an entity index"):
        DiskEntityIndex(tmp_path / "junk.sqlite")


def test_for_store_backends(world_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = OxigraphStore(world_store, cache_size=0)
    monkeypatch.delenv("KBQA_ENTITY_INDEX", raising=False)
    try:
        disk_index_path(world_store).unlink(missing_ok=True)
        index_cache_path(world_store).unlink(missing_ok=True)
        assert type(EntityIndex.for_store(store)) is EntityIndex  # small store: in memory
        assert index_cache_path(world_store).is_file() and not disk_index_path(world_store).exists()
        disk = EntityIndex.for_store(store, backend="disk")
        assert isinstance(disk, DiskEntityIndex) and disk.path == disk_index_path(world_store)
        assert isinstance(EntityIndex.for_store(store), DiskEntityIndex)  # auto: a fresh on-disk index exists
        mine = EntityIndex.for_store(store, path=tmp_path / "mine.json")  # a given file decides by its suffix
        assert type(mine) is EntityIndex and (tmp_path / "mine.json").is_file()
        assert isinstance(EntityIndex.for_store(store, path=tmp_path / "mine.sqlite"), DiskEntityIndex)
        monkeypatch.setenv("KBQA_ENTITY_INDEX", "memory")
        assert type(EntityIndex.for_store(store)) is EntityIndex
        monkeypatch.setenv("KBQA_ENTITY_INDEX", "sqlite")
        with pytest.raises(UserInputError, match="expected auto, memory or disk"):
            EntityIndex.for_store(store)
        monkeypatch.delenv("KBQA_ENTITY_INDEX")
        # a damaged file is rebuilt
        disk_index_path(world_store).write_bytes(b"garbage" * 50)
        rebuilt = EntityIndex.for_store(store, backend="disk")
        assert isinstance(rebuilt, DiskEntityIndex) and len(rebuilt) == len(disk)
        # auto: a large store (its manifest's triple count) gets the on-disk form even without a file
        disk_index_path(world_store).unlink()
        monkeypatch.setattr(entity_index, "DISK_INDEX_TRIPLES", 10)
        assert isinstance(EntityIndex.for_store(store), DiskEntityIndex)
    finally:
        store.close()


def test_stale_disk_index_of_another_store_is_rebuilt(world_store: Path, tmp_path: Path):
    other = tmp_path / "other"
    build_world(tmp_path / "w1", seed=1, size="small")
    build_store(other, [tmp_path / "w1" / "kb.nt"], "nt")
    with OxigraphStore(world_store, cache_size=0) as a, OxigraphStore(other, cache_size=0) as b:
        first = EntityIndex.for_store(a, backend="disk", refresh=True)
        disk_index_path(other).write_bytes(first.path.read_bytes())  # another store's index, copied beside this one
        index = EntityIndex.for_store(b, backend="disk")
        assert index.source == b.identity != first.source
