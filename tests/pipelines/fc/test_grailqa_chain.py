"""``configs/fc/pipeline_grailqa*.yaml``: the question file and the KB file are variables every step follows."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbqa_lit.lightning_cli import build_cli
from kbqa_lit.runner.chain import load_pipeline

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def _printed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    args = [a for a in argv if a != "--ckpt_path" and not a.endswith("last.ckpt")]
    with pytest.raises(SystemExit) as exc:
        build_cli([*args, "--print_config"], run=True)
    out = capsys.readouterr()
    assert exc.value.code in (0, None), out.err[-2000:]
    return yaml.safe_load(out.out[max(0, out.out.find("# lightning.pytorch==")) :])


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _sets(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


def test_training_chain_follows_its_question_and_kb_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    questions, kb_file, work = tmp_path / "q.jsonl", tmp_path / "kb.tsv", tmp_path / "work"
    overrides = {"questions": str(questions), "kb_file": str(kb_file), "work": str(work), "configs": str(CONFIGS)}
    listed = load_pipeline(CONFIGS / "fc" / "pipeline_grailqa.yaml", overrides).commands()
    commands = {c.step: c for c in listed}
    assert _value(commands["questions"].argv, "--input") == str(questions)
    assert commands["kb"].argv[-1] == str(kb_file) and _value(commands["kb"].argv, "--format") == "tsv"
    detect = [_sets(c.argv) for c in listed if c.step == "detect"]  # one command per split
    assert [d["files"] for d in detect] == [f"[{work}/world/{split}.jsonl]" for split in ("train", "dev", "test")]
    assert {d["kb.store"] for d in detect} == {f"{work}/kb"}
    printed = _printed(commands["answers"].argv, capsys)
    data, callback = printed["data"]["init_args"], printed["trainer"]["callbacks"][-1]["init_args"]
    assert (data["data_dir"], data["test_file"]) == (f"{work}/world", f"{work}/detected/test.jsonl")
    assert (callback["store"], callback["build_from"], callback["constrained"]) == (f"{work}/kb", [], "datamodule")
    nb = _sets(commands["detect_neighbours"].argv)
    assert nb["kb.store"] == f"{work}/kb" and nb["skeleton.train_files"] == f"[{work}/world/train.jsonl]"
    fill = _sets(commands["fill"].argv)
    assert (fill["file"], fill["kb.store"], fill["form"]) == (
        f"{work}/detected_nb/test.jsonl",
        f"{work}/kb",
        "extended",
    )
    paper = _sets(commands["paper"].argv)  # the paper form: the composer's choice from the answers step
    assert (paper["form"], paper["file"]) == ("paper", f"{work}/detected/test.jsonl")
    assert paper["generated"] == f"{work}/composer/logs/test/test_predictions_epoch0.jsonl"
    assert _value(commands["scores"].argv, "--gold") == f"{work}/world/test_levels.jsonl"


def test_evaluation_chain_reads_trained_parts_and_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions, kb_file, parts, work = tmp_path / "q.jsonl", tmp_path / "kb.tsv", tmp_path / "parts", tmp_path / "ev"
    overrides = {
        "questions": str(questions),
        "kb_file": str(kb_file),
        "parts": str(parts),
        "work": str(work),
        "configs": str(CONFIGS),
    }
    commands = {c.step: c for c in load_pipeline(CONFIGS / "fc" / "pipeline_grailqa_eval.yaml", overrides).commands()}
    steps = ["questions", "kb", "detect", "answers", "paper", "detect_neighbours", "fill", "levels", "scores"]
    assert list(commands) == steps
    assert _value(commands["questions"].argv, "--input") == str(questions) and commands["kb"].argv[-1] == str(kb_file)
    sets = _sets(commands["detect"].argv)
    assert sets["kb.store"] == f"{work}/kb" and sets["relation_extractor"].startswith(str(parts))
    assert _value(commands["answers"].argv, "--ckpt_path") == f"{parts}/composer/logs/run/checkpoints/last.ckpt"
    printed = _printed(commands["answers"].argv, capsys)
    assert printed["data"]["init_args"]["test_file"] == f"{work}/detected/test.jsonl"
    assert printed["trainer"]["callbacks"][-1]["init_args"]["store"] == f"{work}/kb"
    nb = _sets(commands["detect_neighbours"].argv)
    assert nb["kb.store"] == f"{work}/kb" and nb["skeleton.train_files"] == f"[{parts}/world/train.jsonl]"
    assert _sets(commands["fill"].argv)["kb.store"] == f"{work}/kb"
    assert _value(commands["levels"].argv, "--train") == f"{parts}/world/train.jsonl"
