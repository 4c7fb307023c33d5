"""Find the runs under the paths given to ``kbqa compare`` and read them.

A path may be a run itself — a W&B run directory (``offline-run-*``/``run-*`` holding
``run-<id>.wandb``), a ``.wandb`` file, a CSVLogger ``version_<n>`` directory (``metrics.csv``) —
or any folder above runs (``outputs/``, ``outputs/wandb``, ``outputs/quickstart/logs``), searched
recursively without following symbolic links (W&B's ``latest-run`` link is not read twice).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.csv_runs import is_csv_run, read_csv_run
from kbqa_lit.tracking.runs import RunRecord
from kbqa_lit.tracking.wandb_runs import is_wandb_run, read_wandb_run

NO_RUN_HINT = (
    "expected a W&B run directory (offline-run-*/ with run-*.wandb), a folder holding such runs "
    "(e.g. outputs/wandb), or a CSVLogger directory with metrics.csv (e.g. outputs/quickstart/logs/version_0)"
)


def _kind(path: Path) -> str | None:
    if is_wandb_run(path):
        return "wandb"
    if path.is_dir() and is_csv_run(path):
        return "csv"
    return None


def locate_runs(path: Path) -> list[tuple[str, Path]]:
    """``(kind, run path)`` for ``path`` itself when it is a run, else for every run below it.

    Raises:
        UserInputError: When ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise UserInputError(f"no such file or directory: {path}")
    kind = _kind(path)
    if kind is not None:
        return [(kind, path.parent if path.is_file() else path)]
    found: list[tuple[str, Path]] = []
    for root, dirs, _files in os.walk(path):
        dirs.sort()
        keep = []
        for name in dirs:
            child = Path(root) / name
            if child.is_symlink():
                continue
            child_kind = _kind(child)
            if child_kind is not None:
                found.append((child_kind, child))
            elif not name.startswith("."):
                keep.append(name)
        dirs[:] = keep
    return found


def _unique_names(runs: list[RunRecord]) -> None:
    counts = Counter(r.name for r in runs)
    clashing = [r for r in runs if counts[r.name] > 1]
    if not clashing:
        return
    base = Path(os.path.commonpath([str(r.path.resolve()) for r in clashing]))
    for run in clashing:
        rel = run.path.resolve().relative_to(base) if run.path.resolve() != base else Path(run.path.name)
        run.name = f"{run.name} [{rel.as_posix()}]"
    counts = Counter(r.name for r in runs)
    for i, run in enumerate(r for r in runs if counts[r.name] > 1):
        run.name = f"{run.name} #{i + 1}"


def find_runs(paths: Sequence[str | Path]) -> list[RunRecord]:
    """Read every run found under ``paths`` (each path must hold at least one run).

    Returns:
        The runs in the order of ``paths`` (runs under one folder sorted by path), each read once,
        with unique display names.

    Raises:
        UserInputError: For a missing path or a path that holds no run, naming it.
    """
    if not paths:
        raise UserInputError("no run directory given")
    seen: set[Path] = set()
    runs: list[RunRecord] = []
    for raw in paths:
        located = locate_runs(Path(raw))
        if not located:
            raise UserInputError(f"{raw}: no run found; {NO_RUN_HINT}")
        for kind, run_path in sorted(located, key=lambda kp: str(kp[1])):
            key = run_path.resolve()
            if key in seen:
                continue
            seen.add(key)
            runs.append(read_wandb_run(run_path) if kind == "wandb" else read_csv_run(run_path))
    _unique_names(runs)
    return runs
