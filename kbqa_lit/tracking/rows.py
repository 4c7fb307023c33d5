"""``kbqa compare --rows KEY[,KEY...]``: one table row per run, keyed by run parameters.

The cross-system comparison logs one run per system × form (config keys ``system``, ``form``...,
summary metrics ``test/f1``, ``test/iid/f1``...). :func:`rows_table` turns such runs into a table:

- one row per run, keyed by its values of the row keys (a key is a run parameter by its name or
  the last part of its dotted path, as ``--param``; else a logged hyper-parameter), sorted by them;
- the columns: the chosen metrics, by default :func:`default_table_metrics` (``test/f1``,
  ``test/hit1``, ``test/executable``, ``test/questions_per_s``, ``test/<level>/f1`` per
  generalisation level and ``test/<key>/<value>/f1`` per value of a later grouping key, those some
  run logged);
- a run without a row key is an error naming the run and the key;
- two runs with the same row key: the newest (the one whose log file was written last) is kept and
  the others are listed in :attr:`RowsTable.replaced` (``kbqa compare`` says so on stderr) — a
  re-run of one system replaces its earlier result.

:func:`f1_by_level` gives the grouped bar chart of the table: x = all questions and each level, one
bar per row, y = F1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.comparison import resolve_param
from kbqa_lit.tracking.runs import RunRecord, as_number

#: The overall test metrics of the default columns, in order.
OVERALL_METRICS = ("test/f1", "test/hit1", "test/executable", "test/questions_per_s")
#: Generalisation levels (GrailQA's, as the synthetic world and ``kbqa fc levels`` spell i.i.d.), in this order
#: before any other level.
LEVELS = ("iid", "i.i.d.", "compositional", "zero-shot")
LEVEL_METRIC = re.compile(r"test/([^/]+)/f1")
#: F1 per value of a later ``--group-by`` key (``test/kbcheck/exact/f1``: the star questions).
GROUP_METRIC = re.compile(r"test/[^/]+/[^/]+/f1")
LABEL_SEPARATOR = " · "
#: The category of the overall F1 in the bar chart.
ALL = "all"


@dataclass
class TableRow:
    """One row: the run and its values of the row keys and metrics."""

    run: RunRecord
    key: tuple[Any, ...]
    values: dict[str, float | None]

    @property
    def label(self) -> str:
        """The row's name: its key values joined (``coq · paper``)."""
        return LABEL_SEPARATOR.join(str(v) for v in self.key)


@dataclass
class RowsTable:
    """Runs as rows keyed by parameters, metrics as columns.

    Attributes:
        keys: The row keys as given (``system``, ``form``).
        metrics: The metric columns.
        rows: Sorted by key.
        replaced: Per row key that several runs had, ``{"key", "kept", "dropped"}`` (run names).
    """

    keys: list[str]
    metrics: list[str]
    rows: list[TableRow]
    replaced: list[dict[str, Any]] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        """The key columns, then the metrics."""
        return [*self.keys, *self.metrics]

    def to_json(self) -> dict[str, Any]:
        """``{"keys", "metrics", "columns", "rows": [{"label", "run", "path", "values"}], "replaced"}``."""
        return {
            "keys": self.keys,
            "metrics": self.metrics,
            "columns": self.columns,
            "rows": [
                {
                    "label": row.label,
                    "run": row.run.name,
                    "path": str(row.run.path),
                    "values": {**dict(zip(self.keys, row.key, strict=True)), **row.values},
                }
                for row in self.rows
            ],
            "replaced": self.replaced,
        }


def parse_keys(values: Sequence[str] | None) -> list[str]:
    """``--rows system,form`` (repeatable) as the list of keys, without repeats."""
    keys = [item.strip() for value in values or [] for item in value.split(",") if item.strip()]
    return list(dict.fromkeys(keys))


def level_order(level: str) -> tuple[int, str]:
    """Sort key of a generalisation level: the known levels in their order, then the others by name."""
    return (LEVELS.index(level), "") if level in LEVELS else (len(LEVELS), level)


def levels_of(runs: Sequence[RunRecord]) -> list[str]:
    """The levels some run logged ``test/<level>/f1`` for, in :func:`level_order`."""
    found = {m.group(1) for r in runs for name in r.metric_names() if (m := LEVEL_METRIC.fullmatch(name))}
    return sorted(found, key=level_order)


