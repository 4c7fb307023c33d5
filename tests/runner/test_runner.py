from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kbqa_lit.cli import main
from kbqa_lit.errors import UserInputError
from kbqa_lit.runner.chain import PipelineError, load_pipeline, run_commands, select_commands
from kbqa_lit.runner.timings import read_timings, step_seconds

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "pipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


DOC = {
    "vars": {"work": "W", "seed": 0},
    "steps": [
        {
            "name": "world",
            "run": "data synth --out ${work}/world --seed ${seed}",
            "outputs": ["${work}/world/train.jsonl"],
        },
        {
            "name": "split",
            "foreach": {"split": ["dev", "test"]},
            "run": "data split --input ${work}/world/${split}.jsonl --out ${work}/resplit/${split}",
            "quick": "--seed 1",
            "outputs": ["${work}/resplit/${split}/train.jsonl"],
        },
    ],
}


def test_commands_substitute_vars_foreach_and_quick(tmp_path: Path) -> None:
    pipe = load_pipeline(_write(tmp_path, DOC), {"work": "/x"})
    cmds = pipe.commands()
    assert [c.argv for c in cmds] == [
        ["data", "synth", "--out", "/x/world", "--seed", "0"],
        ["data", "split", "--input", "/x/world/dev.jsonl", "--out", "/x/resplit/dev"],
        ["data", "split", "--input", "/x/world/test.jsonl", "--out", "/x/resplit/test"],
    ]
    assert cmds[2].outputs == [Path("/x/resplit/test/train.jsonl")] and cmds[2].binding == {"split": "test"}
    assert pipe.commands(quick=True)[1].argv[-2:] == ["--seed", "1"]
    names = [s.name for s in pipe.steps]
    assert [c.step for c in select_commands(cmds, names, start="split")] == ["split", "split"]
    assert [c.step for c in select_commands(cmds, names, only="world")] == ["world"]
    with pytest.raises(UserInputError, match="no step named 'nope'"):
        select_commands(cmds, names, only="nope")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"steps": []}, "non-empty 'steps'"),
        ({"steps": [{"name": "a"}]}, r"steps\[0\] \(a\): 'run'"),
        ({"steps": [{"name": "a", "run": "x", "outptus": []}]}, "unknown keys"),
        ({"steps": [{"name": "a", "run": "x"}, {"name": "a", "run": "y"}]}, "duplicate step names"),
        ({"steps": [{"name": "a", "run": "x ${nope}"}]}, r"step 'a' uses \$\{nope\}"),
    ],
)
def test_malformed_pipelines_are_named(tmp_path: Path, doc: dict, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        load_pipeline(_write(tmp_path, doc)).commands()


def test_vars_may_name_vars_resolved_after_set(tmp_path: Path) -> None:
    doc = {
        "vars": {"work": "W", "world": "${work}/world", "test_file": "${world}/test.jsonl", "money": "$$5"},
        "steps": [{"name": "a", "run": "eval --gold ${test_file} --note ${money}", "outputs": "${world}/x"}],
    }
    path = _write(tmp_path, doc)
    assert load_pipeline(path).commands()[0].argv == ["eval", "--gold", "W/world/test.jsonl", "--note", "$$5"]
    moved = load_pipeline(path, {"work": "/other"})
    assert moved.vars["test_file"] == "/other/world/test.jsonl" and moved.vars["money"] == "$$5"
    assert moved.commands()[0].outputs == [Path("/other/world/x")]
    pinned = load_pipeline(path, {"test_file": "${work}/held_out.jsonl", "work": "/w"})
    assert pinned.commands()[0].argv[2] == "/w/held_out.jsonl"
    circle = {"vars": {"a": "${b}/x", "b": "${a}"}, "steps": [{"name": "s", "run": "eval"}]}
    with pytest.raises(UserInputError, match=r"circle: a -> b -> a"):
        load_pipeline(_write(tmp_path, circle))
    unknown = {"vars": {"a": "${nope}/x"}, "steps": [{"name": "s", "run": "eval"}]}
    with pytest.raises(UserInputError, match=r"vars.a uses \$\{nope\}"):
        load_pipeline(_write(tmp_path, unknown))


def test_shipped_chains_move_their_test_file_with_work() -> None:
    for name in (
        "keqing/pipeline_metaqa.yaml",
        "keqing/pipeline_pathquestion.yaml",
        "tfs/pipeline_pathquestion.yaml",
        "tfs/pipeline_metaqa.yaml",
        "coq/pipeline_generator_metaqa.yaml",
        "coq/pipeline_generator_pathquestion.yaml",
    ):
        pipe = load_pipeline(CONFIGS / name, {"work": "/elsewhere"})
        assert pipe.vars["test_file"] == "/elsewhere/world/test.jsonl", name
        assert all(not arg.startswith("outputs/") for cmd in pipe.commands() for arg in cmd.argv), name
        other = load_pipeline(CONFIGS / name, {"test_file": "/data/official_test.jsonl"}).commands()
        assert any(
            arg == "/data/official_test.jsonl" or "=/data/official_test.jsonl" in arg for c in other for arg in c.argv
        )


def test_unknown_override_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="--set wrok"):
        load_pipeline(_write(tmp_path, DOC), {"wrok": "/x"})


