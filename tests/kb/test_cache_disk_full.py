"""Issue 31, scenario 5: the execution cache (SQLite) on a full disk (a real 128 KiB tmpfs; needs root to mount).

A full disk is not damage: SQLite rolls the write back. What must hold: one warning naming the
file (before the fix: one per write, 1,494 for 1,500 queries), every answer right, the rows stored
before still returned, and a later run with room storing again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.store import ExecutionResult
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.kb.store.oxigraph import OxigraphStore
from tests.helpers.small_disk import SmallDisk, mounted_small_disk

NS = "http://rdf.freebase.com/ns/"
ROWS = 1500


def _answer(i: int) -> list[str]:
    return [f"answer-{i:05d}-" + "x" * 40]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk", "128k")


def test_full_cache_warns_once_keeps_its_rows_and_grows_again(
    disk: SmallDisk, caplog: pytest.LogCaptureFixture
) -> None:
    path = disk.path / "cache.sqlite"
    cache = ExecutionCache(path)
    with caplog.at_level(logging.WARNING):
        stored = [cache.put("kb", f"q{i}", ExecutionResult(_answer(i))) for i in range(ROWS)]
    kept = stored.index(False)
    assert 0 < kept and not any(stored[kept:])  # full once, then nothing more is tried
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0] and "disk is full" in warnings[0]
    assert cache.get("kb", "q0") == (_answer(0), True, None)
    assert cache.get("kb", f"q{kept - 1}") == (_answer(kept - 1), True, None)
    assert cache.get("kb", f"q{kept}") is None
    cache.close()

    disk.resize("16m")  # the next run has room (a WAL of up to 1,000 pages, 4 MiB, and the rows)
    again = ExecutionCache(path)
    assert all(again.put("kb", f"q{i}", ExecutionResult(_answer(i))) for i in range(kept, ROWS))
    assert [again.get("kb", f"q{i}") for i in (0, kept, ROWS - 1)] == [
        (_answer(i), True, None) for i in (0, kept, ROWS - 1)
    ]
    again.close()


def test_store_on_a_full_cache_answers_everything(
    disk: SmallDisk, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = [f"<{NS}m.e{i}> <{NS}film.film.directed_by> <{NS}m.d{i % 3}> .\n" for i in range(ROWS)]
    (tmp_path / "kb.nt").write_text("".join(lines))
    build_store(tmp_path / "store", [tmp_path / "kb.nt"], "nt")
    queries = [f"SELECT ?x WHERE {{ <{NS}m.e{i}> <{NS}film.film.directed_by> ?x }}" for i in range(ROWS)]
    with (
        caplog.at_level(logging.WARNING),
        OxigraphStore(tmp_path / "store", disk_cache=ExecutionCache(disk.path / "c.sqlite")) as store,
    ):
        results = store.execute_many(queries)
    assert [r.answers for r in results] == [[f"m.d{i % 3}"] for i in range(ROWS)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cannot grow" in warnings[0], warnings[:3]


def test_opening_on_a_disk_with_no_room_says_so_in_one_line(disk: SmallDisk) -> None:
    path = disk.path / "cache.sqlite"
    cache = ExecutionCache(path)
    cache.put("kb", "q0", ExecutionResult(_answer(0)))
    cache.close()
    with (disk.path / "filler").open("wb", buffering=0) as filler, pytest.raises(OSError):
        while True:  # take every block left
            filler.write(b"x" * 4096)
    with pytest.raises(StoreError) as info:  # before: "disk I/O error" and nothing about room
        ExecutionCache(path)
    assert str(info.value).startswith(f"cannot open execution cache {path}: ")
    assert str(info.value).endswith("(the disk holding it has 0 KiB free)")
    (disk.path / "filler").unlink()  # room again: the stored row is there
    assert ExecutionCache(path).get("kb", "q0") == (_answer(0), True, None)
