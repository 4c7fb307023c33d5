"""Join the runs of one experiment: a ``kbqa fit`` run and the ``kbqa test``/``validate`` runs of it.

A ``kbqa test`` with the config of a fit run writes a run of its own (CSVLogger: the next
``version_<n>``; W&B: a new run). Left alone, a comparison shows the two as unrelated runs. A test
run belongs to a fit run when (strongest first):

1. **checkpoint** — its ``ckpt_path`` (``kbqa test --ckpt_path ...``, recorded in its resolved
   config) lies in a checkpoint directory of the fit run: the ``dirpath`` of one of its
   ``ModelCheckpoint`` callbacks, or Lightning's default ``<run dir>/checkpoints`` (without a
   ``dirpath``). A relative path is resolved against the folder the run started in, found by
   matching the logger's ``save_dir`` against the run directory's own path (so two copies of one
   experiment in different folders stay apart); when that is unknown, relative paths are compared
   as written, and a relative path matches an absolute one that ends with it;
2. **config** — it has no such checkpoint (or one no fit run wrote) and its ``model.*`` and
   ``data.*`` hyper-parameters equal the fit run's (output locations aside): the same experiment,
   though without ``--ckpt_path`` it tested untrained weights (the report says so).

When several fit runs qualify (re-runs writing to one checkpoint folder), the latest one started
before the test run wins, then the latest one. A run's stage is what
:class:`~kbqa_lit.lightning_cli.LoggerSaveConfigCallback` logged (``stage``); for runs without it,
``train/`` metrics mean ``fit``, only ``test/`` metrics ``test``, only ``val/`` ones ``validate``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from kbqa_lit.tracking.runs import RunRecord

#: Stages whose runs evaluate a model trained elsewhere.
EVAL_STAGES = ("test", "validate")
CHECKPOINT_CLASS = "ModelCheckpoint"
#: Keys that locate outputs or name the logger: they never make two configs different experiments.
_OUTPUT_KEY = re.compile(
    r"(^|\.)(logger)(\.|\[|$)|(^|\.)(dirpath|default_root_dir|save_dir|predictions_dir|ckpt_path|version|"
    r"disk_cache|cache_dir|_instantiator)$"
)


@dataclass
class Experiment:
    """A fit run with the evaluation runs joined to it (or one run that joins nothing).

    Attributes:
        main: The fit run (or the lone run of any stage).
        tests: Evaluation runs of ``main``, oldest first.
        joined_by: Per evaluation run name, ``"checkpoint"`` or ``"config"``.
    """

    main: RunRecord
    tests: list[RunRecord] = field(default_factory=list)
    joined_by: dict[str, str] = field(default_factory=dict)


def run_stage(run: RunRecord) -> str:
    """``fit``, ``validate``, ``test``, ``predict`` or ``unknown`` (see the module docstring)."""
    if run.stage:
        return run.stage
    prefixes = {name.split("/", 1)[0] for name in run.metric_names() if "/" in name}
    if "train" in prefixes:
        return "fit"
    if prefixes == {"test"}:
        return "test"
    if prefixes == {"val"}:
        return "validate"
    return "unknown"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def checkpoint_dirs(run: RunRecord) -> list[str]:
    """The folders the run's ``ModelCheckpoint`` callbacks wrote to (``dirpath``, else ``<run dir>/checkpoints``)."""
    dirs: list[str] = []
    for key, value in run.params.items():
        match = re.fullmatch(r"(trainer\.callbacks(?:\[\d+\])?)\.class_path", key)
        if match and isinstance(value, str) and value.rsplit(".", 1)[-1] == CHECKPOINT_CLASS:
            dirpath = _text(run.params.get(f"{match.group(1)}.init_args.dirpath"))
            dirs.append(dirpath or str(run.path / "checkpoints"))
    if not dirs and run.params.get("trainer.enable_checkpointing") is not False:
        dirs.append(str(run.path / "checkpoints"))  # Lightning's default callback
    return dirs


