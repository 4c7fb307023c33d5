"""Compare runs: which metrics, the hyper-parameters that differ, final values, sweep tables.

The result is a plain JSON-able dict (``kbqa compare`` prints it) that the HTML report renders:

- ``metrics``: the compared metrics — by default ``{val,test}/{f1,hit1,hit1_any,em,executable}``
  that some run logged;
- ``params``: hyper-parameters whose value differs between runs (output locations such as
  checkpoint directories and logger names left out), plus any asked for;
- ``runs``: per run its final and best value of each metric and its value of each such parameter;
- ``sweeps``: per parameter, the runs grouped by its value with the mean final metrics (the shape
  of the CoQ paper's Table 10: α against F1 / Hit@1);
- ``experiments``: each fit run with the ``kbqa test``/``validate`` runs joined to it
  (:mod:`kbqa_lit.tracking.lineage`) and their final metrics side by side; every other run alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.lineage import Experiment, ckpt_path_of, join_runs, run_stage
from kbqa_lit.tracking.runs import RunRecord, as_number

DEFAULT_METRICS = ("f1", "hit1", "hit1_any", "em", "executable")
STAGES = ("val", "test")
#: Hyper-parameters that locate outputs or name the logger: they differ between runs but explain nothing.
IGNORED_PARAMS = re.compile(
    r"(^|\.)(logger)(\.|\[|$)|(^|\.)(dirpath|default_root_dir|save_dir|predictions_dir|ckpt_path|version|"
    r"disk_cache|_instantiator)$"
)
MISSING = "—"


def metric_goal(metric: str) -> str:
    """``"min"`` for losses and error rates, ``"max"`` otherwise."""
    leaf = metric.rsplit("/", 1)[-1]
    return "min" if "loss" in leaf or "error" in leaf or leaf in ("fallback_rate", "perplexity") else "max"


def choose_metrics(runs: Sequence[RunRecord], requested: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """The metrics to compare and those asked for that no run logged.

    Raises:
        UserInputError: When no run logged any requested metric (or, by default, any metric).
    """
    available = set().union(*(r.metric_names() for r in runs)) if runs else set()
    if requested:
        missing = [m for m in requested if m not in available]
        if len(missing) == len(requested):
            shown = ", ".join(sorted(available)[:40]) or "none"
            raise UserInputError(f"no run logged {', '.join(requested)}; the runs logged: {shown}")
        return list(requested), missing
    chosen = [f"{s}/{m}" for s in STAGES for m in DEFAULT_METRICS if f"{s}/{m}" in available]
    if not chosen:
        chosen = sorted(available, key=lambda m: (not m.startswith(("val/", "test/")), m))[:10]
    if not chosen:
        raise UserInputError("the runs logged no metric")
    return chosen, []


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _preference(key: str) -> tuple[int, int, str]:
    return ("[" in key, len(key), key)


def differing_params(runs: Sequence[RunRecord], explicit: Sequence[str] = ()) -> list[str]:
    """Hyper-parameters with two or more values among the runs that have them, after ``explicit`` ones.

    A key some runs lack (they logged no resolved config, or a different module) is not a difference
    by itself.

    Two keys with the same last path segment and the same value in every run (a W&B sweep parameter
    ``trainer.callbacks.init_args.num_beams`` and the resolved ``trainer.callbacks[1].init_args.num_beams``)
    are shown once, under the shorter name.
    """
    keys = sorted(set().union(*(r.params for r in runs))) if runs else []
    vectors: dict[str, tuple[str, ...]] = {}
    for key in keys:
        if key in explicit or IGNORED_PARAMS.search(key):
            continue
        vector = tuple(_canon(r.params.get(key, MISSING)) for r in runs)
        if len({_canon(r.params[key]) for r in runs if key in r.params}) > 1:
            vectors[key] = vector
    kept: list[str] = []
    for key in sorted(vectors, key=_preference):
        leaf = re.split(r"[.\]]", key)[-1]
        if any(re.split(r"[.\]]", k)[-1] == leaf and vectors[k] == vectors[key] for k in kept):
            continue
        kept.append(key)
    return [*explicit, *sorted(kept)]


def resolve_param(runs: Sequence[RunRecord], name: str) -> str:
    """The hyper-parameter key ``name`` refers to: itself, or the one key ending in ``.name``.

    ``alpha`` finds ``model.init_args.alpha``; ``num_beams`` finds
    ``trainer.callbacks[1].init_args.num_beams`` when only one key ends so.

    Raises:
        UserInputError: When no run has such a key, or several keys end with ``name``.
    """
    keys = set().union(*(r.params for r in runs)) if runs else set()
    if name in keys:
        return name
    matches = sorted(k for k in keys if k.endswith(("." + name, "]" + name)))
    vectors = {tuple(_canon(r.params.get(k, MISSING)) for r in runs) for k in matches}
    if len(vectors) == 1:  # one key, or the same values under several names (a sweep name and the resolved path)
        return min(matches, key=_preference)
    if matches:
        raise UserInputError(f"--param {name} is ambiguous: {', '.join(matches)}")
    near = sorted(k for k in keys if name.rsplit(".", 1)[-1] in k)[:10]
    hint = f"; similar: {', '.join(near)}" if near else ""
    raise UserInputError(f"no run has the hyper-parameter {name!r}{hint}")


def _sort_key(value: Any) -> tuple[int, float, str]:
    number = as_number(value)
    return (0, number, "") if number is not None else (1, 0.0, _canon(value))


def sweep_table(runs: Sequence[RunRecord], param: str, metrics: Sequence[str]) -> dict[str, Any]:
    """Runs grouped by their value of ``param``: per value the run count, names and mean final metrics."""
    groups: dict[str, list[RunRecord]] = {}
    values: dict[str, Any] = {}
    for run in runs:
        if param not in run.params:
            continue
        key = _canon(run.params[param])
        groups.setdefault(key, []).append(run)
        values[key] = run.params[param]
    rows = []
    for key in sorted(groups, key=lambda k: _sort_key(values[k])):
        members = groups[key]
        mean: dict[str, float | None] = {}
        for metric in metrics:
            finals = [v for r in members if (v := r.final(metric)) is not None]
            mean[metric] = fmean(finals) if finals else None
        rows.append({"value": values[key], "n": len(members), "runs": [r.name for r in members], "mean": mean})
    numeric = bool(rows) and all(as_number(r["value"]) is not None for r in rows)
    return {"param": param, "numeric": numeric, "rows": rows}


def experiment_rows(experiments: Sequence[Experiment], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """The joined runs as JSON: per experiment its main run, its evaluation runs and their final metrics.

    ``final`` takes each metric from the main run, else from the latest evaluation run that logged it
    (a fit run's ``test/f1`` is its test run's).
    """
    rows = []
    for exp in experiments:
        final = {m: exp.main.final(m) for m in metrics}
        for test in exp.tests:  # oldest first: the latest test run wins
            for m in metrics:
                value = test.final(m)
                if value is not None and exp.main.final(m) is None:
                    final[m] = value
        tests = [
            {
                "name": t.name,
                "stage": run_stage(t),
                "joined_by": exp.joined_by.get(t.name),
                "ckpt_path": ckpt_path_of(t),
                "final": {m: t.final(m) for m in metrics},
            }
            for t in exp.tests
        ]
        rows.append({"name": exp.main.name, "stage": run_stage(exp.main), "tests": tests, "final": final})
    return rows


def compare_runs(
    runs: Sequence[RunRecord],
    metrics: Sequence[str] | None = None,
    params: Sequence[str] = (),
    max_sweeps: int = 6,
) -> dict[str, Any]:
    """The comparison of ``runs`` as a JSON-able dict (see the module docstring).

    Args:
        runs: The runs, in display order.
        metrics: Metrics to compare (default: the standard KBQA metrics that were logged).
        params: Hyper-parameters to show and sweep over even when they do not differ.
        max_sweeps: At most this many parameters get a sweep table (the asked-for ones first).

    Raises:
        UserInputError: When no run logged any of the metrics.
    """
    chosen, missing = choose_metrics(runs, metrics)
    shown = differing_params(runs, params)
    sweeps = [sweep_table(runs, p, chosen) for p in shown[:max_sweeps]]
    return {
        "metrics": chosen,
        "missing_metrics": missing,
        "goals": {m: metric_goal(m) for m in chosen},
        "params": shown,
        "runs": [
            {
                "name": r.name,
                "kind": r.kind,
                "path": str(r.path),
                "run_id": r.run_id,
                "state": r.state,
                "last_step": r.last_step(),
                "final": {m: r.final(m) for m in chosen},
                "best": {m: r.best(m, metric_goal(m)) for m in chosen},
                "params": {p: r.params.get(p) for p in shown},
                "stage": run_stage(r),
                "hparams": r.hparams,
            }
            for r in runs
        ],
        "sweeps": [s for s in sweeps if len(s["rows"]) > 1],
        "experiments": experiment_rows(join_runs(list(runs)), chosen),
    }
