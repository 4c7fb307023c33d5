"""Atomic writes: the target is replaced whole or left as it was; no temporary file stays behind."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kbqa_lit.atomic import atomic_writer, write_json_atomic, write_jsonl_atomic, write_text_atomic


def test_each_writer_replaces_the_target_whole(tmp_path: Path) -> None:
    out = tmp_path / "new" / "rows.jsonl"  # the folder is created
    assert write_jsonl_atomic(({"i": i, "q": "é"} for i in range(3)), out) == 3
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()][2] == {"i": 2, "q": "é"}
    assert json.loads(write_json_atomic(tmp_path / "r.json", {"p": Path("x")}).read_text()) == {"p": "x"}
    assert write_text_atomic(tmp_path / "r.html", "<p>").read_text() == "<p>"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["r.html", "r.json", "rows.jsonl"]


def test_an_error_midway_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    out = tmp_path / "preds.jsonl"
    out.write_text("old\n", encoding="utf-8")

    def rows():
        yield {"i": 0}
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError, match="killed mid-write"):
        write_jsonl_atomic(rows(), out)
    assert out.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["preds.jsonl"]
    with pytest.raises(KeyboardInterrupt), atomic_writer(out) as handle:
        handle.write("half")
        raise KeyboardInterrupt
    assert out.read_text(encoding="utf-8") == "old\n" and len(list(tmp_path.iterdir())) == 1


def test_written_files_get_the_permissions_open_gives(tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        path = write_text_atomic(tmp_path / "preds.jsonl", "x")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o640  # not mkstemp's 0o600
