"""Line and bar charts as self-contained inline SVG (no plotting library needed).

:func:`line_chart` draws one or more series of ``(x, y)`` points with axes, "nice" ticks, a
legend and a tooltip (``<title>``) per point. The x axis is linear, logarithmic or categorical.
:func:`bar_chart` draws grouped bars over categories (per-group metrics such as MetaQA's hops).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

#: Matplotlib's tab10 colours.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
WIDTH, HEIGHT = 760, 330
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 210, 34, 48
LEGEND_CHARS = 30


@dataclass
class Series:
    """One line of a chart: a name for the legend and points in drawing order."""

    name: str
    points: list[tuple[float, float]] = field(default_factory=list)
    color: str | None = None


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """About ``target`` round tick values covering ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    x = start
    while x <= hi + step * 1e-9:
        ticks.append(round(x, 12))
        x += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks at 1, 2 and 5 times powers of ten within ``[lo, hi]`` (``lo > 0``)."""
    ticks = []
    for exp in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**exp
            if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                ticks.append(v)
    if len(ticks) > 8:
        ticks = [t for t in ticks if math.isclose(t / 10 ** math.floor(math.log10(t)), 1.0)]
    return ticks or [lo, hi]


def fmt_number(v: float) -> str:
    """A short label for a tick or value."""
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-4:
        return f"{v:.1e}"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.4g}"


def _padded(lo: float, hi: float, margin: float = 0.0) -> tuple[float, float]:
    """``[lo, hi]`` widened by ``margin`` of its length (an empty range by 10 % of the value, or 0.5)."""
    if hi > lo:
        pad = (hi - lo) * margin
        return lo - pad, hi + pad
    pad = abs(lo) * 0.1 or 0.5
    return lo - pad, hi + pad


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
    """Render series as an SVG line chart with markers.

    Args:
        series: The lines; with ``x_categories``, x values are category indices.
        title: Chart title.
        x_label: Label of the x axis.
        y_label: Label of the y axis.
        x_log: Logarithmic x axis (every x must be > 0).
        x_categories: Category names of a categorical x axis.
        attrs: Extra attributes of the ``<svg>`` element (e.g. ``{"data-metric": "val/f1"}``).

    Returns:
        The ``<svg>`` element as text.
    """
    height = max(HEIGHT, MARGIN_TOP + 18 * len(series) + 16)  # room for a long legend
    pw, ph = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, height - MARGIN_TOP - MARGIN_BOTTOM
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    extra = "".join(f' {escape(k)}="{escape(v)}"' for k, v in (attrs or {}).items())
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" class="chart"{extra}>'
        f'<title>{escape(title)}</title><rect width="100%" height="100%" fill="white"/>'
        f'<text x="{MARGIN_LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>'
    )
    if not xs:
        return head + f'<text x="{MARGIN_LEFT}" y="{height // 2}" font-size="12">no data</text></svg>'
    if x_categories is not None:
        x_lo, x_hi = -0.5, len(x_categories) - 0.5
        x_ticks: list[float] = list(range(len(x_categories)))
    elif x_log:
        x_lo, x_hi = _padded(min(xs), max(xs))
        x_ticks = log_ticks(x_lo, x_hi)
        x_lo, x_hi = _padded(math.log10(x_lo), math.log10(x_hi), 0.04)
    else:
        x_ticks = nice_ticks(*_padded(min(xs), max(xs)))
        x_lo, x_hi = _padded(min(xs), max(xs), 0.04)
    y_ticks = nice_ticks(*_padded(min(ys), max(ys)))
    y_lo, y_hi = _padded(min(ys), max(ys), 0.06)
    y_ticks = [t for t in y_ticks if y_lo <= t <= y_hi]
    x_ticks = [t for t in x_ticks if x_categories is not None or x_lo <= (math.log10(t) if x_log else t) <= x_hi]

    def px(x: float) -> float:
        v = math.log10(x) if x_log and x_categories is None else x
        return MARGIN_LEFT + (v - x_lo) / (x_hi - x_lo) * pw

    def py(y: float) -> float:
        return MARGIN_TOP + ph - (y - y_lo) / (y_hi - y_lo) * ph

    parts = [head, '<g font-size="11" fill="#333">']
    bottom = MARGIN_TOP + ph
    for t in y_ticks:
        y = py(t)
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
            f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt_number(t)}</text>'
        )
    for i, t in enumerate(x_ticks):
        x = px(t)
        label = x_categories[i] if x_categories is not None else fmt_number(t)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}" stroke="#333"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{escape(str(label))}</text>'
        )
    parts.append(
        f'<rect x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>'
        f'<text x="{MARGIN_LEFT + pw / 2:.1f}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>'
        f'<text transform="translate(16,{MARGIN_TOP + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
        f"{escape(y_label)}</text></g>"
    )
    for k, s in enumerate(series):
        color = s.color or PALETTE[k % len(PALETTE)]
        pts = [(px(x), py(y), x, y) for x, y in s.points]
        parts.append(f'<g class="series" data-name="{escape(s.name)}">')
        if len(pts) > 1:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b, _, _ in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.8"/>')
        for a, b, x, y in pts:
            xl = x_categories[int(x)] if x_categories is not None else fmt_number(x)
            parts.append(
                f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}">'
                f"<title>{escape(s.name)}: {escape(str(xl))} → {y:.4g}</title></circle>"
            )
        ly = MARGIN_TOP + 8 + 18 * k
        lx = MARGIN_LEFT + pw + 14
        name = s.name if len(s.name) <= LEGEND_CHARS else s.name[: LEGEND_CHARS - 1] + "…"
        parts.append(
            f'<line x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="3"/>'
            f'<text x="{lx + 24}" y="{ly + 4}" font-size="11"><title>{escape(s.name)}</title>{escape(name)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    series: Sequence[Series],
    *,
    categories: Sequence[str],
    title: str,
    x_label: str,
    y_label: str,
    attrs: Mapping[str, str] | None = None,
) -> str:
    """Render grouped bars as SVG: one group per category, one bar per series (y from 0).

    Args:
        series: The bars; a point ``(i, y)`` is the bar of category ``i``.
        categories: Category names (x axis).
        title: Chart title.
        x_label: Label of the x axis.
        y_label: Label of the y axis.
        attrs: Extra attributes of the ``<svg>`` element.

    Returns:
        The ``<svg>`` element as text.
    """
    height = max(HEIGHT, MARGIN_TOP + 18 * len(series) + 16)
    pw, ph = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, height - MARGIN_TOP - MARGIN_BOTTOM
    extra = "".join(f' {escape(k)}="{escape(v)}"' for k, v in (attrs or {}).items())
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" class="chart"{extra}>'
        f'<title>{escape(title)}</title><rect width="100%" height="100%" fill="white"/>'
        f'<text x="{MARGIN_LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>'
    ]
    ys = [y for s in series for _, y in s.points]
    if not categories or not ys:
        return parts[0] + f'<text x="{MARGIN_LEFT}" y="{height // 2}" font-size="12">no data</text></svg>'
    y_hi = max(1.0, max(ys)) if max(ys) <= 1.0 else max(ys) * 1.08
    bottom = MARGIN_TOP + ph
    parts.append('<g font-size="11" fill="#333">')
    for t in nice_ticks(0.0, y_hi):
        y = bottom - t / y_hi * ph
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
            f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt_number(t)}</text>'
        )
    slot = pw / len(categories)
    for i, name in enumerate(categories):
        parts.append(
            f'<text x="{MARGIN_LEFT + slot * (i + 0.5):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(name)}</text>"
        )
    parts.append(
        f'<rect x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>'
        f'<text x="{MARGIN_LEFT + pw / 2:.1f}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>'
        f'<text transform="translate(16,{MARGIN_TOP + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
        f"{escape(y_label)}</text></g>"
    )
    width = slot * 0.8 / max(len(series), 1)
    for k, s in enumerate(series):
        color = s.color or PALETTE[k % len(PALETTE)]
        parts.append(f'<g class="series" data-name="{escape(s.name)}">')
        for x, y in s.points:
            left = MARGIN_LEFT + slot * (x + 0.1) + width * k
            top = bottom - max(y, 0.0) / y_hi * ph
            parts.append(
                f'<rect x="{left:.1f}" y="{top:.1f}" width="{width * 0.92:.1f}" height="{bottom - top:.1f}" '
                f'fill="{color}"><title>{escape(s.name)}: {escape(categories[int(x)])} → {y:.4g}</title></rect>'
            )
        ly, lx = MARGIN_TOP + 8 + 18 * k, MARGIN_LEFT + pw + 14
        name = s.name if len(s.name) <= LEGEND_CHARS else s.name[: LEGEND_CHARS - 1] + "…"
        parts.append(
            f'<rect x="{lx}" y="{ly - 5}" width="18" height="10" fill="{color}"/>'
            f'<text x="{lx + 24}" y="{ly + 4}" font-size="11"><title>{escape(s.name)}</title>{escape(name)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