def run_cwd(run: RunRecord) -> Path | None:
    """The folder the run was started in: its directory's ancestor above the logger's relative ``save_dir``."""
    for key, value in run.params.items():
        if not re.fullmatch(r"trainer\.logger(?:\[\d+\])?\.init_args\.save_dir", key) or not _text(value):
            continue
        save = PurePath(os.path.normpath(value))
        if save.is_absolute():
            continue
        parts = [p for p in save.parts if p != "."]
        for ancestor in Path(os.path.abspath(run.path)).parents:
            if parts and list(ancestor.parts[-len(parts) :]) == parts:
                return Path(*ancestor.parts[: -len(parts)])
    return None


def _absolute(path: str, run: RunRecord) -> str:
    if PurePath(path).is_absolute():
        return os.path.normpath(path)
    cwd = run_cwd(run)
    return os.path.normpath(cwd / path) if cwd is not None else os.path.normpath(path)


def _same_dir(a: str, b: str) -> bool:
    pa, pb = PurePath(os.path.normpath(a)), PurePath(os.path.normpath(b))
    if pa == pb:
        return True
    if pa.is_absolute() == pb.is_absolute():
        return False
    rel, absolute = (pa, pb) if pb.is_absolute() else (pb, pa)
    rel_parts = [p for p in rel.parts if p != "."]
    return bool(rel_parts) and list(absolute.parts[-len(rel_parts) :]) == rel_parts


def ckpt_path_of(run: RunRecord) -> str | None:
    """The checkpoint an evaluation run loaded (its resolved config's ``ckpt_path``), if any."""
    return _text(run.params.get("ckpt_path"))


def _experiment_config(run: RunRecord) -> str:
    keys = sorted(k for k in run.params if k.startswith(("model.", "data.")) and not _OUTPUT_KEY.search(k))
    return json.dumps({k: run.params[k] for k in keys}, sort_keys=True, default=str)


def _started(run: RunRecord) -> float:
    for candidate in (run.path / "hparams.yaml", run.path):
        try:
            return candidate.stat().st_mtime
        except OSError:
            continue
    return 0.0


def _pick(candidates: list[RunRecord], test: RunRecord) -> RunRecord:
    started = _started(test)
    before = [r for r in candidates if _started(r) <= started]
    return max(before or candidates, key=lambda r: (_started(r), str(r.path)))


def parent_fit(test: RunRecord, fits: list[RunRecord]) -> tuple[RunRecord, str] | None:
    """The fit run ``test`` evaluated and how it was found (``checkpoint``/``config``), or ``None``."""
    ckpt = ckpt_path_of(test)
    if ckpt is not None:
        folder = _absolute(str(PurePath(ckpt).parent), test)
        by_ckpt = [f for f in fits if any(_same_dir(folder, _absolute(d, f)) for d in checkpoint_dirs(f))]
        if by_ckpt:
            config = _experiment_config(test)
            same = [f for f in by_ckpt if _experiment_config(f) == config]
            return _pick(same or by_ckpt, test), "checkpoint"
    if not any(k.startswith(("model.", "data.")) for k in test.params):
        return None
    config = _experiment_config(test)
    by_config = [f for f in fits if _experiment_config(f) == config]
    return (_pick(by_config, test), "config") if by_config else None


def join_runs(runs: list[RunRecord]) -> list[Experiment]:
    """Group ``runs`` into experiments: each fit run with its evaluation runs; other runs alone.

    Returns:
        Experiments in the order of their main run in ``runs``; evaluation runs oldest first.
    """
    fits = [r for r in runs if run_stage(r) == "fit"]
    experiments = {id(r): Experiment(r) for r in runs}
    joined: set[int] = set()
    for run in runs:
        if run_stage(run) not in EVAL_STAGES:
            continue
        found = parent_fit(run, fits)
        if found is None:
            continue
        fit, how = found
        experiments[id(fit)].tests.append(run)
        experiments[id(fit)].joined_by[run.name] = how
        joined.add(id(run))
    out = [experiments[id(r)] for r in runs if id(r) not in joined]
    for exp in out:
        exp.tests.sort(key=lambda r: (_started(r), str(r.path)))
    return out
