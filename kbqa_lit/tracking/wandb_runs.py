"""Read a W&B run directory (``wandb/offline-run-*/`` or a synced ``wandb/run-*/``) without the network.

An offline run is only its transaction log ``run-<id>.wandb`` (no ``wandb-summary.json``, no
``config.yaml``). wandb 0.31 no longer ships a Python reader for it; its own reader is the
``wandb-core`` binary behind ``wandb leet inspect --json`` (one JSON object per record: ``run``,
``config``, ``history``, ``summary``, ``exit``...). This module runs that binary directly (tens of
milliseconds) and falls back to ``python -m wandb leet inspect --json`` (about 2 s), always with
``WANDB_MODE=offline`` and error reporting off, so nothing leaves the machine.

The run's config holds what Lightning logged (the module's and datamodule's hyper-parameters, and
``config_yaml``, the resolved CLI config) plus, for a sweep run, the sweep parameters by their CLI
path. Histories use ``trainer/global_step`` (what ``WandbLogger`` logs) as the step, else W&B's ``_step``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.runs import (
    CLI_ROOTS,
    MetricPoint,
    RunRecord,
    as_number,
    logged_hparams,
    logged_stage,
    run_params,
)

RUN_FILE_GLOB = "run-*.wandb"
STEP_KEY = "trainer/global_step"
#: History keys that index a row rather than being metrics.
INDEX_KEYS = frozenset({STEP_KEY, "epoch"})
TIMEOUT_S = 300.0


def run_file_of(path: Path) -> Path | None:
    """The ``run-<id>.wandb`` file of a run directory (or ``path`` itself when it is one), else ``None``."""
    if path.is_file():
        return path if path.suffix == ".wandb" else None
    files = sorted(path.glob(RUN_FILE_GLOB), key=lambda p: p.stat().st_mtime)
    return files[-1] if files else None


def is_wandb_run(path: Path) -> bool:
    """Whether ``path`` is a W&B run directory or ``.wandb`` file."""
    return run_file_of(path) is not None


def _core_binary() -> Path | None:
    spec = importlib.util.find_spec("wandb")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "bin" / "wandb-core"
    return binary if binary.is_file() else None


def _reader_commands(run_file: Path) -> list[list[str]]:
    commands = []
    core = _core_binary()
    if core is not None:
        commands.append(
            [str(core), "leet", "inspect", "--no-observability", "--json", "--run-file", str(run_file)]
            + [str(run_file.parent.parent)]
        )
    commands.append([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(run_file)])
    return commands


def inspect_records(run_file: Path, timeout: float = TIMEOUT_S) -> list[dict[str, Any]]:
    """The records of a ``.wandb`` transaction log, as wandb's inspector prints them.

    Raises:
        UserInputError: When wandb is not installed or cannot read the file.
    """
    if importlib.util.find_spec("wandb") is None:
        raise UserInputError(f"{run_file}: reading W&B runs needs the wandb package")
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_ERROR_REPORTING": "false", "WANDB_SILENT": "true"}
    reason = "no output"
    for command in _reader_commands(run_file):
        try:
            proc = subprocess.run(command, capture_output=True, env=env, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = str(exc)
            continue
        records = list(_parse_lines(proc.stdout.decode("utf-8", errors="replace").splitlines()))
        if proc.returncode == 0 and records:
            return records
        err = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        if err:
            reason = err[-1]
        elif proc.returncode == 0:
            reason = "no records: an empty run file"
        else:
            reason = f"exit status {proc.returncode}"
    raise UserInputError(f"{run_file}: wandb could not read this run ({reason})")


def _parse_lines(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "type" in obj:
            yield obj


def _apply_update(target: dict[str, Any], body: Mapping[str, Any]) -> None:
    update = body.get("update")
    if isinstance(update, Mapping):
        target.update(update)
    for key in body.get("remove") or []:
        name = key.get("key") if isinstance(key, Mapping) else key
        if isinstance(name, str):
            target.pop(name, None)


def numeric_metrics(item: Mapping[str, Any]) -> dict[str, float]:
    """The metric values of a history row or summary: finite numbers, without ``_`` keys and row indices.

    Media (tables, images) are logged as ``<key>._type`` plus numeric fields such as ``<key>.nrows``:
    those are not metrics either.
    """
    media = tuple(k[: -len("_type")] for k in item if k.endswith("._type"))
    out = {}
    for key, value in item.items():
        number = as_number(value)
        if number is None or key.startswith("_") or key in INDEX_KEYS or (media and key.startswith(media)):
            continue
        out[key] = number
    return out


def _history_row(body: Mapping[str, Any], history: dict[str, list[MetricPoint]]) -> None:
    item = body.get("item") or {}
    step = as_number(item.get(STEP_KEY))
    if step is None:
        step = as_number(item.get("_step"))
    if step is None:
        step = as_number((body.get("step") or {}).get("num"))
    epoch = as_number(item.get("epoch"))
    for key, number in numeric_metrics(item).items():
        history.setdefault(key, []).append(MetricPoint(step, epoch, number))


def records_to_run(records: Iterable[Mapping[str, Any]], path: Path) -> RunRecord:
    """Build a :class:`RunRecord` from inspector records (``run``, ``config``, ``history``, ``summary``, ``exit``)."""
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    history: dict[str, list[MetricPoint]] = {}
    run_id = display_name = None
    exit_code: int | None = None
    for rec in records:
        kind = rec.get("type")
        body = rec.get(kind) if isinstance(kind, str) else None
        if not isinstance(body, Mapping):
            continue
        if kind == "run":
            run_id = body.get("run_id") or run_id
            display_name = body.get("display_name") or display_name
            _apply_update(config, body.get("config") or {})
        elif kind == "config":
            _apply_update(config, body)
        elif kind == "summary":
            _apply_update(summary, body)
        elif kind == "history":
            _history_row(body, history)
        elif kind == "exit":
            exit_code = int(body.get("exit_code") or 0)
    final = numeric_metrics(summary)
    for key, points in history.items():
        final.setdefault(key, points[-1].value)
    state = "unfinished" if exit_code is None else ("finished" if exit_code == 0 else "crashed")
    run_id = run_id or path.name.rsplit("-", 1)[-1]
    return RunRecord(
        name=f"{display_name} ({run_id})" if display_name else str(run_id),
        kind="wandb",
        path=path,
        params=run_params({k: v for k, v in config.items() if k != "_wandb"}),
        history=history,
        summary=final,
        state=state,
        run_id=str(run_id),
        stage=logged_stage(config),
        hparams={k: v for k, v in logged_hparams(config).items() if k.split(".")[0] not in CLI_ROOTS},
    )


def read_wandb_run(path: Path) -> RunRecord:
    """Read a W&B run directory (or its ``.wandb`` file).

    Raises:
        UserInputError: When ``path`` holds no ``run-*.wandb`` file or wandb cannot read it.
    """
    path = Path(path)
    run_file = run_file_of(path)
    if run_file is None:
        raise UserInputError(f"{path}: no {RUN_FILE_GLOB} file (not a W&B run directory)")
    return records_to_run(inspect_records(run_file), run_file.parent)
