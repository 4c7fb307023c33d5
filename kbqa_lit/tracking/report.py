"""The comparison as one self-contained HTML page (inline CSS and SVG; no scripts, no network).

The charts are drawn by matplotlib (:mod:`.charts`) and inlined as SVG. Sections: with ``--rows``
first the comparison table (one row per run keyed by run parameters) and its F1 bars per
generalisation level (:mod:`.report_table`); the final metrics per run (best value of each column in bold) next to the
hyper-parameters that differ, each ``kbqa test`` run listed under the fit run it evaluated; per
such experiment the validation curves with the test values beside them; the logged
hyper-parameters (``hparams.yaml``); per-group metrics of prediction files (MetaQA's hops) when
given; one table and chart per swept hyper-parameter (mean final metrics per value — CoQ's Table
10 for α); one chart of metric curves per metric, one line per run.
Table cells carry ``data-run``/``data-metric``/``data-value`` and charts ``data-metric`` or
``data-param``, so the page is also machine-readable.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from kbqa_lit.tracking.charts import Series, line_chart
from kbqa_lit.tracking.lineage import join_runs
from kbqa_lit.tracking.report_experiments import experiments_section, groups_section, hparams_section
from kbqa_lit.tracking.report_table import rows_section
from kbqa_lit.tracking.rows import RowsTable
from kbqa_lit.tracking.runs import RunRecord, as_number

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th { background: #f4f4f4; } td.name, th.name { text-align: left; }
td.best { font-weight: bold; background: #eef6ee; } .muted { color: #888; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; } code { font-size: 12px; }
tr.joined td.name { padding-left: 22px; } tr.differs td { background: #fff6e0; } td.from-test { color: #666; }
"""
LOG_RATIO = 50.0


