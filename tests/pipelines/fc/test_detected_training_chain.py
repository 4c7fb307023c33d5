"""The FC chains train the composer on a detected training file, and its test step reads the same one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kbqa_lit.runner.chain import load_pipeline
from tests.pipelines.fc.test_grailqa_chain import _printed

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def _data(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    return _printed(argv, capsys)["data"]["init_args"]


def _sets(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


def _train_file(data: dict) -> str:
    """The training file as the datamodule finds it: a relative path under data_dir (the config's) first."""
    return os.path.normpath(os.path.join(data["data_dir"], data["train_file"]))


@pytest.mark.parametrize("name", ["pipeline_synthetic.yaml", "pipeline_grailqa.yaml"])
def test_the_composer_trains_and_tests_on_the_detected_training_file(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    every = load_pipeline(CONFIGS / "fc" / name, {"work": str(work)}).commands()
    commands = {c.step: c for c in every}
    detects = [c for c in every if c.step == "detect"]  # one command for all files, or one per split
    files = ",".join(_sets(c.argv)["files"].strip("[]") for c in detects)
    assert files.startswith(f"{work}/world/train.jsonl,")
    assert {_sets(c.argv)["out_dir"] for c in detects} == {f"{work}/detected"}
    # an older run's dev/test-only detection reruns
    assert work / "detected" / "train.jsonl" in [o for c in detects for o in c.outputs]
    fit = _data(commands["composer"].argv, capsys)
    assert fit["train_file"] == f"{work}/detected/train.jsonl"
    assert (fit["input_format"], fit["train_components"]) == ("paper", "detected")
    test = _data(commands["answers"].argv, capsys)  # the BPE tokenizer is trained on the training rows again
    assert _train_file(test) == f"{work}/detected/train.jsonl"


def test_the_evaluation_chain_reads_the_trained_chains_detected_training_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = tmp_path / "parts"
    pipe = load_pipeline(CONFIGS / "fc" / "pipeline_grailqa_eval.yaml", {"parts": str(parts), "work": str(tmp_path)})
    answers = next(c for c in pipe.commands() if c.step == "answers")
    assert _train_file(_data(answers.argv, capsys)) == f"{parts}/detected/train.jsonl"


@pytest.mark.parametrize("name", ["composer.yaml", "composer_t5base.yaml"])
def test_the_composer_configs_train_on_detection_beside_the_detected_dev_file(name: str) -> None:
    data = yaml.safe_load((CONFIGS / "fc" / name).read_text())["data"]["init_args"]
    assert (data["input_format"], data["train_components"]) == ("paper", "detected")
    assert Path(_train_file(data)).parent == Path(data["val_file"]).parent
