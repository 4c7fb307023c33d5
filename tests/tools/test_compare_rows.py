"""``kbqa compare --rows system,form`` on a folder of comparison runs (W&B offline and CSV, summary metrics only):
the terminal table, ``--json``, ``--markdown``, ``--png``, the report's first section, duplicates, a missing key."""

from __future__ import annotations

import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from tests.tracking.png_checks import png_size
from tests.tracking.system_runs import log_csv_run, log_wandb_run, system_config, system_metrics, wandb_offline

WANDB_SYSTEMS = ("coq", "keqing")
CSV_SYSTEMS = ("fc", "tfs")
FORMS = ("paper", "extended")
LABELS = [f"{s} · {f}" for s in sorted((*WANDB_SYSTEMS, *CSV_SYSTEMS)) for f in sorted(FORMS)]


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder: W&B offline runs of coq and keqing, CSV runs of fc and tfs, in both forms."""
    root = tmp_path_factory.mktemp("comparison")
    with wandb_offline(root):
        for system in WANDB_SYSTEMS:
            for form in FORMS:
                log_wandb_run(root, f"{system}-{form}", system_config(system, form), system_metrics(system, form))
    for system in CSV_SYSTEMS:
        for form in FORMS:
            log_csv_run(root, f"{system}-{form}", system_config(system, form), system_metrics(system, form))
    return root


@pytest.fixture(scope="module")
def compared(runs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    """``--rows system,form --png --markdown --json``: (summary, html, output folder)."""
    out = tmp_path_factory.mktemp("out")
    args = ["compare", str(runs_root), "--rows", "system,form", "--out", str(out / "report.html")]
    args += ["--png", str(out / "png"), "--markdown", str(out / "table.md"), "--json"]
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stdout", buf)
        assert main(args) == 0
    return json.loads(buf.getvalue()), (out / "report.html").read_text(encoding="utf-8"), out


def test_json_table_has_one_sorted_row_per_system_and_form(compared) -> None:
    summary, _, _ = compared
    table = summary["table"]
    assert table["keys"] == ["system", "form"] and table["replaced"] == []
    assert table["metrics"] == [
        "test/f1",
        "test/hit1",
        "test/executable",
        "test/questions_per_s",
        "test/iid/f1",
        "test/compositional/f1",
        "test/zero-shot/f1",
    ]
    assert [row["label"] for row in table["rows"]] == LABELS
    for row in table["rows"]:
        expected = system_metrics(row["values"]["system"], row["values"]["form"])
        assert {m: row["values"][m] for m in table["metrics"]} == pytest.approx(
            {m: expected[m] for m in table["metrics"]}
        )
    kinds = {
        row["values"]["system"]: next(r["kind"] for r in summary["runs"] if r["name"] == row["run"])
        for row in table["rows"]
    }
    assert kinds == {"coq": "wandb", "fc": "csv", "keqing": "wandb", "tfs": "csv"}


def test_markdown_table(compared) -> None:
    summary, _, out = compared
    lines = (out / "table.md").read_text(encoding="utf-8").splitlines()
    assert summary["markdown"] == str(out / "table.md")
    assert lines[0].startswith("| system | form | test/f1 | test/hit1 |") and lines[1].startswith("|---|---|---:|")
    assert [" · ".join(line.split(" | ")[:2]).lstrip("| ") for line in lines[2:]] == LABELS
    assert lines[2].startswith("| coq | extended | 0.600 | 0.550 | 0.900 | 6.00 | 0.700 |")


def test_png_comparison_chart_and_no_learning_curves(compared) -> None:
    summary, _, out = compared
    assert summary["png"]["comparison"] == str(out / "png" / "comparison.png")
    assert summary["png"]["learning_curves"] is None and summary["png"]["groups"] is None
    assert "no run logged val/f1, val/hit1 per epoch" in summary["png"]["skipped"]["learning_curves.png"]
    width, height = png_size(out / "png" / "comparison.png")
    assert width >= 800 and height >= 300
    assert [p.name for p in (out / "png").iterdir()] == ["comparison.png"]


def test_report_starts_with_the_table_and_embeds_the_chart(compared) -> None:
    summary, html, _ = compared
    assert html.index("<h2>Comparison by system, form</h2>") < html.index("<h2>Final metrics</h2>")
    (table,) = re.findall(r"<table class='rows'.*?</table>", html, re.S)
    assert table.count("<tr>") == 1 + len(LABELS)
    coq = system_metrics("coq", "extended")["test/f1"]
    assert f"data-metric='test/f1' data-value='{coq!r}'>0.600<" in table
    (svg,) = re.findall(r'<svg [^>]*data-chart="comparison".*?</svg>', html, re.S)
    texts = {"".join(t.itertext()) for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
    assert set(LABELS) | {"all", "iid", "compositional", "zero-shot"} <= texts
    assert "<img" not in html and "<script" not in html


def test_terminal_table_by_default(runs_root: Path, tmp_path: Path, capsys) -> None:
    args = [str(runs_root), "--rows", "system", "--rows", "form", "--metrics", "test/f1,test/zero-shot/f1"]
    assert main(["compare", *args, "--out", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert not out.lstrip().startswith("{")
    assert "8 rows by system, form" in out and "zero-shot/f1" in out and f"report: {tmp_path / 'r.html'}" in out
    rows = [line for line in out.splitlines() if re.search(r"\b(paper|extended)\b", line)]
    assert [" · ".join(re.findall(r"[a-z]+", line)[:2]) for line in rows] == LABELS
    assert re.search(r"coq\s*│\s*extended\s*│\s*0\.600\s*│\s*0\.500", rows[0]), rows[0]


def test_a_rerun_replaces_the_older_run_and_says_so(runs_root: Path, tmp_path: Path, capsys) -> None:
    rerun = log_csv_run(tmp_path / "rerun", "coq-paper-again", system_config("coq", "paper"), {"test/f1": 0.123})
    old = log_csv_run(tmp_path / "old", "coq-paper-old", system_config("coq", "paper"), {"test/f1": 0.9}, 1_000_000.0)
    args = ["compare", str(runs_root), str(rerun), str(old), "--rows", "system,form", "--json"]
    assert main([*args, "--out", str(tmp_path / "r.html")]) == 0
    captured = capsys.readouterr()
    table = json.loads(captured.out)["table"]
    (row,) = (r for r in table["rows"] if r["label"] == "coq · paper")
    assert row["values"]["test/f1"] == 0.123 and row["run"] == "cmp/coq-paper-again"
    (replaced,) = table["replaced"]
    assert replaced["kept"] == "cmp/coq-paper-again" and len(replaced["dropped"]) == 2
    assert "several runs for system=coq, form=paper: kept the newest, 'cmp/coq-paper-again'" in captured.err


def test_a_run_without_a_row_key_is_an_error(runs_root: Path, tmp_path: Path, capsys) -> None:
    stray = log_csv_run(tmp_path / "stray", "no-form", {"system": "coq"}, {"test/f1": 0.5})
    out = tmp_path / "r.html"
    assert main(["compare", str(runs_root), str(stray), "--rows", "system,form", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--rows form: run 'cmp/no-form'" in err and "has no 'form'" in err
    assert not out.exists()


def test_without_matplotlib_compare_names_the_extra(runs_root: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    out = tmp_path / "r.html"
    assert main(["compare", str(runs_root), "--out", str(out)]) == 2
    assert "pip install -e '.[plots]'" in capsys.readouterr().err
    assert not out.exists()
