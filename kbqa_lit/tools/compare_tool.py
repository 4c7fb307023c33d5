"""``kbqa compare``: compare logged runs (W&B offline or synced runs, CSV logs) in one HTML report.

``kbqa compare RUN_DIR... [--rows KEY[,KEY...]] [--json] [--markdown FILE] [--out report.html]
[--metrics val/f1,val/hit1,...] [--param KEY]... [--x step|epoch] [--png DIR] [--interactive FILE]
[--group-by KEY [--predictions FILE... --gold FILE]]`` reads every run found under the given paths (a
W&B run directory, a folder of ``offline-run-*`` directories such as ``outputs/wandb``, a CSVLogger
``version_<n>`` directory or a folder above them), writes a self-contained HTML report (with
``--rows`` first the comparison table and its F1 chart; final metrics per run with the
hyper-parameters that differ, each ``kbqa test`` run joined to the fit run it evaluated, the logged
hyper-parameters, per-group metrics, one chart per swept hyper-parameter — e.g. α against F1 and
Hit@1 as in the CoQ paper's Table 10 — and metric curves; every chart drawn by matplotlib) and prints
a short table on the terminal: with ``--rows system,form`` one row per run keyed by those run
parameters (:mod:`kbqa_lit.tracking.rows`), else one row per run. ``--markdown FILE`` writes that
table as Markdown. ``--json`` prints the JSON summary instead of the table::

    {"report", "metrics", "missing_metrics", "goals", "params",
     "runs": [{"name", "kind", "path", "run_id", "state", "last_step", "final", "best", "params",
               "stage", "hparams"}],
     "sweeps": [{"param", "numeric", "rows": [{"value", "n", "runs", "mean"}]}],
     "experiments": [{"name", "stage", "final", "tests": [{"name", "stage", "joined_by", "ckpt_path", "final"}]}],
     "table"?: {"keys", "metrics", "columns", "rows": [{"label", "run", "path", "values"}], "replaced"},
     "groups"?: {"key", "files": {label: {"predictions", "gold"}}, "sources": {label: {value: {"n", "f1", ...}}}},
     "png"?: {"learning_curves", "groups", "comparison", "skipped": {name: reason}},
     "interactive"?: {"html", "library", "metrics"},
     "markdown"?}

``--group-by KEY`` adds per-group metrics (``kbqa eval --group-by``'s grouping by the gold examples'
``meta[KEY]``, e.g. MetaQA's ``hops``) of ``--predictions`` against ``--gold``, by default of the
prediction files the compared ``kbqa test`` runs wrote against their own test files
(:mod:`kbqa_lit.tools.compare_groups`). ``--png DIR`` also writes ``DIR/learning_curves.png``
(``val/f1`` and ``val/hit1`` per epoch, one line per run, joined test values as stars; skipped, and
said so under ``png.skipped``, when no run logged them per epoch), with ``--group-by``
``DIR/groups.png`` (bars per group) and with ``--rows`` ``DIR/comparison.png`` (F1 over all questions
and per generalisation level, one bar per row). The charts need matplotlib (the ``plots`` extra).
``--interactive FILE`` (with ``--rows``) also writes an interactive chart of the table — bars per
generalisation level, a menu of metrics, hover and legend toggles — drawn by plotly (the ``plots``
extra too; :mod:`kbqa_lit.tracking.interactive`), linked from the report.

No network: W&B runs are read from their ``.wandb`` files with wandb's own reader in offline mode.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_text_atomic
from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import print_json
from kbqa_lit.tools.eval_tool import GOLD_FORMATS

DEFAULT_OUT = "kbqa_compare.html"
LEARNING_CURVES = "learning_curves.png"
GROUPS = "groups.png"
COMPARISON = "comparison.png"
#: The curves of learning_curves.png (those some run logged per epoch; --metrics chooses others).
PNG_METRICS = ("val/f1", "val/hit1")


def _split_list(values: list[str] | None) -> list[str]:
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]


def register(subparsers: Any) -> None:
    """Add the ``compare`` command to the ``kbqa`` parser."""
    p = subparsers.add_parser(
        "compare",
        help="compare runs (W&B offline runs, CSV logs): a table, an HTML report with tables and charts",
        description=(
            "Read local runs (W&B run directories or .wandb files, folders of them, CSVLogger directories "
            "with metrics.csv) and write an HTML report: final metrics per run with the hyper-parameters "
            "that differ, metric vs hyper-parameter charts (sweeps), metric curves. Prints a short table "
            "(--rows KEY,...: one row per run keyed by run parameters) or, with --json, a JSON summary."
        ),
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories or folders that hold runs")
    p.add_argument(
        "--rows",
        action="append",
        default=None,
        metavar="KEY[,KEY...]",
        help=(
            "one table row per run keyed by these run parameters (e.g. system,form), sorted; the newest run "
            "of a repeated key is kept; columns: --metrics, default the test/ f1, hit1, executable, "
            "questions_per_s and per-level f1 the runs logged"
        ),
    )
    p.add_argument("--json", action="store_true", help="print the full JSON summary instead of the table")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE", help="also write the table as Markdown")
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"HTML report to write (default {DEFAULT_OUT})")
    p.add_argument(
        "--metrics",
        action="append",
        default=None,
        metavar="M1,M2",
        help="metrics to compare, comma-separated (default: val/ and test/ f1, hit1, hit1_any, em, executable)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=None,
        metavar="KEY",
        help=(
            "hyper-parameter to show and plot the metrics against even if it does not differ, by dotted "
            "CLI path or its last part (alpha → model.init_args.alpha); repeatable"
        ),
    )
    p.add_argument("--x", choices=("step", "epoch"), default="step", help="x axis of the metric curves")
    p.add_argument(
        "--png",
        type=Path,
        default=None,
        metavar="DIR",
        help=(
            f"also write DIR/{LEARNING_CURVES} (val/f1, val/hit1 per epoch, when logged), with --group-by "
            f"DIR/{GROUPS}, with --rows DIR/{COMPARISON} (F1 per generalisation level, one bar per row)"
        ),
    )
    p.add_argument(
        "--interactive",
        type=Path,
        default=None,
        metavar="FILE",
        help=(
            "with --rows: also write FILE, an interactive HTML chart of the table (bars per generalisation level, "
            "a menu of metrics; plotly, loaded from plotly.min.js written beside FILE)"
        ),
    )
    p.add_argument(
        "--group-by",
        default=None,
        metavar="KEY",
        help="per-group metrics of --predictions by the gold examples' meta[KEY] (e.g. hops), as kbqa eval --group-by",
    )
    p.add_argument(
        "--predictions",
        action="extend",
        nargs="+",
        type=Path,
        default=None,
        metavar="FILE",
        help=(
            "prediction files (test_predictions_epoch<E>.jsonl of ExecutionGuidedEval, or kbqa eval input) "
            "for --group-by (default: those the compared kbqa test runs wrote)"
        ),
    )
    p.add_argument(
        "--gold",
        type=Path,
        default=None,
        metavar="FILE",
        help="the gold dataset of the predictions (default for a test run's own files: its data.init_args.test_file)",
    )
    p.add_argument("--gold-format", choices=GOLD_FORMATS, default="jsonl", help="format of --gold (default jsonl)")
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    """Compare the runs (``kbqa compare``), write the report and print the table (or the JSON summary).

    Args:
        args: Parsed arguments: ``runs``, ``rows``, ``json``, ``markdown``, ``out``, ``metrics``, ``param``,
            ``x``, ``png``, ``group_by``, ``predictions``, ``gold``, ``gold_format``.

    Returns:
        The exit status (0).

    Raises:
        UserInputError: For a path that holds no run, a metric no run logged, an unknown parameter, a run
            without a ``--rows`` key, ``--predictions`` without ``--group-by``/``--gold``, ``--png`` with
            nothing to draw, or no matplotlib (the ``plots`` extra); all before anything is written.
    """
    from kbqa_lit.tracking.comparison import compare_runs, resolve_param
    from kbqa_lit.tracking.discover import find_runs
    from kbqa_lit.tracking.plotting import require_matplotlib
    from kbqa_lit.tracking.report import render_report
    from kbqa_lit.tracking.rows import parse_keys, rows_table
    from kbqa_lit.tracking.table_text import markdown, print_table, rows_text_table, runs_text_table

    _check_args(args)
    require_matplotlib()  # the report's charts
    runs = find_runs(args.runs)
    params = [resolve_param(runs, name) for name in _split_list(args.param)]
    requested = _split_list(args.metrics)
    comparison = compare_runs(runs, metrics=requested or None, params=params)
    keys = parse_keys(args.rows)
    table = rows_table(runs, keys, _table_metrics(runs, requested, comparison)) if keys else None
    groups = None
    if args.group_by:
        from kbqa_lit.tools.compare_groups import file_sources, group_metrics, test_run_sources

        sources = file_sources(args.predictions, args.gold) if args.predictions else test_run_sources(runs, args.gold)
        groups = group_metrics(sources, args.group_by, args.gold_format)
    plan = _png_plan(runs, requested, groups, table) if args.png is not None else None
    interactive = None
    if args.interactive is not None:
        from kbqa_lit.tracking.interactive import write_interactive

        interactive = write_interactive(table, args.interactive)  # its errors come before it or the report writes
    link = _relative_link(args.interactive, args.out) if interactive else None
    report = render_report(comparison, runs, x_axis=args.x, groups=groups, table=table, interactive=link)
    write_text_atomic(args.out, report)
    summary: dict[str, Any] = {"report": str(args.out), **comparison}
    if table is not None:
        summary["table"] = table.to_json()
        for replaced in table.replaced:
            key = ", ".join(f"{k}={v}" for k, v in replaced["key"].items())
            print(
                f"kbqa compare: several runs for {key}: kept the newest, {replaced['kept']!r}; "
                f"left out {', '.join(repr(n) for n in replaced['dropped'])}",
                file=sys.stderr,
            )
    if groups is not None:
        summary["groups"] = groups
    if interactive is not None:
        summary["interactive"] = interactive
    if plan is not None:
        summary["png"] = _write_pngs(args.png, runs, plan, groups, table)
    text_table = rows_text_table(table) if table is not None else runs_text_table(comparison)
    if args.markdown is not None:
        write_text_atomic(args.markdown, markdown(text_table))
        summary["markdown"] = str(args.markdown)
    if args.json:
        print_json(summary)
    else:
        print_table(text_table, sys.stdout, _notes(summary))
    return 0


def _check_args(args: argparse.Namespace) -> None:
    if args.predictions and not args.gold:
        raise UserInputError("--predictions needs --gold FILE (the gold dataset they answer)")
    if (args.predictions or args.gold) and not args.group_by:
        raise UserInputError("--predictions/--gold are grouped by --group-by KEY (e.g. --group-by hops); give it")
    if args.png is not None and args.png.exists() and not args.png.is_dir():
        raise UserInputError(f"--png {args.png} is a file; give a directory for {LEARNING_CURVES} and the others")
    if args.interactive is not None and not args.rows:
        raise UserInputError("--interactive draws the --rows table; give --rows KEY[,KEY...] (e.g. system,form)")
    for flag, path in (("--out", args.out), ("--markdown", args.markdown), ("--interactive", args.interactive)):
        if path is not None and path.is_dir():
            raise UserInputError(f"{flag} {path} is a directory; give a file name")


def _relative_link(target: Path, page: Path) -> str:
    """``target`` as a link from the page ``page`` (relative where both are on one drive, else absolute)."""
    try:
        return Path(os.path.relpath(target.resolve(), page.resolve().parent)).as_posix()
    except ValueError:
        return target.resolve().as_uri()


def _table_metrics(runs: list, requested: list[str], comparison: dict[str, Any]) -> list[str]:
    """The ``--rows`` table's columns: ``--metrics`` that were logged, else the default test/ metrics."""
    from kbqa_lit.tracking.rows import default_table_metrics

    if requested:
        return [m for m in requested if m not in comparison["missing_metrics"]]
    return default_table_metrics(runs) or list(comparison["metrics"])


