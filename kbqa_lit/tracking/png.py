"""PNG pictures of a comparison with matplotlib: learning curves, per-group bars, F1 per level per row.

- :func:`learning_curves_png`: one panel per metric (``val/f1``, ``val/hit1``), x = epoch, one line
  per run; the test value of each evaluation run joined to a fit run is a star at the fit run's
  last epoch, in the run's colour;
- :func:`groups_png`: grouped bars of per-group metrics (MetaQA's 1/2/3-hop F1 and Hits@1), one bar
  per metric (and per predictions file when there are several);
- :func:`comparison_png`: the ``--rows`` table's grouped bars (x = all questions and each
  generalisation level, one bar per row, y = F1), the figure the HTML report inlines as SVG.

matplotlib comes with the ``plots`` extra (:mod:`.plotting`); without it the functions raise
:class:`~kbqa_lit.errors.UserInputError` naming that extra. The files are written atomically (a
temporary file beside the target, then a rename).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.charts import f1_levels_figure
from kbqa_lit.tracking.lineage import Experiment
from kbqa_lit.tracking.plotting import COLORS, LABELS, metric_label, pyplot, require_matplotlib
from kbqa_lit.tracking.rows import RowsTable, f1_by_level
from kbqa_lit.tracking.runs import RunRecord

DPI = 110


def _save_atomic(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.png")
    try:
        fig.savefig(tmp, dpi=DPI, format="png", facecolor="white")
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _curve(run: RunRecord, metric: str) -> list[tuple[float, float]]:
    points = run.history.get(metric) or []
    return [(float(i) if p.epoch is None else p.epoch, p.value) for i, p in enumerate(points)]


def learning_curves_png(experiments: Sequence[Experiment], metrics: Sequence[str], path: Path) -> Path:
    """Write ``metrics`` per epoch, one line per run (test values of joined runs as stars).

    Args:
        experiments: The joined runs (:func:`kbqa_lit.tracking.lineage.join_runs`).
        metrics: Per-epoch metrics, one panel each (e.g. ``val/f1``, ``val/hit1``).
        path: The PNG to write.

    Returns:
        ``path``.

    Raises:
        UserInputError: Without matplotlib, or when no run logged any of ``metrics`` per epoch.
    """
    lines = [(e, m, _curve(e.main, m)) for e in experiments for m in metrics]
    if not any(points for _, _, points in lines):
        raise UserInputError(f"no run logged {', '.join(metrics)}: nothing to draw in {path.name}")
    plt = pyplot()
    width = max(6.4, 5.2 * len(metrics))
    fig, axes = plt.subplots(1, len(metrics), figsize=(width, 3.9), squeeze=False, layout="constrained")
    for ax, metric in zip(axes[0], metrics, strict=True):
        for k, exp in enumerate(experiments):
            color = COLORS[k % len(COLORS)]
            points = _curve(exp.main, metric)
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", ms=3.5, lw=1.8, color=color, label=exp.main.name)
            test_metric = "test/" + metric.rpartition("/")[2]
            for test in exp.tests:
                value = test.final(test_metric)
                if value is not None:
                    x = points[-1][0] if points else 0.0
                    ax.plot([x], [value], marker="*", ms=13, color=color, ls="none", label=f"{test.name} (test)")
        starred = any(
            test.final("test/" + metric.rpartition("/")[2]) is not None for e in experiments for test in e.tests
        )
        ax.set_title(metric_label(metric) + (" per epoch; ★ test" if starred else " per epoch"))
        ax.set_xlabel("epoch")
        ax.set_ylabel(metric_label(metric))
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=_legend_columns(labels, width), fontsize=8)
    _save_atomic(fig, path)
    plt.close(fig)
    return path


def groups_png(
    groups: Mapping[str, Mapping[str, Mapping[str, Any]]], key: str, metrics: Sequence[str], path: Path
) -> Path:
    """Write per-group bars: x = the values of ``key`` (e.g. hops 1/2/3), one bar per metric and source.

    Args:
        groups: Per source (a predictions file's label), per group value, the metrics and ``n``
            (what ``kbqa eval --group-by`` reports under ``by[key]``).
        key: The grouping key (axis label).
        metrics: Metric names of the rows (``f1``, ``hit1``).
        path: The PNG to write.

    Returns:
        ``path``.

    Raises:
        UserInputError: Without matplotlib, or when there is no group.
    """
    values = sorted({v for rows in groups.values() for v in rows}, key=_group_order)
    if not values:
        raise UserInputError(f"no question has a {key!r} group: nothing to draw in {path.name}")
    plt = pyplot()
    bars = [(source, metric) for source in groups for metric in metrics]
    width = 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(values) * len(bars) ** 0.5 + 2.5), 3.9))
    for k, (source, metric) in enumerate(bars):
        rows = groups[source]
        heights = [float(rows.get(v, {}).get(metric) or 0.0) for v in values]
        xs = [i - 0.4 + width * (k + 0.5) for i in range(len(values))]
        label = LABELS.get(metric, metric) if len(groups) == 1 else f"{source}: {LABELS.get(metric, metric)}"
        drawn = ax.bar(xs, heights, width * 0.92, color=COLORS[k % len(COLORS)], label=label)
        ax.bar_label(drawn, labels=[f"{h:.2f}" for h in heights], fontsize=7, padding=2)
    counts = [max(int(groups[s].get(v, {}).get("n") or 0) for s in groups) for v in values]
    ax.set_xticks(range(len(values)), [f"{v}\n(n={n})" for v, n in zip(values, counts, strict=True)])
    ax.set_xlabel(key)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("score")
    ax.set_title(f"per {key}: " + " / ".join(LABELS.get(m, m) for m in metrics))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", frameon=False)
    fig.tight_layout()
    _save_atomic(fig, path)
    plt.close(fig)
    return path


def comparison_png(table: RowsTable, path: Path) -> Path:
    """Write the ``--rows`` table's F1 bars: x = all questions and each level, one bar per row.

    Args:
        table: The rows table.
        path: The PNG to write.

    Returns:
        ``path``.

    Raises:
        UserInputError: Without matplotlib, or when no row logged ``test/f1`` or ``test/<level>/f1``.
    """
    if not f1_by_level(table)[0]:
        raise UserInputError(f"no row logged test/f1 or test/<level>/f1: nothing to draw in {path.name}")
    plt = pyplot()
    fig = f1_levels_figure(table)
    _save_atomic(fig, path)
    plt.close(fig)
    return path


def _legend_columns(labels: Sequence[str], width_in: float) -> int:
    """As many legend columns as fit the figure's width at font size 8 (about 4.6 pt per character)."""
    column_pt = 4.6 * max(len(label) for label in labels) + 36  # text plus the marker
    return max(1, min(len(labels), int(width_in * 72 // column_pt)))


def _group_order(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


__all__ = ["comparison_png", "groups_png", "learning_curves_png", "metric_label", "require_matplotlib"]
