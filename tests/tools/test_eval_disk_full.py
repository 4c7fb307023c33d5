"""Issue 31, scenario 5: ``kbqa eval --per-question`` when the disk is full (a real 64 KiB tmpfs; needs root to mount).

What must hold: status 2, one line naming the per-question file, no summary printed as if the run
had finished, the previous per-question file unchanged, no temporary file; the rerun with room completes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit import cli
from kbqa_lit.data.schema import write_jsonl
from tests.helpers.small_disk import SmallDisk, mounted_small_disk
from tests.helpers.toy import born_in

QUESTIONS = 1500  # ≈ 300 KB of per-question rows


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk", "64k")


def test_full_disk_is_one_line_and_the_old_scores_stay(
    tmp_path: Path, disk: SmallDisk, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = born_in(QUESTIONS)
    write_jsonl(examples, tmp_path / "gold.jsonl")
    preds = "".join(json.dumps({"qid": ex.qid, "answers": [a.id for a in ex.answers]}) + "\n" for ex in examples)
    (tmp_path / "pred.jsonl").write_text(preds, encoding="utf-8")
    out = disk.path / "per_question.jsonl"
    out.write_text('{"qid": "old"}\n', encoding="utf-8")
    args = ["eval", "--gold", str(tmp_path / "gold.jsonl"), "--pred", str(tmp_path / "pred.jsonl")]

    assert cli.main([*args, "--per-question", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no summary of a run whose output was not written
    assert captured.err.strip().splitlines() == [
        f"kbqa eval: error: cannot write {out}: No space left on device "
        "(nothing was written to it; a previous version, if any, is as it was)"
    ]
    assert out.read_text(encoding="utf-8") == '{"qid": "old"}\n' and disk.files() == ["per_question.jsonl"]

    disk.resize("2m")
    assert cli.main([*args, "--per-question", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == 1.0
    assert len(out.read_text(encoding="utf-8").splitlines()) == QUESTIONS
