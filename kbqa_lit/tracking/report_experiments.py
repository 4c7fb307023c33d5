"""HTML sections about joined runs, hyper-parameters and per-group metrics (used by :mod:`.report`).

- :func:`experiments_section`: per fit run, its validation curves with the test value of every
  ``kbqa test`` run joined to it (:mod:`.lineage`) drawn beside them, and a table val | test;
- :func:`hparams_section`: the logged hyper-parameters (CSV ``hparams.yaml``, the W&B config) per
  experiment, the ones that differ first and highlighted;
- :func:`groups_section`: per-group metrics of prediction files (MetaQA's hops), table and bars.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from kbqa_lit.tracking.charts import Series, bar_chart, line_chart
from kbqa_lit.tracking.lineage import Experiment

MAX_PARAM_CHARS = 80
GROUP_METRICS = ("f1", "hit1")


def _fmt(value: Any, param: bool = False) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if param:
            return f"{value:.6g}"
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3g}"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 1] + "…"


def _curves_with_tests(exp: Experiment, metrics: Sequence[str]) -> str:
    series: list[Series] = []
    last_x = 0.0
    for metric in metrics:
        points = [
            (float(i) if p.epoch is None else p.epoch, p.value) for i, p in enumerate(exp.main.history.get(metric, []))
        ]
        if points:
            last_x = max(last_x, points[-1][0])
            series.append(Series(metric, points))
    for test in exp.tests:
        for metric in metrics:
            value = test.final("test/" + metric.rpartition("/")[2])
            if value is not None:
                series.append(Series(f"test/{metric.rpartition('/')[2]} ({test.name})", [(last_x, value)]))
    return line_chart(
        series,
        title=f"{exp.main.name}: validation per epoch, test at the end",
        x_label="epoch",
        y_label="value",
        attrs={"data-experiment": exp.main.name},
    )


def _val_test_table(exp: Experiment, row: Mapping[str, Any]) -> str:
    leaves = list(dict.fromkeys(m.rpartition("/")[2] for m in row["final"]))
    head = "".join(
        f"<th>{escape(t['name'])}<br><span class='muted'>{escape(t['stage'])}, joined by "
        f"{escape(str(t['joined_by']))}{': ' + escape(t['ckpt_path']) if t['ckpt_path'] else ''}</span></th>"
        for t in row["tests"]
    )
    out = [
        f"<table class='valtest'><tr><th class='name'>metric</th><th>{escape(exp.main.name)} (final)</th>{head}</tr>"
    ]
    for leaf in leaves:
        val = exp.main.final(f"val/{leaf}")
        tests = "".join(
            f"<td data-run='{escape(t['name'])}' data-metric='test/{escape(leaf)}'>"
            f"{_fmt(t['final'].get('test/' + leaf))}</td>"
            for t in row["tests"]
        )
        out.append(f"<tr><td class='name'>{escape(leaf)}</td><td>{_fmt(val)}</td>{tests}</tr>")
    out.append("</table>")
    return "".join(out)


def experiments_section(
    experiments: Sequence[Experiment], rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]
) -> str:
    """Per experiment with evaluation runs: curves of the ``val/`` metrics with test values, and a val | test table.

    Args:
        experiments: The joined runs.
        rows: ``comparison["experiments"]`` (same order as ``experiments``).
        metrics: The compared metrics.
    """
    val_metrics = [m for m in metrics if m.startswith("val/")] or [f"val/{m.rpartition('/')[2]}" for m in metrics]
    parts = []
    for exp, row in zip(experiments, rows, strict=True):
        if not exp.tests:
            continue
        parts.append(
            f"<h3>{escape(exp.main.name)} <span class='muted'>({escape(row['stage'])}) with "
            f"{len(exp.tests)} evaluation run{'s' if len(exp.tests) != 1 else ''}</span></h3>"
            f"<div class='charts'>{_curves_with_tests(exp, val_metrics)}{_val_test_table(exp, row)}</div>"
        )
    if not parts:
        return ""
    intro = (
        "<p class='muted'>A <code>kbqa test</code> run is joined to the fit run whose checkpoint it loaded "
        "(<code>ckpt_path</code>), else to the fit run with the same model and data config.</p>"
    )
    return "<h2>Experiments: fit and test runs joined</h2>" + intro + "".join(parts)


def hparams_section(experiments: Sequence[Experiment]) -> str:
    """The logged hyper-parameters per experiment (main run), those that differ first and highlighted."""
    runs = [e.main for e in experiments if e.main.hparams]
    if not runs:
        return ""
    keys = sorted(set().union(*(r.hparams for r in runs)))
    values = {k: [json.dumps(r.hparams.get(k), sort_keys=True, default=str) for r in runs] for k in keys}
    differing = [k for k in keys if len(set(values[k])) > 1]
    head = "".join(f"<th>{escape(r.name)}</th>" for r in runs)
    out = [f"<table class='hparams'><tr><th class='name'>hyper-parameter</th>{head}</tr>"]
    for key in differing + [k for k in keys if k not in differing]:
        cls = " class='differs'" if key in differing else ""
        cells = "".join(
            f"<td class='name' data-run='{escape(r.name)}' data-hparam='{escape(key)}'>"
            f"{escape(_fmt(r.hparams.get(key), param=True))}</td>"
            for r in runs
        )
        out.append(f"<tr{cls}><td class='name'><code>{escape(key)}</code></td>{cells}</tr>")
    out.append("</table>")
    note = f"{len(differing)} differ (highlighted, first)" if len(runs) > 1 else "one experiment"
    return (
        "<h2>Hyper-parameters</h2><p class='muted'>As the logger recorded them (CSV <code>hparams.yaml</code>, "
        f"the W&amp;B config); {note}.</p>" + "".join(out)
    )


def groups_section(groups: Mapping[str, Any]) -> str:
    """Per-group metrics (``{"key", "sources": {label: {value: {"n", "f1", "hit1", ...}}}}``) as a table and bars."""
    key, sources = groups["key"], groups["sources"]
    values = sorted({v for rows in sources.values() for v in rows}, key=lambda v: (not v.isdigit(), v.zfill(12)))
    head = "".join(f"<th>{escape(m)}</th>" for m in GROUP_METRICS)
    out = [
        f"<table class='groups' data-group='{escape(key)}'><tr><th class='name'>predictions</th>"
        f"<th>{escape(key)}</th><th>n</th>{head}</tr>"
    ]
    for label, rows in sources.items():
        for value in values:
            row = rows.get(value)
            if row is None:
                continue
            cells = "".join(f"<td data-metric='{m}'>{_fmt(row.get(m))}</td>" for m in GROUP_METRICS)
            out.append(
                f"<tr><td class='name'>{escape(label)}</td><td>{escape(value)}</td><td>{row['n']}</td>{cells}</tr>"
            )
    out.append("</table>")
    series = [
        Series(
            m if len(sources) == 1 else f"{label}: {m}",
            [(float(i), float(rows.get(v, {}).get(m) or 0.0)) for i, v in enumerate(values)],
        )
        for label, rows in sources.items()
        for m in GROUP_METRICS
    ]
    chart = bar_chart(
        series, categories=values, title=f"per {key}", x_label=key, y_label="score", attrs={"data-group": key}
    )
    return f"<h2>Per {escape(key)}</h2>" + "".join(out) + f"<div class='charts'>{chart}</div>"