@pytest.mark.slow
def test_run_skips_finished_steps_and_names_the_failing_one(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _write(tmp_path, DOC)
    work = str(tmp_path / "w")
    assert main(["pipeline", str(path), "--set", f"work={work}", "--only", "world"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [s["status"] for s in first["steps"]] == ["ran"]
    assert (tmp_path / "w" / "world" / "train.jsonl").is_file()
    # resuming: the finished step is skipped, and a dry run shows it as done
    assert main(["pipeline", str(path), "--set", f"work={work}", "--only", "world"]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [s["status"] for s in again["steps"]] == ["skipped"]
    assert main(["pipeline", str(path), "--set", f"work={work}", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert [c["done"] for c in dry["commands"]] == [True, False, False]
    # a failing command stops the run, naming the step
    bad = load_pipeline(
        _write(tmp_path, {"steps": [{"name": "broken", "run": "data split --input /nonexistent.jsonl --out x"}]})
    )
    with pytest.raises(PipelineError, match="step 'broken' failed"):
        run_commands(bad.commands())


def test_shipped_pipeline_files_parse() -> None:
    files = sorted(p for system in ("coq", "keqing", "fc", "tfs") for p in CONFIGS.glob(f"{system}/pipeline_*.yaml"))
    files += sorted(CONFIGS.glob("compare/*.yaml"))
    # configs/tfs/pipeline*.yaml are also `kbqa lora pipeline` configs (no steps): only `kbqa pipeline` files here
    files = [p for p in files if "steps" in (yaml.safe_load(p.read_text()) or {})]
    assert any(p.parent.name == "tfs" for p in files) or not (CONFIGS / "tfs" / "pipeline_synthetic.yaml").exists()
    for path in files:
        pipe = load_pipeline(path)
        cmds = pipe.commands(quick=True)
        assert cmds, path
        for cmd in cmds:
            assert cmd.argv[0] in {
                "data",
                "kb",
                "decompose",
                "retrieve",
                "fit",
                "test",
                "predict",
                "validate",
                "eval",
                "keqing",
                "lora",
                "fc",
                "pipeline",
                "compare",
            }


def test_finished_steps_append_their_seconds_to_the_timings_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    doc = {**DOC, "timings": "${work}/timings.jsonl"}
    path = _write(tmp_path, doc)
    work = tmp_path / "w"
    assert main(["pipeline", str(path), "--set", f"work={work}", "--only", "world"]) == 0
    assert main(["pipeline", str(path), "--set", f"work={work}", "--only", "world"]) == 0  # skipped: no record
    capsys.readouterr()
    records = read_timings(work / "timings.jsonl")
    assert [r["step"] for r in records] == ["world"]
    assert records[0]["seconds"] > 0 and records[0]["command"].startswith("kbqa data synth")
    assert step_seconds(work / "timings.jsonl", ["world"]) == records[0]["seconds"]


def test_timings_must_be_a_path(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="'timings' must be a file path"):
        load_pipeline(_write(tmp_path, {**DOC, "timings": ["a"]}))
    with pytest.raises(UserInputError, match="unknown top-level keys"):
        load_pipeline(_write(tmp_path, {**DOC, "timing": "x"}))