def _png_metrics(runs: list, requested: list[str]) -> tuple[list[str], list[str]]:
    """The per-epoch metrics of learning_curves.png (``--metrics`` but test ones, or val/f1 and val/hit1).

    Returns:
        The metrics some run logged (at most 4), and the ones wanted.
    """
    wanted = [m for m in requested if not m.startswith("test/")] or list(PNG_METRICS)
    return [m for m in wanted if any(r.history.get(m) for r in runs)][:4], wanted


def _png_plan(runs: list, requested: list[str], groups: dict | None, table: Any) -> dict[str, Any]:
    """What ``--png`` will draw: ``{"curves": metrics, "comparison": bool, "skipped": {file: reason}}``.

    Raises:
        UserInputError: When there is nothing to draw at all.
    """
    from kbqa_lit.tracking.rows import f1_by_level

    curves, wanted = _png_metrics(runs, requested)
    skipped: dict[str, str] = {}
    if not curves:
        skipped[LEARNING_CURVES] = f"no run logged {', '.join(wanted)} per epoch (choose others with --metrics)"
    comparison = table is not None and bool(f1_by_level(table)[0])
    if table is not None and not comparison:
        skipped[COMPARISON] = "no row logged test/f1 or test/<level>/f1"
    if not (curves or comparison or groups is not None):
        raise UserInputError(
            f"--png: nothing to draw: {'; '.join(skipped.values())}; "
            "--rows KEY,... draws the table's F1 per level, --group-by KEY the metrics per group"
        )
    return {"curves": curves, "comparison": comparison, "skipped": skipped}


