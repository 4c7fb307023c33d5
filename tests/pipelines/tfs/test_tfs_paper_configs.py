"""The paper-named TFS-KBQA configs write schema items as raw Freebase ids (the paper's form)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbqa_lit.lightning_cli import build_cli
from kbqa_lit.pipelines.tfs.members import LEGACY_FORMAT

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "tfs"
PAPER = ("llama2_7b_webqsp", "llama2_13b_webqsp", "llama2_7b_cwq", "llama2_13b_cwq")
TASKS = ("s1", "s2_items", "s2_lf", "s3")


def _printed(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as info:
        build_cli(["fit", *args, "--print_config"], run=True)
    assert info.value.code in (0, None)
    out = capsys.readouterr().out
    return yaml.safe_load(out[out.find("# lightning.pytorch==") :])


@pytest.mark.parametrize("name", PAPER)
def test_paper_configs_set_ids_with_the_comment(name: str) -> None:
    text = (CONFIGS / f"{name}.yaml").read_text()
    assert yaml.safe_load(text)["data"]["init_args"]["schema_form"] == "ids"
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("schema_form:"))
    assert line.split("#", 1)[1].strip() == "the paper's; words: ours (readable phrases)"
    assert "stand-in for the paper's entity linker" in text


@pytest.mark.parametrize("name", PAPER)
def test_paper_configs_parse_with_ids(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Alone and with a task file on top (the task files set no data format of their own)."""
    printed = _printed(["--config", str(CONFIGS / f"{name}.yaml")], capsys)
    assert printed["data"]["init_args"]["schema_form"] == "ids"
    task = TASKS[PAPER.index(name)]
    printed = _printed(
        ["--config", str(CONFIGS / f"{name}.yaml"), "--config", str(CONFIGS / "llama2" / f"{task}.yaml")], capsys
    )
    assert printed["data"]["init_args"]["schema_form"] == "ids" and printed["data"]["init_args"]["tasks"] == [task]


def test_task_files_and_tiny_configs_keep_their_form(capsys: pytest.CaptureFixture[str]) -> None:
    for task in TASKS:
        doc = yaml.safe_load((CONFIGS / "llama2" / f"{task}.yaml").read_text())
        assert "schema_form" not in doc["data"]["init_args"]
    printed = _printed(["--config", str(CONFIGS / "base.yaml"), "--config", str(CONFIGS / "s1.yaml")], capsys)
    assert printed["data"]["init_args"]["schema_form"] == "words"  # the CPU demo: readable phrases
    assert LEGACY_FORMAT["schema_form"] == "words"  # adapters that record no form were trained with words