def fmt_value(value: Any) -> str:
    """A table cell for a metric or hyper-parameter value."""
    if value is None:
        return "—"
    number = as_number(value)
    if number is not None and not isinstance(value, int):
        return f"{number:.4f}" if abs(number) >= 1e-3 or number == 0 else f"{number:.3g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def fmt_param(value: Any) -> str:
    """A table cell or axis label for a hyper-parameter value (``0.2``, ``3e-04``, ``gold``, ``[1, 2]``)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return fmt_value(value)


def _best_values(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str], goals: Mapping[str, str]) -> dict:
    best: dict[str, float] = {}
    for metric in metrics:
        values = [v for r in rows if (v := r["final"].get(metric)) is not None]
        if len(values) > 1:
            best[metric] = max(values) if goals.get(metric) == "max" else min(values)
    return best


def _experiment_order(comparison: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """``(run row, experiment row)`` pairs: each evaluation run right after the fit run it evaluated."""
    by_name = {row["name"]: row for row in comparison["runs"]}
    alone = [{"name": r["name"], "tests": [], "final": r["final"]} for r in comparison["runs"]]
    ordered: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for exp in comparison.get("experiments") or alone:
        ordered.append((by_name[exp["name"]], exp))
        ordered.extend((by_name[test["name"]], exp) for test in exp["tests"])
    return ordered


def _metric_cell(row: Mapping[str, Any], exp: Mapping[str, Any], metric: str, best: Mapping[str, float]) -> str:
    run, value = escape(row["name"]), row["final"].get(metric)
    if value is None and row["name"] == exp["name"] and exp["final"].get(metric) is not None:
        source = next((t["name"] for t in reversed(exp["tests"]) if t["final"].get(metric) is not None), "")
        joined = exp["final"][metric]
        return f'<td class="from-test" title="from {escape(source)}">({fmt_value(joined)})</td>'
    cls = ' class="best"' if metric in best and value == best[metric] else ""
    data = "" if value is None else f' data-value="{value!r}"'
    title = f' title="best {fmt_value(row["best"].get(metric))}"' if row["best"].get(metric) is not None else ""
    return f'<td{cls} data-run="{run}" data-metric="{escape(metric)}"{data}{title}>{fmt_value(value)}</td>'


def _final_table(comparison: Mapping[str, Any]) -> str:
    metrics, params, rows = comparison["metrics"], comparison["params"], comparison["runs"]
    best = _best_values(rows, metrics, comparison["goals"])
    head = "".join(f"<th>{escape(p)}</th>" for p in params) + "".join(f"<th>{escape(m)}</th>" for m in metrics)
    out = [
        '<table class="final"><tr><th class="name">run</th><th>stage</th><th>logger</th><th>state</th>'
        "<th>last step</th>",
        head,
        "</tr>",
    ]
    for row, exp in _experiment_order(comparison):
        run = escape(row["name"])
        test = next((t for t in exp["tests"] if t["name"] == row["name"]), None)
        stage = escape(row.get("stage", "")) + (f" (by {escape(str(test['joined_by']))})" if test else "")
        title = escape(row["path"] + (f" — {test['stage']} of {exp['name']}" if test else ""))
        cells = [
            f'<td class="name" title="{title}">{"↳ " if test else ""}{run}</td><td>{stage}</td>'
            f"<td>{row['kind']}</td><td>{escape(row['state'])}</td><td>{fmt_param(row['last_step'])}</td>"
        ]
        for p in params:
            cells.append(
                f'<td data-run="{run}" data-param="{escape(p)}">{escape(fmt_param(row["params"].get(p)))}</td>'
            )
        cells.extend(_metric_cell(row, exp, m, best) for m in metrics)
        out.append(("<tr class='joined'>" if test else "<tr>") + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _sweep_section(sweep: Mapping[str, Any], metrics: Sequence[str]) -> str:
    param, rows = sweep["param"], sweep["rows"]
    head = "".join(f"<th>{escape(m)}</th>" for m in metrics)
    table = [f'<table class="sweep" data-param="{escape(param)}"><tr><th>{escape(param)}</th><th>runs</th>{head}</tr>']
    for row in rows:
        cells = "".join(f'<td data-metric="{escape(m)}">{fmt_value(row["mean"].get(m))}</td>' for m in metrics)
        names = escape(", ".join(row["runs"]))
        table.append(f'<tr><td>{escape(fmt_param(row["value"]))}</td><td title="{names}">{row["n"]}</td>{cells}</tr>')
    table.append("</table>")
    if sweep["numeric"]:
        xs = [float(r["value"]) for r in rows]
        x_log = min(xs) > 0 and max(xs) / min(xs) >= LOG_RATIO
        categories = None
    else:
        xs = [float(i) for i in range(len(rows))]
        x_log, categories = False, [fmt_param(r["value"]) for r in rows]
    series = [
        Series(m, [(x, r["mean"][m]) for x, r in zip(xs, rows, strict=True) if r["mean"].get(m) is not None])
        for m in metrics
    ]
    chart = line_chart(
        [s for s in series if s.points],
        title=f"final metrics vs {param}",
        x_label=param + (" (log)" if x_log else ""),
        y_label="mean final value",
        x_log=x_log,
        x_categories=categories,
        attrs={"data-param": param},
    )
    return f"<h3><code>{escape(param)}</code></h3>" + "".join(table) + f'<div class="charts">{chart}</div>'


def _curve_charts(runs: Sequence[RunRecord], metrics: Sequence[str], x_axis: str) -> str:
    charts = []
    for metric in metrics:
        series = []
        for run in runs:
            pts = []
            for i, p in enumerate(run.history.get(metric) or []):
                x = p.epoch if x_axis == "epoch" else p.step
                pts.append((float(i) if x is None else x, p.value))
            series.append(Series(run.name, pts))
        charts.append(
            line_chart(
                [s for s in series if s.points],
                title=metric,
                x_label=x_axis,
                y_label=metric,
                attrs={"data-metric": metric},
            )
        )
    return f'<div class="charts">{"".join(charts)}</div>'


def render_report(
    comparison: Mapping[str, Any],
    runs: Sequence[RunRecord],
    x_axis: str = "step",
    groups: Mapping[str, Any] | None = None,
    table: RowsTable | None = None,
    interactive: str | None = None,
) -> str:
    """The HTML page of a comparison.

    Args:
        comparison: What :func:`kbqa_lit.tracking.comparison.compare_runs` returned for ``runs``.
        runs: The runs (their histories give the curves).
        x_axis: ``step`` (the trainer's global step) or ``epoch`` for the curves.
        groups: Per-group metrics of prediction files, ``{"key": "hops", "sources": {label: {value:
            {"n", "f1", "hit1", ...}}}}`` (``kbqa compare --group-by``), or ``None``.
        table: The ``--rows`` table, shown first with its F1 chart, or ``None``.
        interactive: A link to the table's interactive chart (``kbqa compare --interactive``), or ``None``.

    Returns:
        The page as text.
    """
    metrics = comparison["metrics"]
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>kbqa compare</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>kbqa compare: {len(runs)} run{'s' if len(runs) != 1 else ''}</h1>",
        f"<p class='muted'>generated {now}; final value = the last logged value (W&amp;B: the run summary); "
        "hover a value for the best one logged; (in brackets): the value of the test run joined to a fit run.</p>",
    ]
    if comparison.get("missing_metrics"):
        parts.append(f"<p>Not logged by any run: {escape(', '.join(comparison['missing_metrics']))}</p>")
    if table is not None:
        parts.append(rows_section(table))
    if interactive is not None:
        parts.append(f"<p><a href='{escape(interactive)}' data-chart='interactive'>The interactive chart</a></p>")
    parts.append("<h2>Final metrics</h2>" + _final_table(comparison))
    experiments = join_runs(list(runs))
    parts.append(experiments_section(experiments, comparison["experiments"], metrics))
    if groups:
        parts.append(groups_section(groups))
    parts.append(hparams_section(experiments))
    if comparison["sweeps"]:
        parts.append("<h2>Hyper-parameter sweeps</h2><p class='muted'>Mean final metrics of the runs per value.</p>")
        parts.extend(_sweep_section(s, metrics) for s in comparison["sweeps"])
    parts.append(f"<h2>Metric curves (x: {escape(x_axis)})</h2>" + _curve_charts(runs, metrics, x_axis))
    items = "".join(f"<li><b>{escape(r.name)}</b> ({r.kind}): <code>{escape(str(r.path))}</code></li>" for r in runs)
    parts.append(f"<h2>Runs</h2><ul>{items}</ul></body></html>")
    return "".join(parts)
