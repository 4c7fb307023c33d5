"""The comparison runs every system in both forms on one world (quick mode) and reports them side by side.

It also stands for the systems' own quick runs (CoQ's and Keqing's chains run inside it, unchanged) and checks
what each stage wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.tracking.discover import find_runs

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SYSTEMS = ("coq", "tfs", "fc", "keqing")
FORMS = ("paper", "extended")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _check_coq(work: Path, world: Path) -> None:
    assert _rows(
        work / "decomposer" / "train_rows.jsonl"
    )  # the decomposer's rows, from the gold training decompositions
    rows = _rows(work / "patterns" / "test.jsonl")
    assert len(rows) == len(_rows(world / "test.jsonl"))  # every test question went through every stage
    for row in rows:
        meta = row["meta"]
        # the trained decomposer's decomposition (after two training steps mostly unparseable), never the gold
        assert meta["decomposition_status"] in ("ok", "failed") and meta["decomposition_variant"] == "placeholders"
        assert len(meta["relation_candidates"]) == 10 and meta["entity_candidates"]
        assert set(meta["entity_relations"]) == set(meta["entity_candidates"])
        assert "refined_relations" in meta and "refined_entities" in meta and isinstance(meta["patterns"], list)
    for form in FORMS:  # one test run per form, its rows naming it
        preds = list((work / "generator" / "logs" / f"test_{form}").rglob("test_predictions*.jsonl"))
        assert preds and {row["form"] for row in _rows(preds[0])} == {form}


def _check_keqing(work: Path) -> None:
    rows = _rows(work / "test_predictions_paper.jsonl")
    assert len(rows) == 8 and {r["form"] for r in rows} == {"paper"}
    extended = _rows(work / "test_predictions_extended.jsonl")
    assert {(r["form"], tuple(r["extensions"])) for r in extended} == {
        ("extended", ("constrained_decoding", "path_fallback", "path_constraints", "answer_type"))
    }
    # two training steps write no decomposition yet: every failure is recorded, none crashes the run
    assert all(r["failure"] in (None, "decomposition", "retrieval", "reasoning") for r in rows)
    assert all("raw" in r["decomposition"] and r["response"].startswith("Question: ") for r in rows)
    assert (work / "decomposer" / "merged" / "config.json").is_file()


def _check_fc(work: Path) -> None:
    assert {r["form"] for r in _rows(work / "paper" / "test.jsonl")} == {"paper"}
    assert {r["form"] for r in _rows(work / "composed" / "test.jsonl")} == {"extended"}


@pytest.mark.slow
def test_quick_comparison_of_four_systems_in_two_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    monkeypatch.chdir(tmp_path)  # relative defaults of the stage configs stay in tmp_path
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("WANDB_MODE", "offline")
    work = tmp_path / "cmp"
    args = ["pipeline", str(CONFIGS / "compare" / "synthetic.yaml"), "--quick"]
    args += ["--set", f"configs={CONFIGS}", "--set", f"work={work}"]
    assert main(args) == 0
    summary = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert all(s["status"] == "ran" for s in summary["steps"])
    assert [s["step"] for s in summary["steps"]][:6] == ["world", "kb", *SYSTEMS]

    world = work / "world"
    for system in SYSTEMS:  # one world for all: no chain built its own
        assert not (work / system / "world").exists() and not (work / system / "kb").exists()
    _check_coq(work / "coq", world)
    _check_keqing(work / "keqing")
    _check_fc(work / "fc")

    runs = find_runs([work / "runs"])  # one W&B offline run per system × form, in one group
    assert sorted((r.params["system"], r.params["form"]) for r in runs) == sorted(
        (s, f) for s in SYSTEMS for f in FORMS
    )
    for run in runs:
        assert run.params["group"] == "compare-synthetic" and run.params["split"] == "test"
        assert (run.params["extensions"] == "none") == (run.params["form"] == "paper")
        assert 0.0 <= run.summary["test/f1"] <= 1.0 and run.summary["test/questions_per_s"] > 0
        assert {"test/iid/f1", "test/compositional/f1", "test/zero-shot/f1"} <= set(run.summary)
    report = work / "report"
    assert (report / "comparison.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (report / "table.md").read_text()
    assert all(f"| {s} | {f} |" in table for s in SYSTEMS for f in FORMS), table
    assert "<table" in (report / "report.html").read_text()
    assert "Plotly.newPlot" in (report / "comparison.html").read_text() and (report / "plotly.min.js").is_file()

    # the group's folder alone rebuilds the same table
    assert (
        main(["compare", str(work / "runs"), "--rows", "system,form", "--json", "--out", str(tmp_path / "r.html")]) == 0
    )
    again = json.loads(capfd.readouterr().out)
    assert len(again["table"]["rows"]) == 8
    # resuming: nothing is left to run
    assert main([*args, "--dry-run"]) == 0
    dry = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert [c["step"] for c in dry["commands"] if not c["done"]] == ["report"]
    assert not (tmp_path / "outputs").exists()  # everything went to ${work}
