"""Issue 31, scenario 5: ``kbqa sexpr run --batch --out`` when the output cannot be written.

A real ``kbqa`` process writes its output on a full disk (a 64 KiB tmpfs: ``ENOSPC``; needs root
to mount, else skipped) or under a file-size limit (``RLIMIT_FSIZE``: ``EFBIG``; no privilege, so
it runs everywhere). What must hold: status 2, one line naming the output file, no traceback, no
file left under the output's name, and the same command complete once there is room.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbqa_lit.kb.store.loaders import build_store
from tests.helpers.small_disk import SmallDisk, file_size_limit, mounted_small_disk

NS = "http://rdf.freebase.com/ns/"
ROWS = 1000  # ≈ 120 KB of output


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A store of ``ROWS`` facts and a batch asking each of them: ``(store, batch file)``."""
    root = tmp_path_factory.mktemp("sexpr_full")
    lines = [f"<{NS}m.e{i}> <{NS}film.film.directed_by> <{NS}m.d{i % 3}> .\n" for i in range(ROWS)]
    (root / "kb.nt").write_text("".join(lines))
    build_store(root / "store", [root / "kb.nt"], "nt")
    rows = [{"qid": f"q{i}", "s_expression": f"(JOIN (R film.film.directed_by) m.e{i})"} for i in range(ROWS)]
    (root / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "store", root / "in.jsonl"


def _run(batch: tuple[Path, Path], out: Path, preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess:
    store, rows = batch
    cmd = [sys.executable, "-m", "kbqa_lit", "sexpr", "run", "--store", str(store), "--batch", str(rows)]
    return subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120, preexec_fn=preexec)


def _assert_one_line(done: subprocess.CompletedProcess, out: Path, reason: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"kbqa sexpr: error: cannot write {out}: {reason} "
        "(nothing was written to it; a previous version, if any, is as it was)"
    ]


def _assert_complete(out: Path) -> None:
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in got] == [f"q{i}" for i in range(ROWS)]
    assert [r["answers"] for r in got] == [[f"m.d{i % 3}"] for i in range(ROWS)]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk", "64k")


def test_full_disk_is_one_line_and_the_rerun_completes(batch: tuple[Path, Path], disk: SmallDisk) -> None:
    out = disk.path / "out.jsonl"
    _assert_one_line(_run(batch, out), out, "No space left on device")  # before: an OSError traceback
    assert disk.files() == []
    disk.resize("1m")
    assert _run(batch, out).returncode == 0
    _assert_complete(out)


def test_file_size_limit_is_one_line_without_privileges(batch: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "out.jsonl"
    _assert_one_line(_run(batch, out, file_size_limit(64 * 1024)), out, "File too large")
    assert list(out.parent.iterdir()) == []
    assert _run(batch, out).returncode == 0
    _assert_complete(out)
