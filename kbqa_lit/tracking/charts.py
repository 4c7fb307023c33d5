"""The comparison's charts drawn by matplotlib: line and grouped-bar figures, and inline SVG of them.

:func:`line_figure` draws series of ``(x, y)`` points (linear, logarithmic or categorical x axis);
:func:`bar_figure` draws grouped bars over categories (per-group metrics, F1 per generalisation
level). :func:`line_chart` and :func:`bar_chart` return those figures as one ``<svg>`` element for the
self-contained HTML report: text stays text (``svg.fonttype: none``), the ids are made unique per
chart (several charts share one page), the root element carries ``class="chart"``, a ``<title>`` and
the caller's ``data-*`` attributes, and nothing refers to the network. :mod:`.png` saves the same
comparison chart (:func:`f1_levels_figure`) as a PNG file.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from kbqa_lit.tracking.plotting import COLORS, paired_colors, plain_text, pyplot
from kbqa_lit.tracking.rows import RowsTable, f1_by_level

#: Fixed margins (inches) instead of a layout engine, which draws every figure twice: the axes get
#: AXES_WIDTH_IN × AXES_HEIGHT_IN (bar charts wider with more bars), the legend its own room on the right.
LEFT_IN, BOTTOM_IN, TOP_IN, RIGHT_PAD_IN = 0.8, 0.62, 0.38, 0.15
AXES_WIDTH_IN, AXES_HEIGHT_IN, MAX_AXES_WIDTH_IN = 5.0, 2.3, 12.0
LEGEND_CHARS = 40
#: Legend room per character and for the marker, and per entry (font size 8).
LEGEND_CHAR_IN, LEGEND_HANDLE_IN, LEGEND_ROW_IN = 0.068, 0.5, 0.19
_CHART_IDS = itertools.count(1)


@dataclass
class Series:
    """One line (or one bar per category) of a chart: a legend name and points in drawing order."""

    name: str
    points: list[tuple[float, float]] = field(default_factory=list)
    color: str | None = None


def _legend_name(name: str) -> str:
    return plain_text(name if len(name) <= LEGEND_CHARS else name[: LEGEND_CHARS - 1] + "…")


def _figure(axes_width: float, legend: Sequence[str]) -> tuple[Any, Any]:
    """A figure with one axes of ``axes_width`` inches and room for the ``legend`` labels on its right."""
    plt = pyplot()
    legend_width = LEGEND_HANDLE_IN + LEGEND_CHAR_IN * max(map(len, legend)) if legend else 0.0
    axes_width = min(axes_width, MAX_AXES_WIDTH_IN)
    axes_height = max(AXES_HEIGHT_IN, LEGEND_ROW_IN * len(legend))
    width = LEFT_IN + axes_width + legend_width + RIGHT_PAD_IN
    height = BOTTOM_IN + axes_height + TOP_IN
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((LEFT_IN / width, BOTTOM_IN / height, axes_width / width, axes_height / height))
    return fig, ax


def _finish(ax: Any, title: str, x_label: str, y_label: str, legend: bool) -> None:
    ax.set_title(plain_text(title), fontsize=11, loc="left", fontweight="bold")
    ax.set_xlabel(plain_text(x_label))
    ax.set_ylabel(plain_text(y_label))
    ax.grid(alpha=0.3)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _no_data(ax: Any) -> None:
    ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def line_figure(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_log: bool = False,
    x_categories: Sequence[str] | None = None,
) -> Any:
    """A matplotlib figure of lines with markers, the legend right of the plot.

    Args:
        series: The lines; with ``x_categories``, x values are category indices.
        title: Chart title.
        x_label: Label of the x axis.
        y_label: Label of the y axis.
        x_log: Logarithmic x axis (every x must be > 0).
        x_categories: Category names of a categorical x axis.

    Returns:
        The figure (the caller closes it, e.g. through :func:`svg_element`).
    """
    drawn = [s for s in series if s.points]
    fig, ax = _figure(AXES_WIDTH_IN, [_legend_name(s.name) for s in drawn])
    for k, s in enumerate(drawn):
        xs, ys = zip(*s.points, strict=True)
        color = s.color or COLORS[k % len(COLORS)]
        ax.plot(xs, ys, marker="o", ms=4, lw=1.8, color=color, label=_legend_name(s.name))
    if not drawn:
        _no_data(ax)
    elif x_categories is not None:
        ax.set_xticks(range(len(x_categories)), [plain_text(str(c)) for c in x_categories])
        ax.set_xlim(-0.5, len(x_categories) - 0.5)
    elif x_log:
        ax.set_xscale("log")
    elif all(float(x).is_integer() for s in drawn for x, _ in s.points):
        ax.xaxis.get_major_locator().set_params(integer=True)  # epochs, steps
    _finish(ax, title, x_label, y_label, legend=bool(drawn))
    return fig


def bar_figure(
    series: Sequence[Series],
    *,
    categories: Sequence[str],
    title: str,
    x_label: str,
    y_label: str,
    value_labels: bool = False,
) -> Any:
    """A matplotlib figure of grouped bars: one group per category, one bar per series (y from 0).

    Args:
        series: The bars; a point ``(i, y)`` is the bar of category ``i`` (a missing point draws no bar).
        categories: Category names (x axis).
        title: Chart title.
        x_label: Label of the x axis.
        y_label: Label of the y axis.
        value_labels: Write each bar's value above it.

    Returns:
        The figure.
    """
    ys = [y for s in series for _, y in s.points]
    n = max(len(series), 1)
    legend = [_legend_name(s.name) for s in series] if ys else []
    fig, ax = _figure(max(AXES_WIDTH_IN, 0.6 + 0.22 * len(categories) * n), legend)
    if not categories or not ys:
        _no_data(ax)
        _finish(ax, title, x_label, y_label, legend=False)
        return fig
    width = 0.8 / n
    for k, s in enumerate(series):
        if not s.points:
            continue
        xs = [x - 0.4 + width * (k + 0.5) for x, _ in s.points]
        heights = [y for _, y in s.points]
        color = s.color or COLORS[k % len(COLORS)]
        bars = ax.bar(xs, heights, width * 0.92, color=color, label=_legend_name(s.name))
        if value_labels:
            vertical = n > 3
            ax.bar_label(
                bars,
                labels=[f"{h:.2f}" for h in heights],
                fontsize=7,
                padding=2,
                rotation=90 if vertical else 0,
            )
    top = max(ys)
    top = 1.0 if 0 <= top <= 1.0 else top * 1.08
    ax.set_ylim(min(0.0, min(ys) * 1.08), top * (1.16 if value_labels else 1.0))
    ax.set_xticks(range(len(categories)), [plain_text(str(c)) for c in categories])
    ax.set_xlim(-0.5, len(categories) - 0.5)
    _finish(ax, title, x_label, y_label, legend=True)
    ax.grid(False, axis="x")
    return fig


def svg_element(fig: Any, *, title: str, attrs: Mapping[str, str] | None = None) -> str:
    """The figure as one ``<svg>`` element to inline in HTML (see the module docstring); closes the figure.

    Args:
        fig: A matplotlib figure.
        title: The ``<title>`` of the element (shown as a tooltip, read by screen readers).
        attrs: Extra attributes of the ``<svg>`` element (e.g. ``{"data-metric": "val/f1"}``).

    Returns:
        The ``<svg>`` element as text.
    """
    import matplotlib

    buf = io.StringIO()
    try:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "kbqa"}):
            fig.savefig(buf, format="svg", facecolor="white", metadata={"Date": None})
    finally:
        pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :].strip()
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    prefix = f"chart{next(_CHART_IDS)}-"
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", text)
    text = re.sub(r'(?:xlink:)?href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', text)
    text = text.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "")
    extra = "".join(f' {escape(k)}="{escape(v)}"' for k, v in (attrs or {}).items())
    head_end = text.index(">") + 1
    head = text[:head_end].replace("<svg ", f'<svg class="chart" role="img"{extra} ', 1)
    return head + f"<title>{escape(title)}</title>" + text[head_end:]


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_log: bool = False,
    x_categories: Sequence[str] | None = None,
    attrs: Mapping[str, str] | None = None,
) -> str:
    """:func:`line_figure` as an inline ``<svg>`` element (arguments as there; ``attrs`` as :func:`svg_element`)."""
    fig = line_figure(series, title=title, x_label=x_label, y_label=y_label, x_log=x_log, x_categories=x_categories)
    return svg_element(fig, title=title, attrs=attrs)


def bar_chart(
    series: Sequence[Series],
    *,
    categories: Sequence[str],
    title: str,
    x_label: str,
    y_label: str,
    attrs: Mapping[str, str] | None = None,
    value_labels: bool = False,
) -> str:
    """:func:`bar_figure` as an inline ``<svg>`` element (arguments as there; ``attrs`` as :func:`svg_element`)."""
    fig = bar_figure(
        series, categories=categories, title=title, x_label=x_label, y_label=y_label, value_labels=value_labels
    )
    return svg_element(fig, title=title, attrs=attrs)


def f1_levels_figure(table: RowsTable) -> Any:
    """The ``--rows`` table's grouped bars: x = all questions and each generalisation level, one bar per row, y = F1.

    Rows that share their first key value (one system in two forms) share a hue, lighter for the later
    rows (:func:`~kbqa_lit.tracking.plotting.paired_colors`). A level a row did not log has no bar.

    Args:
        table: The rows table (:func:`kbqa_lit.tracking.rows.f1_by_level` gives the bars).

    Returns:
        The figure.
    """
    categories, bars = f1_by_level(table)
    colors = paired_colors([row.key for row in table.rows]) or [None] * len(bars)
    series = [
        Series(label, [(float(i), float(v)) for i, v in enumerate(values) if v is not None], color)
        for (label, values), color in zip(bars, colors, strict=True)
    ]
    return bar_figure(
        series,
        categories=categories,
        title="F1 per generalisation level",
        x_label="questions",
        y_label="F1",
        value_labels=True,
    )
