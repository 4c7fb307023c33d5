"""The report's first section with ``--rows``: the comparison table and its F1 chart (used by :mod:`.report`).

The table has one row per run keyed by the row keys (``system``, ``form``), the best value of each
metric column in bold; the chart has grouped bars of F1 over all questions and each generalisation
level, one bar per row. Runs replaced by a newer run of the same key are listed under the table.
"""

from __future__ import annotations

from html import escape

from kbqa_lit.tracking.charts import f1_levels_figure, svg_element
from kbqa_lit.tracking.comparison import metric_goal
from kbqa_lit.tracking.rows import RowsTable, f1_by_level
from kbqa_lit.tracking.table_text import format_cell


def _best(table: RowsTable) -> dict[str, float]:
    best: dict[str, float] = {}
    for metric in table.metrics:
        values = [v for row in table.rows if (v := row.values.get(metric)) is not None]
        if len(values) > 1:
            best[metric] = max(values) if metric_goal(metric) == "max" else min(values)
    return best


def _table_html(table: RowsTable) -> str:
    best = _best(table)
    head = "".join(f"<th class='name'>{escape(k)}</th>" for k in table.keys)
    head += "".join(f"<th>{escape(m)}</th>" for m in table.metrics)
    out = [f"<table class='rows' data-rows='{escape(','.join(table.keys))}'><tr>{head}</tr>"]
    for row in table.rows:
        run = escape(row.run.name)
        cells = [
            f"<td class='name' title='{run}' data-key='{escape(k)}'>{escape(format_cell(k, v))}</td>"
            for k, v in zip(table.keys, row.key, strict=True)
        ]
        for metric in table.metrics:
            value = row.values.get(metric)
            cls = " class='best'" if metric in best and value == best[metric] else ""
            data = "" if value is None else f" data-value='{value!r}'"
            cells.append(
                f"<td{cls} data-run='{run}' data-metric='{escape(metric)}'{data}>{format_cell(metric, value)}</td>"
            )
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _replaced_html(table: RowsTable) -> str:
    if not table.replaced:
        return ""
    items = "".join(
        f"<li>{escape(', '.join(f'{k}={v}' for k, v in r['key'].items()))}: kept <b>{escape(r['kept'])}</b>, "
        f"left out {escape(', '.join(r['dropped']))}</li>"
        for r in table.replaced
    )
    return f"<p class='muted'>Several runs for one row: the newest is shown.</p><ul>{items}</ul>"


def rows_section(table: RowsTable) -> str:
    """The HTML section of a ``--rows`` table (see the module docstring)."""
    chart = ""
    if f1_by_level(table)[0]:
        fig = f1_levels_figure(table)
        chart = (
            "<div class='charts'>"
            + svg_element(fig, title="F1 per generalisation level", attrs={"data-chart": "comparison"})
            + "</div>"
        )
    return (
        f"<h2>Comparison by {escape(', '.join(table.keys))}</h2>"
        "<p class='muted'>One row per run, final values (W&amp;B: the run summary); best per column in bold.</p>"
        + _table_html(table)
        + _replaced_html(table)
        + chart
    )
