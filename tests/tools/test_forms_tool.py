"""``kbqa extensions``: the named extensions and each system's forms, as text and JSON."""

from __future__ import annotations

import json

from kbqa_lit.cli import run_tools
from kbqa_lit.pipelines.selection.forms import EXTENDED, EXTENSIONS, OFFERED


def test_the_table_lists_every_extension_with_its_systems(capsys) -> None:
    assert run_tools(["extensions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(EXTENSIONS)
    assert lines[1].split()[1] == "coq,fc,keqing,tfs"  # path_fallback: every system


def test_one_system_as_json_and_text(capsys) -> None:
    assert run_tools(["extensions", "--system", "fc", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "system": "fc", "paper": [], "extended": list(EXTENDED["fc"]), "offered": list(OFFERED["fc"])
    }  # fmt: skip
    assert run_tools(["extensions", "--system", "tfs"]) == 0
    out = capsys.readouterr().out
    assert "tfs extended: path_fallback, answer_type" in out and "tfs offers too: path_constraints" in out
    assert run_tools(["extensions", "--system", "keqing"]) == 0
    assert "offers too" not in capsys.readouterr().out  # its preset is all it offers
    assert run_tools(["extensions", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fill_composition"]["systems"] == ["fc"]
