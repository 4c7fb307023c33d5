"""The ``kbqa`` entry: a tool module that cannot be imported fails loudly instead of vanishing."""

from __future__ import annotations

import pytest

from kbqa_lit import cli


def test_every_tool_command_is_registered() -> None:
    parser = cli.build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # noqa: SLF001
    expected = {"kb", "sexpr", "data", "eval", "lora", "decompose", "retrieve", "pipeline", "compare"}
    assert expected | set(cli.LIGHTNING_SUBCOMMANDS) <= commands


def test_an_unimportable_tool_module_is_an_error_not_a_missing_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "TOOL_MODULES", (*cli.TOOL_MODULES, "no_such_tool"))
    with pytest.raises(ModuleNotFoundError, match="no_such_tool"):
        cli.main(["kb", "--help"])
