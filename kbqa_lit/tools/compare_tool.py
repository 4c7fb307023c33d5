"""``kbqa compare``: compare logged runs (W&B offline or synced runs, CSV logs) in one HTML report.

``kbqa compare RUN_DIR... [--out report.html] [--metrics val/f1,val/hit1,...] [--param KEY]...
[--x step|epoch] [--png DIR] [--group-by KEY [--predictions FILE... --gold FILE]]`` reads every run
found under the given paths (a W&B run directory, a folder of ``offline-run-*`` directories such as
``outputs/wandb``, a CSVLogger ``version_<n>`` directory or a folder above them), writes a
self-contained HTML report (final metrics per run with the hyper-parameters that differ, each
``kbqa test`` run joined to the fit run it evaluated, the logged hyper-parameters, per-group
metrics, one chart per swept hyper-parameter — e.g. α against F1 and Hit@1 as in the CoQ paper's
Table 10 — and metric curves) and prints a JSON summary::

    {"report", "metrics", "missing_metrics", "goals", "params",
     "runs": [{"name", "kind", "path", "run_id", "state", "last_step", "final", "best", "params",
               "stage", "hparams"}],
     "sweeps": [{"param", "numeric", "rows": [{"value", "n", "runs", "mean"}]}],
     "experiments": [{"name", "stage", "final", "tests": [{"name", "stage", "joined_by", "ckpt_path", "final"}]}],
     "groups"?: {"key", "files": {label: {"predictions", "gold"}}, "sources": {label: {value: {"n", "f1", ...}}}},
     "png"?: {"learning_curves", "groups"}}

``--group-by KEY`` adds per-group metrics (``kbqa eval --group-by``'s grouping by the gold examples'
``meta[KEY]``, e.g. MetaQA's ``hops``) of ``--predictions`` against ``--gold``, by default of the
prediction files the compared ``kbqa test`` runs wrote against their own test files
(:mod:`kbqa_lit.tools.compare_groups`). ``--png DIR`` also writes ``DIR/learning_curves.png``
(``val/f1`` and ``val/hit1`` per epoch, one line per run, joined test values as stars) and, with
``--group-by``, ``DIR/groups.png`` (bars per group); it needs matplotlib (the ``dev`` extra).

No network: W&B runs are read from their ``.wandb`` files with wandb's own reader in offline mode.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_text_atomic
from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import print_json
from kbqa_lit.tools.eval_tool import GOLD_FORMATS

DEFAULT_OUT = "kbqa_compare.html"
LEARNING_CURVES = "learning_curves.png"
GROUPS = "groups.png"
#: The curves of learning_curves.png (those some run logged per epoch; --metrics chooses others).
PNG_METRICS = ("val/f1", "val/hit1")


def _split_list(values: list[str] | None) -> list[str]:
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]


def register(subparsers: Any) -> None:
    """Add the ``compare`` command to the ``kbqa`` parser."""
    p = subparsers.add_parser(
        "compare",
        help="compare runs (W&B offline runs, CSV logs): HTML report with tables and plots, JSON summary",
        description=(
            "Read local runs (W&B run directories or .wandb files, folders of them, CSVLogger directories "
            "with metrics.csv) and write an HTML report: final metrics per run with the hyper-parameters "
            "that differ, metric vs hyper-parameter charts (sweeps), metric curves. Prints a JSON summary."
        ),
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories or folders that hold runs")
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
        help=f"also write DIR/{LEARNING_CURVES} (val/f1, val/hit1 per epoch) and, with --group-by, DIR/{GROUPS}",
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
    """Compare the runs (``kbqa compare``), write the report and print the JSON summary.

    Args:
        args: Parsed arguments: ``runs``, ``out``, ``metrics``, ``param``, ``x``, ``png``, ``group_by``,
            ``predictions``, ``gold``, ``gold_format``.

    Returns:
        The exit status (0).

    Raises:
        UserInputError: For a path that holds no run, a metric no run logged, an unknown parameter,
            ``--predictions`` without ``--group-by``/``--gold``, ``--png`` without matplotlib.
    """
    from kbqa_lit.tracking.comparison import compare_runs, resolve_param
    from kbqa_lit.tracking.discover import find_runs
    from kbqa_lit.tracking.report import render_report

    _check_group_args(args)
    if args.png is not None:
        from kbqa_lit.tracking.png import require_matplotlib

        require_matplotlib()
    runs = find_runs(args.runs)
    params = [resolve_param(runs, name) for name in _split_list(args.param)]
    requested = _split_list(args.metrics)
    comparison = compare_runs(runs, metrics=requested or None, params=params)
    if args.out.is_dir():
        raise UserInputError(f"--out {args.out} is a directory; give a file name such as report.html")
    png_metrics = _png_metrics(runs, requested) if args.png is not None else []
    groups = None
    if args.group_by:
        from kbqa_lit.tools.compare_groups import file_sources, group_metrics, test_run_sources

        sources = file_sources(args.predictions, args.gold) if args.predictions else test_run_sources(runs, args.gold)
        groups = group_metrics(sources, args.group_by, args.gold_format)
    write_text_atomic(args.out, render_report(comparison, runs, x_axis=args.x, groups=groups))
    summary: dict[str, Any] = {"report": str(args.out), **comparison}
    if groups is not None:
        summary["groups"] = groups
    if args.png is not None:
        summary["png"] = _write_pngs(args.png, runs, png_metrics, groups)
    print_json(summary)
    return 0


def _check_group_args(args: argparse.Namespace) -> None:
    if args.predictions and not args.gold:
        raise UserInputError("--predictions needs --gold FILE (the gold dataset they answer)")
    if (args.predictions or args.gold) and not args.group_by:
        raise UserInputError("--predictions/--gold are grouped by --group-by KEY (e.g. --group-by hops); give it")
    if args.png is not None and args.png.exists() and not args.png.is_dir():
        raise UserInputError(f"--png {args.png} is a file; give a directory for {LEARNING_CURVES} and {GROUPS}")


def _png_metrics(runs: list, requested: list[str]) -> list[str]:
    """The per-epoch metrics of learning_curves.png: ``--metrics`` (but test ones) or val/f1 and val/hit1."""
    wanted = [m for m in requested if not m.startswith("test/")] or list(PNG_METRICS)
    metrics = [m for m in wanted if any(r.history.get(m) for r in runs)][:4]
    if not metrics:
        raise UserInputError(f"--png: no run logged {', '.join(wanted)} per epoch (choose others with --metrics)")
    return metrics


def _write_pngs(out_dir: Path, runs: list, metrics: list[str], groups: dict | None) -> dict[str, str | None]:
    """Write learning_curves.png (and groups.png with groups) into ``out_dir``; return their paths."""
    from kbqa_lit.tracking.lineage import join_runs
    from kbqa_lit.tracking.png import groups_png, learning_curves_png

    written: dict[str, str | None] = {"learning_curves": None, "groups": None}
    experiments = [e for e in join_runs(runs) if any(e.main.history.get(m) for m in metrics)]
    written["learning_curves"] = str(learning_curves_png(experiments, metrics, out_dir / LEARNING_CURVES))
    if groups is not None:
        written["groups"] = str(groups_png(groups["sources"], groups["key"], ("f1", "hit1"), out_dir / GROUPS))
    return written
