"""``kbqa compare --rows system,form --interactive FILE``: the plotly chart of the comparison table (CSV runs)."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.tracking.discover import find_runs
from kbqa_lit.tracking.interactive import PLOTLY_JS, levels_figure
from kbqa_lit.tracking.rows import rows_table
from tests.tracking.system_runs import LEVELS, log_csv_run, system_config, system_metrics

pytest.importorskip("plotly", reason="the plots extra is not installed (pip install kbqa_lit[plots])")

SYSTEMS = ("fc", "keqing")
FORMS = ("paper", "extended")


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CSV runs of two systems in two forms; keqing also logs Hits@1 per level."""
    root = tmp_path_factory.mktemp("runs")
    for system in SYSTEMS:
        for form in FORMS:
            metrics = system_metrics(system, form)
            if system == "keqing":
                metrics.update({f"test/{level}/hit1": metrics[f"test/{level}/f1"] - 0.01 for level in LEVELS})
            log_csv_run(root, f"{system}-{form}", system_config(system, form), metrics)
    return root


def test_figure_has_one_trace_per_metric_and_row_and_a_menu_that_shows_one_metric(runs_root: Path) -> None:
    table = rows_table(find_runs([runs_root]), ["system", "form"], ["test/f1", "test/hit1"])
    fig = levels_figure(table)
    labels = [row.label for row in table.rows]
    assert labels == ["fc · extended", "fc · paper", "keqing · extended", "keqing · paper"]
    # F1, Hits@1 and executable: 4 rows each
    assert [t.name for t in fig.data] == labels * 3
    f1 = fig.data[:4]
    assert all(t.visible for t in f1) and not any(t.visible for t in fig.data[4:])
    assert list(f1[2].x) == ["all", *LEVELS]
    expected = system_metrics("keqing", "extended")
    assert list(f1[2].y) == [expected["test/f1"], *(expected[f"test/{level}/f1"] for level in LEVELS)]
    hit1 = fig.data[4:8]
    # Hits@1 per level only where logged: fc rows have "all" only, so their level bars are empty
    assert list(hit1[0].x) == ["all", *LEVELS] and list(hit1[0].y)[1:] == [None, None, None]
    assert hit1[2].y[1] == pytest.approx(expected["test/iid/f1"] - 0.01)
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["F1", "Hits@1", "executable"]
    assert menu.buttons[1].args[0]["visible"] == [False] * 4 + [True] * 4 + [False] * 4
    # rows of one system share a hue, the paper form lighter
    assert f1[0].marker.color != f1[1].marker.color and f1[0].marker.color != f1[2].marker.color
    assert f1[2].customdata[0] == table.rows[2].run.name


def test_cli_writes_the_chart_the_library_beside_it_and_links_it_from_the_report(
    runs_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    args = ["compare", str(runs_root), "--rows", "system,form", "--out", str(out / "report.html")]
    args += ["--interactive", str(out / "comparison.html"), "--json"]
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stdout", buf)
        assert main(args) == 0
    summary = json.loads(buf.getvalue())
    assert summary["interactive"]["metrics"] == ["f1", "hit1", "executable"]
    page = (out / "comparison.html").read_text(encoding="utf-8")
    assert f'<script charset="utf-8" src="{PLOTLY_JS}"></script>' in page and "cdn.plot.ly" not in page
    library = out / PLOTLY_JS
    assert library.stat().st_size > 1_000_000 and b"plotly" in library.read_bytes()[:2000].lower()
    # the figure's data are in the page: every F1 of the table
    (data,) = re.findall(r'Plotly\.newPlot\(\s*"comparison",\s*(\[.*?\]),\s*\{', page, re.S)
    values = {round(y, 6) for trace in json.loads(data) for y in trace["y"] if y is not None}
    assert {system_metrics(s, f)["test/f1"] for s in SYSTEMS for f in FORMS} <= values
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<a href='comparison.html' data-chart='interactive'>" in report


def test_interactive_needs_rows_and_says_so_before_writing(runs_root: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    assert main(["compare", str(runs_root), "--out", str(out), "--interactive", str(tmp_path / "c.html")]) == 2
    assert "--interactive draws the --rows table" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "c.html").exists()


def test_without_plotly_the_error_names_the_extra(runs_root: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly → ImportError
    out = tmp_path / "r.html"
    args = ["compare", str(runs_root), "--rows", "system,form", "--out", str(out)]
    assert main([*args, "--interactive", str(tmp_path / "c.html")]) == 2
    assert "--interactive draws its chart with plotly" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "c.html").exists()
