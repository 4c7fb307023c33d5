"""The shipped CoQ pipeline runs end to end (quick mode) and each stage writes its contract fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import main

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


@pytest.mark.slow
def test_synthetic_pipeline_quick_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths of the stage configs' defaults stay in tmp_path
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("WANDB_MODE", "offline")
    pipeline = str(CONFIGS / "coq" / "pipeline_synthetic.yaml")
    work = tmp_path / "coq"
    args = ["pipeline", pipeline, "--quick", "--set", f"configs={CONFIGS}", "--set", f"work={work}"]
    assert main(args) == 0
    summary = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert [s["status"] for s in summary["steps"]] == ["ran"] * len(summary["steps"])
    assert summary["steps"][-1]["step"] == "answers"

    rows = [json.loads(line) for line in (work / "patterns" / "test.jsonl").read_text().splitlines()]
    world = (work / "world" / "test.jsonl").read_text().splitlines()
    assert len(rows) == len(world)  # every test question went through every stage
    for row in rows:
        meta = row["meta"]
        assert meta["decomposition_status"] == "gold" and "#1" in row["decomposition"]
        assert len(meta["relation_candidates"]) == 10 and meta["entity_candidates"]
        assert set(meta["entity_relations"]) == set(meta["entity_candidates"])
        assert "refined_relations" in meta and "refined_entities" in meta and isinstance(meta["patterns"], list)
    # the test step wrote its execution-guided predictions
    for form in ("paper", "extended"):  # one test run per form, its rows naming it
        preds = list((work / "generator" / "logs" / f"test_{form}").rglob("test_predictions*.jsonl"))
        assert preds and preds[0].read_text().strip(), form
        assert {json.loads(line)["form"] for line in preds[0].read_text().splitlines()} == {form}

    # resuming: every step with outputs is done; only the output-less test step would run again
    assert main([*args, "--dry-run"]) == 0
    dry = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert [c["step"] for c in dry["commands"] if not c["done"]] == ["answers", "answers"]
    assert not (tmp_path / "outputs").exists()  # everything went to ${work}
