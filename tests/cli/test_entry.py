"""The ``kbqa`` entry: a tool module that cannot be imported fails loudly instead of vanishing; the
project's own errors under ``kbqa fit|validate|test|predict`` are one line on stderr and status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbqa_lit import cli
from kbqa_lit.errors import UserInputError, find_kbqa_error


def test_every_tool_command_is_registered() -> None:
    parser = cli.build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # noqa: SLF001
    expected = {"kb", "sexpr", "data", "eval", "lora", "decompose", "retrieve", "pipeline", "compare", "extensions"}
    assert expected | set(cli.LIGHTNING_SUBCOMMANDS) <= commands


def test_an_unimportable_tool_module_is_an_error_not_a_missing_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "TOOL_MODULES", (*cli.TOOL_MODULES, "no_such_tool"))
    with pytest.raises(ModuleNotFoundError, match="no_such_tool"):
        cli.main(["kb", "--help"])


def _empty_data_config(tmp_path: Path) -> Path:
    """A generator config whose data_dir is empty (no synthetic world to build, no files)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    doc = {
        "model": {
            "class_path": "kbqa_lit.modules.multitask_generator.MultitaskGenerator",
            "init_args": {"model_config": {"d_model": 32, "d_ff": 64, "num_layers": 1, "num_heads": 2, "d_kv": 16}},
        },
        "data": {
            "class_path": "kbqa_lit.datamodules.coq.generation.GenerationDataModule",
            "init_args": {"data_dir": str(empty), "synthetic_seed": None},
        },
        "trainer": {"accelerator": "cpu", "logger": False, "default_root_dir": str(tmp_path / "run")},
    }
    path = tmp_path / "empty.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["fit", "validate"])
def test_a_kbqa_error_under_lightning_cli_is_one_line_and_status_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main([command, "--config", str(_empty_data_config(tmp_path))])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 2
    assert last == (
        f"kbqa {command}: error: no examples to train a tokenizer on; set tokenizer_name_or_path or the files"
    )


def test_lightning_configuration_errors_are_left_to_lightning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:  # jsonargparse's own usage error, as before
        cli.main(["fit", "--config", str(_empty_data_config(tmp_path)), "--trainer.max_epochs", "many"])
    assert exc.value.code == 2
    assert "max_epochs" in capsys.readouterr().err


def test_find_kbqa_error_follows_explicit_causes_only() -> None:
    cause = UserInputError("bad option")
    try:
        raise ValueError("wrapped") from cause
    except ValueError as wrapped:
        assert find_kbqa_error(wrapped) is cause
    try:
        try:
            raise UserInputError("handled")
        except UserInputError:
            raise RuntimeError("a bug while handling it") from None
    except RuntimeError as unrelated:
        assert find_kbqa_error(unrelated) is None
