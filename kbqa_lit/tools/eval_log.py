"""``kbqa eval --log DIR``: the scores of one prediction file logged as a run (W&B offline or CSV).

Flags (beside ``kbqa eval``'s own)::

    --log DIR --run-name NAME [--run-group GROUP] [--logger wandb|csv] [--param KEY=VALUE]...
    [--timing FILE --timing-step STEP[key=value]...]

``--param`` keys become the run's config (the comparison logs ``system``, ``form`` and ``split``;
with ``system`` and ``form`` given, ``extensions`` defaults to what that form of that system switches on,
:mod:`kbqa_lit.pipelines.selection.forms`); ``--timing`` names a pipeline's timings file
(:mod:`kbqa_lit.runner.timings`) and ``--timing-step`` the steps whose seconds answered these questions,
so the run carries ``test/questions_per_s`` = questions answered (those with a prediction) / those
seconds. See :mod:`kbqa_lit.tracking.run_log`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError, split_key_value
from kbqa_lit.tracking.run_log import LOGGERS


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``--log`` flags to ``kbqa eval``'s parser."""
    g = p.add_argument_group("logging the scores as a run (kbqa compare reads it)")
    g.add_argument("--log", type=Path, default=None, metavar="DIR", help="log the scores as one run under DIR")
    g.add_argument("--run-name", default=None, help="the run's name (required with --log), e.g. coq-paper")
    g.add_argument("--run-group", default="kbqa-eval", help="the W&B group of the run (default: kbqa-eval)")
    g.add_argument("--logger", default="wandb", choices=LOGGERS, help="wandb (offline, default) or csv")
    g.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="a config key of the run (repeatable)"
    )
    g.add_argument("--timing", type=Path, default=None, metavar="FILE", help="a pipeline's timings file")
    g.add_argument(
        "--timing-step",
        action="append",
        default=[],
        metavar="STEP",
        help="a step whose seconds answered the questions, e.g. answers[form=paper] (repeatable)",
    )


def _params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, value = split_key_value(pair, "--param")
        params[key] = value.strip()
    return params


def _form_extensions(system: str, form: str) -> str:
    """The extensions a system's named form switches on, comma-separated (``none`` for the paper form)."""
    from kbqa_lit.pipelines.selection.forms import resolve_form

    return ",".join(resolve_form(system, form).record()["extensions"]) or "none"


def log_eval(args: argparse.Namespace, summary: dict[str, Any]) -> str:
    """Log ``summary`` (``kbqa eval``'s) as a run; return the record file's path.

    Raises:
        UserInputError: ``--run-name`` missing, ``--timing`` and ``--timing-step`` not given together, or a
            timing step that never finished.
    """
    from kbqa_lit.runner.timings import step_seconds
    from kbqa_lit.tracking.run_log import log_run, run_metrics

    if not args.run_name:
        raise UserInputError("--log needs --run-name NAME (e.g. coq-paper)")
    if bool(args.timing) != bool(args.timing_step):
        raise UserInputError("--timing FILE and --timing-step STEP go together")
    params = {"gold": str(args.gold), "predictions": str(args.pred), **_params(args.param)}
    if "system" in params and "form" in params and "extensions" not in params:
        params["extensions"] = _form_extensions(params["system"], params["form"])
    metrics = run_metrics(summary, args.group_by)
    if args.timing is not None:
        seconds = step_seconds(args.timing, args.timing_step)
        params["answer_steps"] = ", ".join(args.timing_step)
        metrics["test/seconds"] = round(seconds, 2)
        answered = summary["n"] - summary.get("missing", 0)  # a --limit run answers fewer than the gold file holds
        if seconds > 0 and answered > 0:
            metrics["test/questions_per_s"] = round(answered / seconds, 3)
    record = log_run(
        args.log, name=args.run_name, group=args.run_group, params=params, metrics=metrics, logger=args.logger
    )
    return str(record)


__all__ = ["add_log_arguments", "log_eval"]
