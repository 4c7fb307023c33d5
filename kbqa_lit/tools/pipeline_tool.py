"""``kbqa pipeline``: run (or resume) a multi-stage pipeline file of ``kbqa`` commands.

``kbqa pipeline CONFIG.yaml [--quick] [--set NAME=VALUE ...] [--from STEP | --only STEP] [--force]
[--[no-]warm] [--dry-run]`` runs the steps of a pipeline file in order (see :mod:`kbqa_lit.runner.chain`
for the file format), skipping every step whose outputs already exist, and prints one JSON
object: ``{"pipeline", "steps": [{"step", "binding", "status", "seconds"}], "seconds"}``.
``--dry-run`` prints the commands instead (``"commands": [...]``) and runs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import time
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError, split_key_value
from kbqa_lit.runner import warm as runner_warm
from kbqa_lit.runner.chain import load_pipeline, run_commands, select_commands
from kbqa_lit.runner.guard import RunGuard, guard_folder
from kbqa_lit.tools.common import print_json


def _assignment(text: str) -> tuple[str, str]:
    return split_key_value(text, "a variable", error=argparse.ArgumentTypeError, form="NAME=VALUE")


def register(subparsers: Any) -> None:
    """Add the ``pipeline`` command to the ``kbqa`` parser."""
    p = subparsers.add_parser(
        "pipeline",
        help="run or resume a multi-stage pipeline of kbqa commands (e.g. CoQ end to end)",
        description=(
            "Run the steps of a pipeline YAML in order, each as its own `kbqa` process; steps whose "
            "outputs exist are skipped, so re-running resumes. Prints a JSON summary."
        ),
    )
    p.add_argument("config", type=Path, help="pipeline YAML (vars + steps)")
    p.add_argument("--quick", action="store_true", help="append each step's `quick` arguments (a smoke run)")
    p.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        type=_assignment,
        metavar="NAME=VALUE",
        help="override a variable of the file's `vars` (repeatable)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--from", dest="start", default=None, metavar="STEP", help="start at this step")
    group.add_argument("--only", default=None, metavar="STEP", help="run only this step")
    p.add_argument("--force", action="store_true", help="re-run steps whose outputs exist")
    p.add_argument(
        "--warm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "fork each command from one process that imported torch and Lightning once, instead of a fresh "
            "`python -m kbqa_lit` (saves ~7 s of start-up per step; step seconds then leave it out). "
            "Default: on with --quick and in a command run warm (a nested pipeline), off otherwise"
        ),
    )
    p.add_argument("--dry-run", action="store_true", help="print the commands without running them")
    p.set_defaults(func=run_pipeline_tool)


def run_pipeline_tool(args: argparse.Namespace) -> int:
    """Run ``kbqa pipeline``.

    Returns:
        0 on success (failures raise :class:`~kbqa_lit.errors.KBQAError`).
    """
    pipeline = load_pipeline(args.config, dict(args.assignments))
    commands = select_commands(
        pipeline.commands(quick=args.quick), [s.name for s in pipeline.steps], start=args.start, only=args.only
    )
    if not commands:
        raise UserInputError(f"{args.config}: nothing to run")
    folder = guard_folder(pipeline.timings, [o for c in commands for o in c.outputs])
    guard = RunGuard(folder) if folder is not None else None
    if args.dry_run:
        rows = [
            {
                "step": c.step,
                "command": "kbqa " + shlex.join(c.argv),
                "done": c.done(guard),
                "outputs": [str(o) for o in c.outputs],
            }
            for c in commands
        ]
        print_json({"pipeline": str(args.config), "commands": rows})
        return 0
    start = time.perf_counter()
    warm = (args.quick or runner_warm.is_warm()) if args.warm is None else args.warm
    with guard if guard is not None else contextlib.nullcontext():
        records = run_commands(commands, force=args.force, timings=pipeline.timings, warm=warm, guard=guard)
    print_json({"pipeline": str(args.config), "steps": records, "seconds": round(time.perf_counter() - start, 2)})
    return 0
