"""The in-memory LRU and the on-disk SQLite execution cache, including several processes at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.store import ExecutionResult, OxigraphStore
from kbqa_lit.kb.store.cache import ExecutionCache, LRUCache
from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"
QUERY = f"SELECT ?x WHERE {{ <{NS}m.a> <{NS}film.film.directed_by> ?x }}"


def test_lru_evicts_least_recently_used() -> None:
    lru = LRUCache(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "b" is now the least recently used
    lru.put("c", 3)
    assert lru.get("b") is None and lru.get("a") == 1 and lru.get("c") == 3
    assert (lru.hits, lru.misses, len(lru)) == (3, 1, 2)
    off = LRUCache(0)
    off.put("a", 1)
    assert off.get("a") is None and len(off) == 0
    with pytest.raises(ValueError):
        LRUCache(-1)


def test_roundtrip_keyed_by_store_and_query(tmp_path: Path) -> None:
    cache = ExecutionCache(tmp_path / "c.sqlite")
    assert cache.get("kb1", QUERY) is None
    assert cache.put("kb1", QUERY, ExecutionResult(["m.x", 'naïve "quoted"\n'], True, None, 0.1))
    assert cache.get("kb1", QUERY) == (["m.x", 'naïve "quoted"\n'], True, None)
    assert cache.get("kb2", QUERY) is None and cache.get("kb1", QUERY + " ") is None
    assert (cache.hits, cache.misses) == (1, 3)
    assert len(cache) == 1
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_only_ok_and_definitive_errors_are_stored(tmp_path: Path) -> None:
    cache = ExecutionCache(tmp_path / "c.sqlite")
    timeout = ExecutionResult([], False, "timeout: the query ran longer than 1 s")
    assert not cache.put("kb", "q1", timeout)
    assert cache.get("kb", "q1") is None
    syntax = ExecutionResult([], False, "SPARQL syntax error: ...")
    assert cache.put("kb", "q2", syntax, definitive=True)
    assert cache.get("kb", "q2") == ([], False, "SPARQL syntax error: ...")


def test_size_bound_evicts_oldest(tmp_path: Path) -> None:
    cache = ExecutionCache(tmp_path / "c.sqlite", max_entries=3)
    for i in range(5):
        cache.put("kb", f"q{i}", ExecutionResult([str(i)]))
    assert len(cache) == 3
    assert cache.get("kb", "q0") is None and cache.get("kb", "q1") is None
    assert cache.get("kb", "q4") == (["4"], True, None)
    cache.clear("other")
    assert len(cache) == 3
    cache.clear()
    assert len(cache) == 0


def test_retries_while_another_connection_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ExecutionCache(path, busy_timeout=0.05, retries=10)
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, lambda: blocker.execute("COMMIT"))
    release.start()
    start = time.monotonic()
    assert cache.put("kb", "q", ExecutionResult(["a"]))  # waits for the lock instead of failing
    assert time.monotonic() - start >= 0.2
    release.join()
    blocker.close()
    assert cache.get("kb", "q") == (["a"], True, None)


def test_unusable_path_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "not-a-db").write_text("this is not sqlite " * 100)
    with pytest.raises(StoreError, match="cannot open execution cache"):
        ExecutionCache(tmp_path / "not-a-db")


def _writer(path: str, worker: int, n: int) -> int:
    cache = ExecutionCache(path, max_entries=10_000)
    for i in range(n):
        cache.put("kb", f"q{worker}-{i}", ExecutionResult([f"{worker}:{i}"]))
        cache.get("kb", f"q{(worker + 1) % 4}-{i}")
    return n


def _store_query(store_dir: str, cache_path: str) -> tuple[bool, list[str]]:
    with OxigraphStore(store_dir, disk_cache=ExecutionCache(cache_path)) as store:
        result = store.execute(QUERY)
    return result.cached, result.answers


def test_concurrent_writers_in_several_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ExecutionCache(path)  # create the file (and WAL mode) once
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        done = pool.starmap(_writer, [(path, w, 150) for w in range(4)])
    assert done == [150] * 4
    cache = ExecutionCache(path)
    assert len(cache) == 600
    assert cache.get("kb", "q3-149") == (["3:149"], True, None)


def test_disk_cache_hit_across_processes(tmp_path: Path) -> None:
    (tmp_path / "kb.nt").write_text(f"<{NS}m.a> <{NS}film.film.directed_by> <{NS}m.d> .\n")
    build_store(tmp_path / "store", [tmp_path / "kb.nt"], "nt")
    cache_path = str(tmp_path / "cache.sqlite")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        first = pool.apply(_store_query, (str(tmp_path / "store"), cache_path))
    with ctx.Pool(1) as pool:
        second = pool.apply(_store_query, (str(tmp_path / "store"), cache_path))
    assert first == (False, ["m.d"]) and second == (True, ["m.d"])
