"""``configs/compare/{metaqa,pathquestion,grailqa}.yaml``, dry runs: the systems' chains take the comparison's one split
and store, every score step reads what a chain's answering steps write, and times steps the chain has."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.runner.chain import Command, load_pipeline
from kbqa_lit.runner.timings import parse_step_spec

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
#: Each comparison's chains (its steps running `kbqa pipeline`) and its score steps' systems.
COMPARISONS = {
    "metaqa.yaml": {
        "coq": "coq/pipeline_metaqa.yaml",
        "keqing": "keqing/pipeline_metaqa.yaml",
        "tfs": "tfs/pipeline_metaqa.yaml",
    },
    "pathquestion.yaml": {
        "coq": "coq/pipeline_pathquestion.yaml",
        "keqing": "keqing/pipeline_pathquestion.yaml",
        "tfs": "tfs/pipeline_pathquestion.yaml",
    },
    "grailqa.yaml": {"fc": "fc/pipeline_grailqa.yaml", "coq": "coq/pipeline_grailqa.yaml"},
}
#: The comparison's own steps that make the shared files (convert, split, store; GrailQA's levels).
SHARED_STEPS = ("questions", "world", "kb", "levels")


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def _writes(argv: list[str], outputs: list[str]) -> set[str]:
    """The files a chain command writes: its declared outputs, ``--out``, ``--set out=``, a test run's predictions."""
    files = set(outputs)
    if "--out" in argv:
        files.add(_value(argv, "--out"))
    files |= {s.split("=", 1)[1] for s in _values(argv, "--set") if s.startswith("out=")}
    if argv[0] == "test":
        if "--trainer.callbacks.init_args.predictions_dir" in argv:
            folder = _value(argv, "--trainer.callbacks.init_args.predictions_dir")
        else:
            save_dir = _value(argv, "--trainer.logger.init_args.save_dir")
            folder = f"{save_dir}/logs/{_value(argv, '--trainer.logger.init_args.version')}"
        files.add(f"{folder}/test_predictions_epoch0.jsonl")
    return files


