"""``configs/coq/pipeline_grailqa.yaml`` and CoQ's steps in ``configs/compare/grailqa.yaml``: what runs, on what."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kbqa_lit.cli import main
from kbqa_lit.runner.chain import load_pipeline
from tests.helpers.shared_data import shared_path

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
CHAIN = CONFIGS / "coq" / "pipeline_grailqa.yaml"
COMPARE = CONFIGS / "compare" / "grailqa.yaml"


def _value(argv: list[str], flag: str) -> str:
    """The flag's last value (the one LightningCLI keeps: a quick override comes after the step's own)."""
    return argv[len(argv) - 1 - argv[::-1].index(flag) + 1]


def _sets(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


def test_the_chain_fits_the_generator_then_answers_in_both_forms() -> None:
    pipe = load_pipeline(CHAIN, {"work": "w", "world": "shared/world", "store": "shared/kb", "epochs": "3"})
    assert set(pipe.vars) >= {"configs", "work", "world", "store", "epochs", "accelerator", "test_file"}
    cmds = pipe.commands()
    assert [c.step for c in cmds] == ["questions", "world", "kb", "generator", "answers", "answers"]
    fit, *answers = cmds[3:]
    assert fit.argv[0] == "fit" and _value(fit.argv, "--trainer.max_epochs") == "3"
    assert [c.binding for c in answers] == [{"form": "paper"}, {"form": "extended"}]
    for cmd in (fit, *answers):
        argv = cmd.argv
        assert _value(argv, "--config") == "configs/coq/grailqa.yaml"
        assert _value(argv, "--trainer.accelerator") == "cpu"
        assert _value(argv, "--data.init_args.train_file") == "shared/world/train.jsonl"
        assert _value(argv, "--data.init_args.val_file") == "shared/world/dev.jsonl"
        assert _value(argv, "--data.init_args.test_file") == "shared/world/test.jsonl"
        # linking over the shared store's names, the same for the fit's validation and both forms
        assert _value(argv, "--data.init_args.linking_store") == "shared/kb"
        assert _value(argv, "--trainer.callbacks.init_args.store") == "shared/kb"
        assert _value(argv, "--data.init_args.data_dir") == "w"  # tokenizer and cache in the chain's own folder
    for cmd in answers:
        form = cmd.binding["form"]
        assert _value(cmd.argv, "--trainer.callbacks.init_args.form") == form
        assert _value(cmd.argv, "--trainer.callbacks.init_args.predictions_dir") == f"w/test_{form}"
        assert _value(cmd.argv, "--ckpt_path") == "w/logs/run/checkpoints/best.ckpt"  # dev's choice, never test's
    gpu = load_pipeline(CHAIN, {"accelerator": "gpu"}).commands()
    assert all(_value(c.argv, "--trainer.accelerator") == "gpu" for c in gpu if c.argv[0] in ("fit", "test"))


def test_the_stage_config_links_entities_and_runs_the_generator_alone() -> None:
    doc = yaml.safe_load((CONFIGS / "coq" / "grailqa.yaml").read_text())
    data = doc["data"]["init_args"]
    assert data["linking"] == "predicted"  # GrailQA brackets no entity: never the dataset's (gold) topic entities
    assert data["patterns"] == "none" and data["use_decomposition"] is False and data["answer_task"] is True
    # GrailQA's masked S-expressions: at most 84 tokens with the trained tokenizer on the comparison's split
    assert data["max_target_length"] >= 84 and doc["model"]["init_args"]["max_target_length"] >= 84
    checkpoint = doc["trainer"]["callbacks"][0]["init_args"]
    assert checkpoint["monitor"] == "val/f1" and checkpoint["filename"] == "best"


def test_quick_runs_are_small() -> None:
    cmds = {c.step: c for c in load_pipeline(CHAIN).commands(quick=True)}
    fit = cmds["generator"].argv
    assert _value(fit, "--trainer.limit_train_batches") == "2" and _value(fit, "--trainer.max_epochs") == "1"
    for step in ("generator", "answers"):  # a few questions, short beams: an untrained model decodes to the limit
        argv = cmds[step].argv
        assert int(_value(argv, "--data.init_args.eval_batch_size")) <= 4
        assert int(_value(argv, "--trainer.callbacks.init_args.max_new_tokens")) <= 16
    assert _value(cmds["answers"].argv, "--trainer.limit_test_batches") == "1"


def test_the_comparison_passes_its_split_store_and_accelerator_to_the_coq_chain() -> None:
    pipe = load_pipeline(COMPARE, {"work": "cw", "accelerator": "gpu"})
    cmds = pipe.commands()
    steps = [c.step for c in cmds]
    assert steps.index("coq") < steps.index("score_coq") < steps.index("report") == len(steps) - 1
    coq = next(c for c in cmds if c.step == "coq")
    assert coq.argv[:2] == ["pipeline", "configs/coq/pipeline_grailqa.yaml"]
    sets = _sets(coq.argv)
    assert sets["work"] == "cw/coq" and sets["world"] == "cw/world" and sets["store"] == "cw/kb"
    assert sets["converted"] == "cw/all.jsonl" and sets["accelerator"] == "gpu"
    assert sets["epochs"] == pipe.vars["coq_epochs"]
    assert "--quick" in next(c for c in pipe.commands(quick=True) if c.step == "coq").argv
    nested = load_pipeline(CHAIN, sets)
    answers = {c.binding["form"]: c for c in nested.commands() if c.step == "answers"}
    scores = [c for c in cmds if c.step == "score_coq"]
    assert [c.binding for c in scores] == [{"form": "paper"}, {"form": "extended"}]
    for score in scores:
        form = score.binding["form"]
        argv = score.argv
        assert _value(argv, "--gold") == "cw/world/test_levels.jsonl"
        written = _value(answers[form].argv, "--trainer.callbacks.init_args.predictions_dir")
        assert (
            _value(argv, "--pred")
            == f"{written}/test_predictions_epoch0.jsonl"
            == f"cw/coq/test_{form}/test_predictions_epoch0.jsonl"
        )
        assert _value(argv, "--run-name") == f"coq-{form}"
        assert _value(argv, "--timing") == str(nested.timings) == "cw/coq/pipeline_timings.jsonl"
        assert _value(argv, "--timing-step") == f"answers[form={form}]"
        params = [argv[i + 1] for i, a in enumerate(argv) if a == "--param"]
        assert params == ["system=coq", f"form={form}", "split=test", "dataset=grailqa", "world=cw/world"]
        assert argv.count("--group-by") == 2 and {"level", "kbcheck"} <= set(argv)
        assert score.outputs == [Path(f"cw/runs/coq-{form}.json")]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_quick_chain_on_a_slice_of_grailqa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    """The chain end to end (quick) on 40 real GrailQA questions and the real star mini-KB: both forms answer."""
    questions = shared_path("grailqa", "grailqa_dev.jsonl")
    kb_file = shared_path("grailqa", "grailqa_dev_star_minikb_triples.tsv")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.chdir(CONFIGS.parent)  # the chain's stage config is relative to the repository root
    sliced = tmp_path / "grailqa_40.jsonl"
    with questions.open() as f:
        sliced.write_text("".join(next(f) for _ in range(40)))
    work = tmp_path / "coq"
    args = ["pipeline", str(CHAIN), "--quick", "--set", f"questions={sliced}", "--set", f"kb_file={kb_file}"]
    assert main([*args, "--set", f"work={work}"]) == 0
    summary = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert [s["status"] for s in summary["steps"]] == ["ran"] * 6
    assert (work / "logs" / "run" / "checkpoints" / "best.ckpt").is_file()
    for form in ("paper", "extended"):
        rows = _rows(work / f"test_{form}" / "test_predictions_epoch0.jsonl")
        assert rows and {r["form"] for r in rows} == {form}
