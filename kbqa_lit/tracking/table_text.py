"""``kbqa compare``'s short table as text: on the terminal (rich) and as Markdown (``--markdown FILE``).

Two tables: with ``--rows`` the :class:`~kbqa_lit.tracking.rows.RowsTable` (key columns, then the
metrics); without, one row per run (name, stage, the compared metrics' final values). Rates
(``questions_per_s``) get two decimals, counts (``n``) none, scores three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from kbqa_lit.tracking.rows import RowsTable
from kbqa_lit.tracking.runs import as_number

MISSING = "—"


@dataclass
class TextTable:
    """A table of formatted cells.

    Attributes:
        title: What the table shows (the terminal's title line).
        headers: Column names.
        rows: Cells, one list per row.
        numeric: Per column whether it holds numbers (right-aligned).
    """

    title: str
    headers: list[str]
    rows: list[list[str]]
    numeric: list[bool]


def format_cell(column: str, value: Any) -> str:
    """A metric or key value as a table cell (see the module docstring)."""
    number = as_number(value)
    if value is None:
        return MISSING
    if number is None:
        return str(value)
    leaf = column.rsplit("/", 1)[-1]
    if leaf == "n" or (isinstance(value, int) and not isinstance(value, bool)):
        return f"{number:.0f}" if number.is_integer() else f"{number:g}"
    if leaf.endswith("_per_s") or leaf in ("seconds", "s"):
        return f"{number:.2f}"
    return f"{number:.3f}"


def rows_text_table(table: RowsTable) -> TextTable:
    """The ``--rows`` table: the key columns, then the metrics."""
    cells = [
        [format_cell(k, v) for k, v in zip(table.keys, row.key, strict=True)]
        + [format_cell(m, row.values.get(m)) for m in table.metrics]
        for row in table.rows
    ]
    numeric = [False] * len(table.keys) + [True] * len(table.metrics)
    title = f"{len(table.rows)} row{'s' if len(table.rows) != 1 else ''} by {', '.join(table.keys)}"
    return TextTable(title, table.columns, cells, numeric)


def runs_text_table(comparison: Mapping[str, Any]) -> TextTable:
    """One row per run of a comparison (:func:`kbqa_lit.tracking.comparison.compare_runs`): name, stage, metrics."""
    metrics = list(comparison["metrics"])
    cells = [
        [row["name"], row.get("stage") or MISSING] + [format_cell(m, row["final"].get(m)) for m in metrics]
        for row in comparison["runs"]
    ]
    n = len(cells)
    return TextTable(
        f"{n} run{'s' if n != 1 else ''}", ["run", "stage", *metrics], cells, [False, False] + [True] * len(metrics)
    )


def short_headers(table: TextTable) -> tuple[list[str], str]:
    """The headers without the stage prefix all metric columns share (``test/``), and that prefix."""
    metric_headers = [h for h, numeric in zip(table.headers, table.numeric, strict=True) if numeric]
    stages = {h.split("/", 1)[0] for h in metric_headers if "/" in h}
    if len(stages) != 1 or not all("/" in h for h in metric_headers):
        return list(table.headers), ""
    (stage,) = stages
    prefix = stage + "/"
    return [h[len(prefix) :] if numeric else h for h, numeric in zip(table.headers, table.numeric, strict=True)], prefix


def markdown(table: TextTable) -> str:
    """The table as GitHub Markdown (numbers right-aligned, ``|`` escaped), ending in a newline."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join("---:" if numeric else "---" for numeric in table.numeric) + "|"
    return "\n".join([line(table.headers), rule, *(line(row) for row in table.rows)]) + "\n"


def print_table(table: TextTable, file: IO[str], notes: Sequence[str] = ()) -> None:
    """Print the table with rich (box lines; no colours or wrapping when ``file`` is not a terminal), then ``notes``.

    Args:
        table: The table.
        file: Where to print (``sys.stdout``).
        notes: Lines printed under the table (the report's path, files written).
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    terminal = bool(getattr(file, "isatty", lambda: False)())
    console = Console(file=file, width=None if terminal else 10_000, highlight=False, soft_wrap=not terminal)
    headers, prefix = short_headers(table)
    title = table.title + (f" — {prefix}… metrics" if prefix else "")
    out = Table(title=escape(title), title_justify="left", header_style="bold")
    for header, numeric in zip(headers, table.numeric, strict=True):
        out.add_column(escape(header), justify="right" if numeric else "left", overflow="fold")
    for row in table.rows:
        out.add_row(*(Text(cell) for cell in row))
    console.print(out)
    for note in notes:
        console.print(note, markup=False)