def _dry_run(chain: Command, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    """``kbqa pipeline <chain> --dry-run --set ...`` as the comparison's step runs it, in this process."""
    capsys.readouterr()
    assert main([*chain.argv, "--dry-run"]) == 0
    return json.loads(capsys.readouterr().out)["commands"]


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_the_chains_answer_the_shared_split_and_the_scores_read_their_answers(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CONFIGS.parent)  # the chains' stage configs are relative to the repository root
    work = tmp_path / "compare"
    pipe = load_pipeline(CONFIGS / "compare" / name, {"work": str(work)})
    commands = pipe.commands()
    assert pipe.timings == work / "pipeline_timings.jsonl"
    # the shared files exist, as after the comparison's own first steps
    for cmd in commands:
        if cmd.step in SHARED_STEPS:
            assert cmd.outputs, cmd.step
            for out in cmd.outputs:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.touch()
    shared = {str(o) for c in commands if c.step in SHARED_STEPS for o in c.outputs}
    chains = {c.step: c for c in commands if c.argv[0] == "pipeline"}
    assert {s: c.argv[1] for s, c in chains.items()} == {s: f"configs/{rel}" for s, rel in COMPARISONS[name].items()}
    for system, chain in chains.items():
        sets = dict(s.split("=", 1) for s in _values(chain.argv, "--set"))
        assert sets["world"] == str(work / "world") and sets["store"] == str(work / "kb")
        assert sets["converted"] == str(work / "all.jsonl") and sets["work"] == str(work / system)
        rows = _dry_run(chain, capsys)
        # no chain command makes a split or store of its own: each is one of the comparison's, already done
        for row in rows:
            tool = row["command"].split()[1:3]
            if tool[0] in ("data", "kb") or tool == ["fc", "levels"]:
                assert row["done"] and set(row["outputs"]) <= shared, (system, row["command"])
            assert f"{work}/{system}/world" not in row["command"] and f"{work}/{system}/kb" not in row["command"]
        nested = load_pipeline(CONFIGS.parent / chain.argv[1], sets)
        listed = nested.commands()
        assert ["kbqa " + shlex.join(c.argv) for c in listed] == [r["command"] for r in rows]
        scores = [c for c in commands if c.step.startswith(f"score_{system}")]
        assert len(scores) == 2
        for score in scores:
            argv = score.argv
            assert _value(argv, "--gold") in shared
            assert _value(argv, "--timing") == str(nested.timings) == f"{work}/{system}/pipeline_timings.jsonl"
            timed = []
            for spec in _values(argv, "--timing-step"):
                step, binding = parse_step_spec(spec)
                found = [c for c in listed if c.step == step and binding.items() <= c.binding.items()]
                assert found, f"{name}: {score.step} times {spec}, which {chain.argv[1]} does not have"
                timed += found
            # the predictions scored are written by a timed (answering) step after the chain's last training
            pred = _value(argv, "--pred")
            writers = [c for c in timed if pred in _writes(c.argv, [str(o) for o in c.outputs])]
            assert writers, f"{name}: {score.step} reads {pred}, which no timed step of {chain.argv[1]} writes"
            last_fit = max(i for i, c in enumerate(listed) if c.argv[0] == "fit")  # answering follows training
            assert all(listed.index(c) > last_fit for c in writers), (pred, [c.step for c in writers])
            form = next(p.split("=", 1)[1] for p in _values(argv, "--param") if p.startswith("form="))
            assert _value(argv, "--run-name") == f"{system}-{form}"
    assert [c.step for c in commands][-1] == "report"


def test_every_real_set_chain_answers_in_both_forms() -> None:
    """Each chain of a comparison writes one prediction file per form, each asked for that form."""
    for rel in (
        "coq/pipeline_metaqa.yaml",
        "coq/pipeline_pathquestion.yaml",
        "keqing/pipeline_metaqa.yaml",
        "keqing/pipeline_pathquestion.yaml",
        "tfs/pipeline_pathquestion.yaml",
        "tfs/pipeline_metaqa.yaml",
        "coq/pipeline_generator_metaqa.yaml",
        "coq/pipeline_generator_pathquestion.yaml",
        "coq/pipeline_grailqa.yaml",
    ):
        answers = [c for c in load_pipeline(CONFIGS / rel).commands() if c.step == "answers"]
        assert [c.binding for c in answers] == [{"form": "paper"}, {"form": "extended"}], rel
        for cmd in answers:
            form = cmd.binding["form"]
            asked = _values(cmd.argv, "--trainer.callbacks.init_args.form") or [
                s.split("=", 1)[1] for s in _values(cmd.argv, "--set") if s.startswith("form=")
            ]
            assert asked == [form] and all(form in f for f in _writes(cmd.argv, [])), rel


@pytest.mark.parametrize("chain", ["pipeline_pathquestion.yaml", "pipeline_metaqa.yaml"])
def test_coq_real_set_chains_decompose_with_the_trained_stand_in(chain: str) -> None:
    """The paper's step 1 runs: rows from the gold chains, the decomposer trained, every split decomposed by it."""
    commands = load_pipeline(CONFIGS / "coq" / chain, {"work": "/w"}).commands()
    by_step = {c.step: c for c in commands}
    rows = [c for c in commands if c.step == "decomposer_rows"]
    assert [c.binding["split"] for c in rows] == ["train", "dev"]  # never the test split's gold paths
    assert all(_value(c.argv, "--chains-from") == "/w/world/train.jsonl" for c in rows)
    assert by_step["decomposer"].argv[0] == "fit"
    decomposed = [c for c in commands if c.step == "decompose"]
    assert [c.binding["split"] for c in decomposed] == ["train", "dev", "test"]
    for cmd in decomposed:
        assert "--variant" not in cmd.argv and "backend.init_args.model=/w/decomposer/merged" in cmd.argv
    assert _value(by_step["retriever"].argv, "--data.init_args.data_dir") == "/w/decomposed"
    steps = [c.step for c in commands]
    assert steps.index("merge") < steps.index("decompose") < steps.index("retriever")
