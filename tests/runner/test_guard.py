"""The run guard: a `kbqa pipeline` killed mid-step re-runs that step; one pipeline at a time per work folder.

Real processes and a real SIGKILL: the step writes its declared output (the world's ``kb.nt``) seconds before it
finishes (a large synthetic world), the pipeline's process group is killed in between, and the next run must not
skip the step although its output exists.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kbqa_lit.cli import main
from kbqa_lit.runner.guard import RUNNING_NAME, PipelineLockedError, RunGuard, guard_folder

DOC = {
    "vars": {"work": "W", "size": "large"},
    "timings": "${work}/timings.jsonl",
    "steps": [
        {
            "name": "world",
            "run": "data synth --out ${work}/world --seed 0 --size ${size}",
            "outputs": ["${work}/world/kb.nt"],
        }
    ],
}


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.yaml"
    path.write_text(yaml.safe_dump(DOC, sort_keys=False))
    return path


def _last_json(capsys: pytest.CaptureFixture) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_step_killed_after_writing_its_output_runs_again(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, work = _pipeline(tmp_path), tmp_path / "w"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbqa_lit", "pipeline", str(path), "--set", f"work={work}", "--no-warm"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (work / "world" / "kb.nt").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the step never wrote its output"
            time.sleep(0.05)
        assert not (work / "world" / "test.jsonl").exists()  # the step is not finished
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    record = json.loads((work / RUNNING_NAME).read_text())
    assert record["running"] == [str((work / "world" / "kb.nt").absolute())]
    assert main(["pipeline", str(path), "--set", f"work={work}", "--dry-run"]) == 0
    assert [c["done"] for c in _last_json(capsys)["commands"]] == [False]  # kb.nt exists, but is not trusted
    assert main(["pipeline", str(path), "--set", f"work={work}", "--set", "size=small"]) == 0
    assert [s["status"] for s in _last_json(capsys)["steps"]] == ["ran"]
    assert (work / "world" / "test.jsonl").is_file() and json.loads((work / RUNNING_NAME).read_text())["running"] == []
    assert main(["pipeline", str(path), "--set", f"work={work}", "--set", "size=small"]) == 0
    assert [s["status"] for s in _last_json(capsys)["steps"]] == ["skipped"]  # finished now: trusted


def test_a_second_pipeline_on_the_same_work_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, work = _pipeline(tmp_path), tmp_path / "w"
    with RunGuard(work):  # the first run holds the folder
        assert main(["pipeline", str(path), "--set", f"work={work}", "--set", "size=small"]) == 2
        err = capsys.readouterr().err
        assert "another kbqa pipeline is running on" in err and str(work) in err
        with pytest.raises(PipelineLockedError), RunGuard(work):
            pass
    assert not (work / "world").exists()  # the refused run wrote nothing
    assert main(["pipeline", str(path), "--set", f"work={work}", "--set", "size=small"]) == 0  # free again


def test_the_guarded_folder(tmp_path: Path) -> None:
    assert guard_folder(tmp_path / "w" / "t.jsonl", []) == tmp_path / "w"
    outputs = [tmp_path / "w" / "a" / "x.json", tmp_path / "w" / "b" / "y.json"]
    assert guard_folder(None, outputs) == tmp_path / "w"
    assert guard_folder(None, []) is None and guard_folder(None, [Path("/x.json"), Path("/y/z.json")]) is None
