"""Log one scored prediction file as a run (W&B offline or CSV), so that ``kbqa compare`` can read it.

The comparison (``configs/compare/``) scores each system × form with ``kbqa eval ... --log DIR``:
one run per row, all in one group, with the row's identity (``system``, ``form``, ``extensions``,
``split``...) as config keys and the scores as summary metrics:

- ``test/n``, ``test/f1``, ``test/hit1``, ``test/hit1_any``, ``test/executable``, ``test/em`` (those
  the evaluation reported), ``test/questions_per_s`` when the answering time is known;
- ``test/<value>/<metric>`` per value of the first grouping key (``--group-by generalization``:
  ``test/iid/f1``, ``test/compositional/f1``, ``test/zero-shot/f1``), and ``test/<key>/<value>/<metric>``
  per value of each later one (``--group-by kbcheck``: ``test/kbcheck/exact/f1``).

W&B runs are written offline (``DIR/wandb/offline-run-*``; ``wandb sync`` uploads them);
CSV runs are Lightning ``CSVLogger`` folders (``DIR/<group>/<name>/``). Beside the run, ``DIR/<name>.json``
records what was logged (written last and atomically: a pipeline step's output).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_json_atomic
from kbqa_lit.errors import UserInputError, check_choice

LOGGERS = ("wandb", "csv")
#: The evaluation's metrics that become run metrics (when reported).
RUN_METRICS = ("n", "f1", "hit1", "hit1_any", "executable", "em")
#: The W&B project the runs are logged under (as configs/logger/wandb_offline.yaml).
PROJECT = "kbqa_lit"


def run_metrics(summary: Mapping[str, Any], group_keys: str | Sequence[str] | None = None) -> dict[str, float]:
    """The run metrics of a ``kbqa eval`` summary (see the module docstring).

    Args:
        summary: ``kbqa eval``'s summary (its ``by`` holds the ``--group-by`` groups).
        group_keys: The grouping keys, in ``--group-by`` order: the first one's values make the level
            metrics ``test/<value>/<metric>``; each later key's make ``test/<key>/<value>/<metric>``
            (``--group-by level --group-by kbcheck``: ``test/kbcheck/exact/f1``, the star questions).
    """
    keys = [group_keys] if isinstance(group_keys, str) else list(group_keys or [])
    metrics = {f"test/{k}": float(summary[k]) for k in RUN_METRICS if summary.get(k) is not None}
    for position, key in enumerate(keys):
        prefix = "test/" if position == 0 else f"test/{key}/"
        for value, scores in (summary.get("by") or {}).get(key, {}).items():
            for k in RUN_METRICS:
                if scores.get(k) is not None:
                    metrics[f"{prefix}{value}/{k}"] = float(scores[k])
    return metrics


def log_run(
    out_dir: Path,
    *,
    name: str,
    group: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    logger: str = "wandb",
) -> Path:
    """Write one run with ``params`` as its config and ``metrics`` as its summary.

    Args:
        out_dir: The folder of the group's runs.
        name: The run's name (also its record file ``out_dir/<name>.json``).
        group: The W&B group (also logged as the ``group`` config key).
        params: Config keys of the run (``system``, ``form``, ...).
        metrics: Metric name → value.
        logger: ``wandb`` (offline) or ``csv``.

    Returns:
        The record file.

    Raises:
        UserInputError: For an unknown logger or a name that is not a plain file name.
    """
    check_choice("logger", logger, LOGGERS)
    if not name or Path(name).name != name:
        raise UserInputError(f"run name must be a plain name (no folders), got {name!r}")
    config = {**params, "group": group}
    out_dir.mkdir(parents=True, exist_ok=True)
    write = _log_wandb if logger == "wandb" else _log_csv
    run_path = write(out_dir, name, group, config, metrics)
    record = out_dir / f"{name}.json"
    write_json_atomic(
        record,
        {"name": name, "group": group, "logger": logger, "run": str(run_path), "params": config, "metrics": metrics},
    )
    return record


def _log_wandb(out_dir: Path, name: str, group: str, config: Mapping[str, Any], metrics: Mapping[str, float]) -> Path:
    import wandb

    os.environ.setdefault("WANDB_SILENT", "true")
    run = wandb.init(
        mode="offline", dir=str(out_dir), project=PROJECT, group=group, name=name, job_type="eval", config=dict(config)
    )
    try:
        run.log(dict(metrics))
        run.summary.update(dict(metrics))
        path = Path(run.dir).parent
    finally:
        run.finish()
    return path


def _log_csv(out_dir: Path, name: str, group: str, config: Mapping[str, Any], metrics: Mapping[str, float]) -> Path:
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(save_dir=str(out_dir), name=group, version=name)
    logger.log_hyperparams(dict(config))
    logger.log_metrics(dict(metrics), step=0)
    logger.save()
    logger.finalize("success")
    return Path(logger.log_dir)


__all__ = ["LOGGERS", "log_run", "run_metrics"]
