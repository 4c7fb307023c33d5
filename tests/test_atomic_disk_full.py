"""Issue 31, scenario 5: the atomic writers on a full disk (a real tmpfs of 64 KiB).

What must hold: a :class:`FileWriteError` naming the target (a one-line ``KBQAError`` that is
also an ``OSError`` with ``ENOSPC``), the previous file unchanged, no temporary file left, and
the same write succeeding once there is room.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.errors import FileWriteError, KBQAError
from tests.helpers.small_disk import SmallDisk, mounted_small_disk

ROWS = [{"qid": f"q{i}", "answers": ["m.x" * 20]} for i in range(2000)]  # ≈ 160 KB of JSON lines


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk", "64k")


def test_full_disk_keeps_the_old_file_and_names_the_target(disk: SmallDisk) -> None:
    out = disk.path / "preds.jsonl"
    out.write_text('{"qid": "old"}\n', encoding="utf-8")
    with pytest.raises(FileWriteError) as info:
        write_jsonl_atomic(ROWS, out)
    error = info.value
    assert isinstance(error, KBQAError) and isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert str(error).startswith(f"cannot write {out}: No space left on device (") and "\n" not in str(error)
    assert out.read_text(encoding="utf-8") == '{"qid": "old"}\n'
    assert disk.files() == ["preds.jsonl"]  # the temporary file is gone

    disk.resize("1m")  # room again: the same write completes
    assert write_jsonl_atomic(ROWS, out) == len(ROWS)
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == ROWS
    assert disk.files() == ["preds.jsonl"]
