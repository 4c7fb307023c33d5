"""``kbqa compare --rows``: the table of runs keyed by run parameters, its text forms and its chart data (no I/O
but the log files' modification times)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.plotting import PAIRS, paired_colors
from kbqa_lit.tracking.rows import default_table_metrics, f1_by_level, level_order, parse_keys, rows_table
from kbqa_lit.tracking.runs import RunRecord
from kbqa_lit.tracking.table_text import TextTable, format_cell, markdown, rows_text_table, short_headers
from tests.tracking.system_runs import system_config, system_metrics


def record(tmp_path: Path, system: str, form: str, mtime: float = 1_700_000_000.0, **summary: float) -> RunRecord:
    """A comparison run whose metrics.csv was written at ``mtime``."""
    path = tmp_path / f"{system}-{form}-{mtime}"
    path.mkdir()
    (path / "metrics.csv").write_text("step\n0\n", encoding="utf-8")
    os.utime(path / "metrics.csv", (mtime, mtime))
    metrics = {**system_metrics(system, form), **summary}
    return RunRecord(
        name=f"{system}-{form}", kind="csv", path=path, params=system_config(system, form), summary=metrics
    )


@pytest.fixture
def runs(tmp_path: Path) -> list[RunRecord]:
    return [record(tmp_path, s, f) for s in ("tfs", "coq", "keqing") for f in ("paper", "extended")]


def test_a_later_grouping_keys_f1_is_a_default_column_after_the_levels(tmp_path: Path) -> None:
    runs = [record(tmp_path, "fc", "paper", **{"test/kbcheck/exact/f1": 0.6, "test/kbcheck/missing/f1": 0.1})]
    metrics = default_table_metrics(runs)
    assert metrics[-2:] == ["test/kbcheck/exact/f1", "test/kbcheck/missing/f1"]
    assert "test/zero-shot/f1" in metrics and "exact" not in [m.split("/")[1] for m in metrics]  # not a level
    assert level_order("i.i.d.") < level_order("compositional") < level_order("zero-shot")  # GrailQA's spelling


def test_one_sorted_row_per_run_with_the_default_columns(runs: list[RunRecord]) -> None:
    metrics = default_table_metrics(runs)
    assert metrics == [
        "test/f1",
        "test/hit1",
        "test/executable",
        "test/questions_per_s",
        "test/iid/f1",
        "test/compositional/f1",
        "test/zero-shot/f1",
    ]
    table = rows_table(runs, parse_keys(["system,form"]), metrics)
    assert [row.label for row in table.rows] == [
        "coq · extended",
        "coq · paper",
        "keqing · extended",
        "keqing · paper",
        "tfs · extended",
        "tfs · paper",
    ]
    assert table.rows[1].values["test/f1"] == pytest.approx(0.4) and table.replaced == []
    doc = table.to_json()
    assert doc["columns"] == ["system", "form", *metrics]
    assert doc["rows"][0]["values"]["system"] == "coq" and doc["rows"][0]["run"] == "coq-extended"


def test_a_run_without_a_row_key_is_an_error_naming_both(tmp_path: Path, runs: list[RunRecord]) -> None:
    lost = RunRecord(name="lost-run", kind="wandb", path=tmp_path / "lost", params={"system": "fc"})
    with pytest.raises(UserInputError, match=r"--rows form: run 'lost-run' .* has no 'form'"):
        rows_table([*runs, lost], ["system", "form"], ["test/f1"])
    with pytest.raises(UserInputError, match="--rows sytem: no run has the hyper-parameter 'sytem'"):
        rows_table(runs, ["sytem"], ["test/f1"])
    with pytest.raises(UserInputError, match="at least one key"):
        rows_table(runs, parse_keys([" , "]), ["test/f1"])


def test_the_newest_of_two_runs_with_one_key_is_kept(tmp_path: Path, runs: list[RunRecord]) -> None:
    rerun = record(tmp_path, "coq", "paper", mtime=1_800_000_000.0, **{"test/f1": 0.99})
    rerun.name = "coq-paper (re-run)"
    table = rows_table([rerun, *runs], ["system", "form"], ["test/f1"])
    assert len(table.rows) == len(runs)
    (coq_paper,) = (row for row in table.rows if row.label == "coq · paper")
    assert coq_paper.run is rerun and coq_paper.values["test/f1"] == 0.99
    assert table.replaced == [
        {"key": {"system": "coq", "form": "paper"}, "kept": "coq-paper (re-run)", "dropped": ["coq-paper"]}
    ]


def test_markdown_and_terminal_cells(runs: list[RunRecord]) -> None:
    table = rows_table(runs, ["system", "form"], ["test/f1", "test/questions_per_s", "test/n"])
    text = markdown(rows_text_table(table))
    lines = text.splitlines()
    assert lines[0] == "| system | form | test/f1 | test/questions_per_s | test/n |"
    assert lines[1] == "|---|---|---:|---:|---:|"
    assert lines[2] == "| coq | extended | 0.600 | 6.00 | 30 |" and len(lines) == 2 + len(runs)
    assert short_headers(rows_text_table(table))[0] == ["system", "form", "f1", "questions_per_s", "n"]
    assert format_cell("test/f1", None) == "—" and format_cell("x", "a|b") == "a|b"
    assert markdown(TextTable("t", ["k"], [["a|b"]], [False])) == "| k |\n|---|\n| a\\|b |\n"


def test_f1_by_level_and_paired_colours(tmp_path: Path, runs: list[RunRecord]) -> None:
    table = rows_table(runs, ["system", "form"], ["test/f1"])
    categories, bars = f1_by_level(table)
    assert categories == ["all", "iid", "compositional", "zero-shot"]
    assert bars[0] == ("coq · extended", pytest.approx([0.6, 0.7, 0.6, 0.5]))
    assert paired_colors([row.key for row in table.rows])[:2] == list(PAIRS[0])  # coq: dark, light
    assert paired_colors([("coq",), ("tfs",)]) is None
    no_levels = RunRecord(name="x", kind="csv", path=tmp_path / "x", params={"system": "x"}, summary={"test/f1": 0.1})
    assert f1_by_level(rows_table([no_levels], ["system"], []))[0] == ["all"]