def default_table_metrics(runs: Sequence[RunRecord]) -> list[str]:
    """The default columns: :data:`OVERALL_METRICS`, ``test/<level>/f1``, ``test/<key>/<value>/f1`` logged."""
    logged = set().union(*(r.metric_names() for r in runs)) if runs else set()
    groups = sorted(m for m in logged if GROUP_METRIC.fullmatch(m))
    return [m for m in OVERALL_METRICS if m in logged] + [f"test/{level}/f1" for level in levels_of(runs)] + groups


def run_time(run: RunRecord) -> float:
    """When the run's log was last written: the modification time of its ``run-*.wandb`` or ``metrics.csv``."""
    files = [*run.path.glob("run-*.wandb"), run.path / "metrics.csv"]
    times = [f.stat().st_mtime for f in files if f.is_file()]
    if times:
        return max(times)
    return run.path.stat().st_mtime if run.path.exists() else 0.0


def _key_value(run: RunRecord, key: str, resolved: str) -> tuple[bool, Any]:
    if resolved in run.params:
        return True, run.params[resolved]
    if key in run.hparams:
        return True, run.hparams[key]
    return False, None


def _resolve(runs: Sequence[RunRecord], key: str) -> str:
    if any(key in r.params or key in r.hparams for r in runs):
        return key
    try:
        return resolve_param(runs, key)
    except UserInputError as exc:
        raise UserInputError(f"--rows {key}: {exc}") from None


def _sort_value(value: Any) -> tuple[int, float, str]:
    number = as_number(value)
    if number is not None:
        return (0, number, "")
    return (1, 0.0, value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))


def _display(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else json.dumps(value, default=str)


def rows_table(runs: Sequence[RunRecord], keys: Sequence[str], metrics: Sequence[str]) -> RowsTable:
    """The table of ``runs`` keyed by ``keys`` (see the module docstring).

    Args:
        runs: The runs.
        keys: Row keys (run parameters, e.g. ``system``, ``form``).
        metrics: The metric columns.

    Returns:
        The table, rows sorted by key; duplicates of a key reduced to the newest run.

    Raises:
        UserInputError: For no key, or a run that lacks a key (naming the run, its path and the key).
    """
    if not keys:
        raise UserInputError("--rows needs at least one key, e.g. --rows system,form")
    resolved = {key: _resolve(runs, key) for key in keys}
    by_key: dict[str, list[tuple[tuple[Any, ...], RunRecord]]] = {}
    for run in runs:
        key_values = []
        for key in keys:
            found, value = _key_value(run, key, resolved[key])
            if not found:
                raise UserInputError(
                    f"--rows {key}: run {run.name!r} ({run.path}) has no {key!r} in its config; "
                    "every compared run needs each row key (compare only the runs of one table, or choose other keys)"
                )
            key_values.append(_display(value))
        canon = json.dumps(key_values, sort_keys=True, default=str)
        by_key.setdefault(canon, []).append((tuple(key_values), run))
    rows, replaced = [], []
    for members in by_key.values():
        ordered = sorted(members, key=lambda kr: (run_time(kr[1]), str(kr[1].path)))
        key_values, kept = ordered[-1]
        if len(ordered) > 1:
            replaced.append(
                {
                    "key": dict(zip(keys, key_values, strict=True)),
                    "kept": kept.name,
                    "dropped": [r.name for _, r in ordered[:-1]],
                }
            )
        rows.append(TableRow(kept, key_values, {m: kept.final(m) for m in metrics}))
    rows.sort(key=lambda row: tuple(_sort_value(v) for v in row.key))
    return RowsTable(list(keys), list(metrics), rows, replaced)


def level_values(table: RowsTable, name: str = "f1") -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """A grouped bar chart's data for one metric: the categories and per row its value in each.

    The categories are ``all`` then each generalisation level some row logged the metric for.

    Args:
        table: The rows table.
        name: The metric's last part: ``f1`` reads ``test/f1`` and ``test/<level>/f1``; ``hit1`` the same for Hits@1.

    Returns:
        ``(categories, [(row label, [value or None per category])])``; no categories when no row logged it.
    """
    runs = [row.run for row in table.rows]
    metrics = {ALL: f"test/{name}", **{level: f"test/{level}/{name}" for level in levels_of(runs)}}
    categories = [c for c, m in metrics.items() if any(r.final(m) is not None for r in runs)]
    bars = [(row.label, [row.run.final(metrics[c]) for c in categories]) for row in table.rows]
    return categories, bars


def f1_by_level(table: RowsTable) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """The F1 bar chart's data (:func:`level_values` of ``f1``): the categories and per row its F1 in each."""
    return level_values(table, "f1")
