"""``kbqa compare``: compare logged runs (W&B offline or synced runs, CSV logs) in one HTML report.

``kbqa compare RUN_DIR... [--out report.html] [--metrics val/f1,val/hit1,...] [--param KEY]...
[--x step|epoch]`` reads every run found under the given paths (a W&B run directory, a folder of
``offline-run-*`` directories such as ``outputs/wandb``, a CSVLogger ``version_<n>`` directory or a
folder above them), writes a self-contained HTML report (final metrics per run with the
hyper-parameters that differ, one chart per swept hyper-parameter — e.g. α against F1 and Hit@1 as
in the CoQ paper's Table 10 — and metric curves) and prints a JSON summary::

    {"report", "metrics", "missing_metrics", "goals", "params",
     "runs": [{"name", "kind", "path", "run_id", "state", "last_step", "final", "best", "params"}],
     "sweeps": [{"param", "numeric", "rows": [{"value", "n", "runs", "mean"}]}]}

No network: W&B runs are read from their ``.wandb`` files with wandb's own reader in offline mode.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import print_json

DEFAULT_OUT = "kbqa_compare.html"


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
    p.set_defaults(func=run_compare)


def _write_atomic(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()


def run_compare(args: argparse.Namespace) -> int:
    """Compare the runs (``kbqa compare``), write the report and print the JSON summary.

    Args:
        args: Parsed arguments: ``runs``, ``out``, ``metrics``, ``param``, ``x``.

    Returns:
        The exit status (0).

    Raises:
        UserInputError: For a path that holds no run, a metric no run logged, an unknown parameter.
    """
    from kbqa_lit.tracking.comparison import compare_runs, resolve_param
    from kbqa_lit.tracking.discover import find_runs
    from kbqa_lit.tracking.report import render_report

    runs = find_runs(args.runs)
    params = [resolve_param(runs, name) for name in _split_list(args.param)]
    comparison = compare_runs(runs, metrics=_split_list(args.metrics) or None, params=params)
    if args.out.is_dir():
        raise UserInputError(f"--out {args.out} is a directory; give a file name such as report.html")
    _write_atomic(render_report(comparison, runs, x_axis=args.x), args.out)
    print_json({"report": str(args.out), **comparison})
    return 0
