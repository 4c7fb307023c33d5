"""Warm processes (kbqa_lit/runner/warm.py): each command forked from one process, results as a fresh process's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from kbqa_lit.cli import main
from kbqa_lit.runner import warm
from kbqa_lit.runner.chain import PipelineError, load_pipeline, run_commands
from kbqa_lit.runner.timings import read_timings

pytestmark = pytest.mark.skipif(not warm.available(), reason="no os.fork here")


def _write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_warm_server_gives_each_command_its_exit_status(tmp_path: Path) -> None:
    with warm.WarmServer(dict(os.environ), preload=()) as server:
        assert server.run(["data", "synth", "--out", str(tmp_path / "world"), "--seed", "0"]) == 0
        assert server.run(["data", "split", "--input", str(tmp_path / "none.jsonl"), "--out", "x"]) == 2
        assert server.run(["no-such-command"]) == 2  # argparse's SystemExit(2)
        assert server.run(["data", "synth", "--out", str(tmp_path / "again"), "--seed", "0"]) == 0  # still serving
    assert (tmp_path / "world" / "test.jsonl").read_bytes() == (tmp_path / "again" / "test.jsonl").read_bytes()


@pytest.mark.slow
def test_warm_and_cold_runs_write_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(warm, "PRELOAD", ("kbqa_lit.cli",))  # the mechanism, without torch's import time
    inner = _write(
        tmp_path / "inner.yaml",
        {
            "vars": {"work": "W"},
            "timings": "${work}/timings.jsonl",
            "steps": [
                {
                    "name": "world",
                    "run": "data synth --out ${work}/world --seed 0",
                    "outputs": "${work}/world/test.jsonl",
                }
            ],
        },
    )
    outer = _write(
        tmp_path / "outer.yaml",
        {
            "vars": {"work": "W"},
            "steps": [  # a nested chain, as the comparison runs each system's: forked from the warm command
                {"name": "nested", "run": f"pipeline {inner} --set work=${{work}}/nested", "quick": "--quick"},
                {"name": "split", "run": "data split --input ${work}/nested/world/test.jsonl --out ${work}/split"},
            ],
        },
    )
    for form, flag in (("warm", "--quick"), ("cold", "--no-warm")):
        assert main(["pipeline", str(outer), "--set", f"work={tmp_path / form}", flag]) == 0
        summary = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
        assert [s["status"] for s in summary["steps"]] == ["ran", "ran"]
        assert [r["step"] for r in read_timings(tmp_path / form / "nested" / "timings.jsonl")] == ["world"]
    for name in ("nested/world/test.jsonl", "split/train.jsonl", "split/test.jsonl"):
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "cold" / name).read_bytes(), name
    # a failing command stops a warm run as a cold one, naming the step and its exit status
    bad = load_pipeline(_write(tmp_path / "bad.yaml", {"steps": [{"name": "broken", "run": "data split --out x"}]}))
    with pytest.raises(PipelineError, match=r"step 'broken' failed \(exit 2\)"):
        run_commands(bad.commands(), warm=True)
