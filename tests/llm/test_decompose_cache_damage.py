"""Issue 31, scenario 4: a damaged LLM response cache (truncated, overwritten, one byte changed).

The damage is made on a real SQLite file written by :class:`DecompositionCache`. What must hold:
reported in one line naming the file, and no damaged output returned as the model's.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.llm.response_cache import DecompositionCache, prompt_key

ROWS = 2000
PROMPTS = [f"prompt {i}" for i in range(ROWS)]


def _output(i: int) -> str:
    return f"output-{i:05d}-" + "y" * 50


def _written(path: Path) -> Path:
    """A cache file of ``ROWS`` outputs, its write-ahead log folded in (as after a clean exit)."""
    with DecompositionCache(path) as cache:
        cache.put_many("b", {p: _output(i) for i, p in enumerate(PROMPTS)})
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def test_truncated_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _written(tmp_path / "d.sqlite")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserInputError) as info:
        DecompositionCache(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_overwritten_pages_are_refused_in_one_line(tmp_path: Path) -> None:
    path = _written(tmp_path / "d.sqlite")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = b"\xff" * 8192
    path.write_bytes(bytes(data))
    cache = DecompositionCache(path)  # the header is intact: SQLite opens it
    with pytest.raises(UserInputError) as info:  # before: sqlite3.DatabaseError, a traceback
        cache.get_many("b", PROMPTS)
    message = str(info.value)
    assert str(path) in message and "damaged" in message and "\n" not in message


def test_changed_output_byte_fails_the_row_checksum(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _written(tmp_path / "d.sqlite")
    data = path.read_bytes()
    at = data.index(b"output-01234-")
    path.write_bytes(data[:at] + b"output-01235-" + data[at + 13 :])
    with DecompositionCache(path) as cache, caplog.at_level(logging.WARNING, logger="kbqa_lit.llm.response_cache"):
        found = cache.get_many("b", PROMPTS)
        assert "prompt 1234" not in found  # before: another prompt's output came back
        assert all(found[p] == _output(i) for i, p in enumerate(PROMPTS) if p != "prompt 1234")
        cache.put_many("b", {"prompt 1234": _output(1234)})  # asked again, rewritten
        assert cache.get("b", "prompt 1234") == _output(1234)
    assert [str(path) in r.getMessage() and "checksum" in r.getMessage() for r in caplog.records] == [True]


def test_outputs_of_an_older_cache_are_kept_with_their_checksums(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE outputs (backend TEXT NOT NULL, prompt_sha256 TEXT NOT NULL, prompt TEXT NOT NULL, "
            "output TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (backend, prompt_sha256))"
        )
        conn.execute("INSERT INTO outputs VALUES ('b', ?, 'p', 'paid for', 0)", (prompt_key("p"),))
    with DecompositionCache(path) as cache:
        assert cache.get("b", "p") == "paid for"  # no second request to the model
