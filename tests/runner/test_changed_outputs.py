"""Issue 31, scenario 4: a finished step's output truncated or changed on disk, then ``kbqa pipeline`` again.

The step is a real ``kbqa sexpr to-sparql --batch`` child process; its output file is damaged between
runs. What must hold: the rerun reports the file in one line and runs the step again (the output
becomes whole again), and skips it once the file is as the step wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kbqa_lit.cli import main
from kbqa_lit.runner.guard import OUTPUTS_NAME

EXPR = "(JOIN (R film.film.directed_by) m.0a)"


def _pipeline(tmp_path: Path) -> Path:
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps({"qid": f"q{i}", "s_expression": EXPR}) + "\n" for i in range(50)))
    doc = {
        "vars": {"work": str(tmp_path / "w")},
        "timings": "${work}/timings.jsonl",
        "steps": [
            {
                "name": "sparql",
                "run": f"sexpr to-sparql --batch {batch} --out ${{work}}/out.jsonl",
                "outputs": ["${work}/out.jsonl"],
            }
        ],
    }
    path = tmp_path / "pipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _statuses(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], list[str]]:
    assert main(["pipeline", str(path), "--no-warm"]) == 0
    captured = capsys.readouterr()
    steps = json.loads(captured.out.strip().splitlines()[-1])["steps"]
    return [s["status"] for s in steps], [line for line in captured.err.splitlines() if "changed since" in line]


def test_a_damaged_output_is_reported_and_its_step_runs_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, out = _pipeline(tmp_path), tmp_path / "w" / "out.jsonl"
    assert _statuses(path, capsys) == (["ran"], [])
    whole = out.read_bytes()
    assert str(out.absolute()) in json.loads((tmp_path / "w" / OUTPUTS_NAME).read_text())

    out.write_bytes(whole[: len(whole) // 2])  # half-written: before, the step was skipped
    statuses, lines = _statuses(path, capsys)
    assert statuses == ["ran"] and out.read_bytes() == whole
    assert len(lines) == 1 and str(out) in lines[0] and "running step 'sparql' again" in lines[0]

    out.write_bytes(whole.replace(b"m.0a", b"m.0b", 1))  # same size, other content
    statuses, lines = _statuses(path, capsys)
    assert statuses == ["ran"] and out.read_bytes() == whole
    assert len(lines) == 1 and "same size, other SHA-256" in lines[0]

    assert _statuses(path, capsys) == (["skipped"], [])  # as the step wrote it: trusted