def _write_pngs(out_dir: Path, runs: list, plan: dict[str, Any], groups: dict | None, table: Any) -> dict[str, Any]:
    """Write the PNGs of the plan into ``out_dir``; return their paths (``None``: not drawn) and what was skipped."""
    from kbqa_lit.tracking.lineage import join_runs
    from kbqa_lit.tracking.png import comparison_png, groups_png, learning_curves_png

    written: dict[str, Any] = {"learning_curves": None, "groups": None, "comparison": None}
    metrics = plan["curves"]
    if metrics:
        experiments = [e for e in join_runs(runs) if any(e.main.history.get(m) for m in metrics)]
        written["learning_curves"] = str(learning_curves_png(experiments, metrics, out_dir / LEARNING_CURVES))
    if groups is not None:
        written["groups"] = str(groups_png(groups["sources"], groups["key"], ("f1", "hit1"), out_dir / GROUPS))
    if plan["comparison"]:
        written["comparison"] = str(comparison_png(table, out_dir / COMPARISON))
    written["skipped"] = plan["skipped"]
    return written


def _notes(summary: dict[str, Any]) -> list[str]:
    """The lines under the terminal table: metrics not logged, the files written, the PNGs skipped."""
    notes = []
    if summary["missing_metrics"]:
        notes.append(f"not logged by any run: {', '.join(summary['missing_metrics'])}")
    notes.append(f"report: {summary['report']}")
    if "markdown" in summary:
        notes.append(f"markdown: {summary['markdown']}")
    if "interactive" in summary:
        notes.append(f"interactive chart: {summary['interactive']['html']}")
    png = summary.get("png") or {}
    written = [png[k] for k in ("comparison", "learning_curves", "groups") if png.get(k)]
    if written:
        notes.append(f"png: {', '.join(written)}")
    notes.extend(f"png: skipped {name}: {reason}" for name, reason in (png.get("skipped") or {}).items())
    return notes
