"""Issue 31, scenario 4: a damaged execution cache file (truncated, overwritten, one byte changed).

Each damage is made on a real SQLite file written by :class:`ExecutionCache`. What must hold: the
damage is reported in one line naming the file, and no damaged entry is returned as a result.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.store import ExecutionResult
from kbqa_lit.kb.store.cache import ExecutionCache

ROWS = 2000


def _answer(i: int) -> list[str]:
    return [f"answer-{i:05d}-" + "x" * 40]


def _written(path: Path) -> Path:
    """A cache file of ``ROWS`` entries, its write-ahead log folded in (as after a clean exit)."""
    cache = ExecutionCache(path)
    for i in range(ROWS):
        cache.put("kb", f"q{i}", ExecutionResult(_answer(i)))
    cache.close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def test_truncated_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _written(tmp_path / "c.sqlite")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError) as info:
        ExecutionCache(path)
    message = str(info.value)
    assert str(path) in message and "malformed" in message and "\n" not in message


def test_overwritten_pages_are_reported_once_and_never_returned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _written(tmp_path / "c.sqlite")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = b"\xff" * 8192
    path.write_bytes(bytes(data))
    cache = ExecutionCache(path)  # the header is intact: SQLite opens it
    with caplog.at_level(logging.WARNING, logger="kbqa_lit.kb.store.cache"):
        found = {i: cache.get("kb", f"q{i}") for i in range(ROWS)}  # never raises
        assert not cache.put("kb", "new", ExecutionResult(["y"]))  # a damaged file is not written to
    assert all(row is None or row[0] == _answer(i) for i, row in found.items())
    assert cache.broken is not None and str(path) in cache.broken
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and str(path) in warnings[0] and "damaged" in warnings[0]


def test_changed_answer_byte_fails_the_row_checksum(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _written(tmp_path / "c.sqlite")
    data = path.read_bytes()
    at = data.index(b"answer-01234-")
    path.write_bytes(data[:at] + b"answer-01235-" + data[at + 13 :])  # still a well-formed row
    cache = ExecutionCache(path)
    with caplog.at_level(logging.WARNING, logger="kbqa_lit.kb.store.cache"):
        assert cache.get("kb", "q1234") is None  # before: the other question's answer came back
        assert cache.get("kb", "q1233") == (_answer(1233), True, None)
    assert [str(path) in r.getMessage() and "checksum" in r.getMessage() for r in caplog.records] == [True]
    assert cache.put("kb", "q1234", ExecutionResult(_answer(1234)))  # run again and rewritten
    assert cache.get("kb", "q1234") == (_answer(1234), True, None)


def test_rows_of_an_older_cache_without_checksums_are_run_again(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, key BLOB NOT NULL UNIQUE, "
            "store TEXT NOT NULL, answers TEXT NOT NULL, ok INTEGER NOT NULL, error TEXT, created REAL NOT NULL)"
        )
        key = ExecutionCache._key("kb", "q")
        conn.execute(
            "INSERT INTO results (key, store, answers, ok, error, created) VALUES (?, 'kb', '[\"a\"]', 1, NULL, 0)",
            (key,),
        )
    cache = ExecutionCache(path)
    assert cache.get("kb", "q") is None
    assert cache.put("kb", "q", ExecutionResult(["a"]))
    assert cache.get("kb", "q") == (["a"], True, None)
