"""``kbqa compare --rows ... --interactive FILE``: the comparison's grouped bars as an interactive HTML chart.

Drawn by plotly (the ``plots`` extra, which ``make`` installs): x = all questions and each
generalisation level, one bar per row of the ``--rows`` table (rows that share their first key, one
system in two forms, share a hue: :func:`~kbqa_lit.tracking.plotting.paired_colors`), y = the
metric; a menu switches between the metrics the runs logged (F1, Hits@1, executable), hovering a bar
shows its row, level, value and run, and clicking a legend entry hides that row. The page loads
``plotly.min.js`` from its own folder (written beside it, once), so it opens offline and several
charts share one copy of the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_text_atomic
from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.plotting import COLORS, LABELS, install_hint, paired_colors, require_module
from kbqa_lit.tracking.rows import RowsTable, level_values

#: The metrics the menu offers, in this order (those some row logged).
MENU_METRICS = ("f1", "hit1", "executable")
#: The library file the page loads from its own folder.
PLOTLY_JS = "plotly.min.js"
INSTALL_HINT = install_hint("--interactive draws its chart", "plotly")


def require_plotly() -> None:
    """Check that plotly imports.

    Raises:
        UserInputError: Naming the ``plots`` extra, when it does not.
    """
    require_module("plotly", INSTALL_HINT)


def menu_metrics(table: RowsTable) -> list[str]:
    """The metrics of :data:`MENU_METRICS` that some row of ``table`` logged (overall or per level)."""
    return [name for name in MENU_METRICS if level_values(table, name)[0]]


def levels_figure(table: RowsTable) -> Any:
    """The interactive grouped bars of a ``--rows`` table: one trace per (metric, row), one metric shown at a time.

    Args:
        table: The rows table (:func:`kbqa_lit.tracking.rows.level_values` gives each metric's bars).

    Returns:
        A ``plotly.graph_objects.Figure``; its menu (``layout.updatemenus[0]``) has one button per metric.

    Raises:
        UserInputError: When no row logged any of :data:`MENU_METRICS`, or plotly is missing.
    """
    require_plotly()
    import plotly.graph_objects as go

    names = menu_metrics(table)
    if not names:
        raise UserInputError(
            f"--interactive: no row logged {', '.join('test/' + n for n in MENU_METRICS)} (overall or per level)"
        )
    colors = paired_colors([row.key for row in table.rows]) or [COLORS[i % len(COLORS)] for i in range(len(table.rows))]
    fig = go.Figure()
    visible_of: list[str] = []
    for name in names:
        categories, bars = level_values(table, name)
        label = LABELS.get(name, name)
        for (row_label, values), row, color in zip(bars, table.rows, colors, strict=True):
            fig.add_trace(
                go.Bar(
                    name=row_label,
                    x=categories,
                    y=values,
                    marker_color=color,
                    legendgroup=row_label,
                    visible=name == names[0],
                    text=[None if v is None else f"{v:.3f}" for v in values],
                    textposition="outside",
                    customdata=[row.run.name] * len(categories),
                    hovertemplate=f"{row_label}<br>%{{x}}: {label} %{{y:.3f}}<br>run %{{customdata}}<extra></extra>",
                )
            )
            visible_of.append(name)
    buttons = [
        {
            "label": LABELS.get(name, name),
            "method": "update",
            "args": [
                {"visible": [owner == name for owner in visible_of]},
                {"yaxis": {"title": {"text": LABELS.get(name, name)}, "range": [0, 1.08]}},
            ],
        }
        for name in names
    ]
    fig.update_layout(
        title={"text": "Per generalisation level (menu: the metric; legend: click to hide a row)"},
        barmode="group",
        xaxis={"title": {"text": "questions"}},
        yaxis={"title": {"text": LABELS.get(names[0], names[0])}, "range": [0, 1.08]},
        updatemenus=[{"type": "buttons", "direction": "right", "x": 0, "y": 1.12, "buttons": buttons}],
        template="plotly_white",
        margin={"t": 90},
    )
    return fig


def write_interactive(table: RowsTable, path: str | Path) -> dict[str, Any]:
    """Write the interactive chart of ``table`` to ``path`` and ``plotly.min.js`` beside it (when not there yet).

    Args:
        table: The rows table.
        path: The HTML file to write (atomically).

    Returns:
        ``{"html", "library", "metrics"}``: the files and the menu's metrics.
    """
    fig = levels_figure(table)  # checks plotly first
    from plotly.offline import get_plotlyjs

    path = Path(path)
    library = path.parent / PLOTLY_JS
    source = get_plotlyjs()
    if not library.is_file() or library.stat().st_size != len(source.encode("utf-8")):
        write_text_atomic(library, source)
    html = fig.to_html(full_html=True, include_plotlyjs="directory", div_id="comparison")
    write_text_atomic(path, html)
    return {"html": str(path), "library": str(library), "metrics": menu_metrics(table)}
