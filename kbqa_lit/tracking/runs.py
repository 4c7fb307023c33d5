"""One logged training run, whatever wrote it: hyper-parameters, metric histories, final values.

Hyper-parameters are flattened to dotted paths. When the run carries the resolved LightningCLI
config (``config.yaml`` next to a CSV log, or the ``config_yaml`` hyper-parameter that
:class:`~kbqa_lit.lightning_cli.LoggerSaveConfigCallback` logs to every logger), the paths are the
CLI's own (``model.init_args.alpha``) — the names W&B sweeps use — and list items get an index
(``trainer.callbacks[0].init_args.num_beams``). Otherwise the logged hyper-parameters are used as
they are (Lightning logs the module's and datamodule's ``hparams``: ``alpha``, ``learning_rate``...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: Top-level keys of a LightningCLI config (a dotted hyper-parameter under one of them is a CLI path).
CLI_ROOTS = ("seed_everything", "model", "data", "trainer", "optimizer", "lr_scheduler", "ckpt_path")
#: Logged keys that are bookkeeping, not hyper-parameters.
#: Lightning's ``TrainerFn`` names (what the CLI logs as ``stage``) → the CLI subcommand.
STAGE_NAMES = {"fitting": "fit", "validating": "validate", "testing": "test", "predicting": "predict"}
BOOKKEEPING = frozenset({"_instantiator", "config_yaml", "stage", "_wandb"})


@dataclass(frozen=True)
class MetricPoint:
    """One logged value of a metric with the trainer step and epoch it was logged at (``None`` if unknown)."""

    step: float | None
    epoch: float | None
    value: float


@dataclass
class RunRecord:
    """A run read back from its log directory.

    Attributes:
        name: Short display name (unique among the runs of one comparison).
        kind: ``"csv"`` (Lightning CSVLogger) or ``"wandb"``.
        path: The run directory.
        params: Flattened hyper-parameters (dotted path → value).
        history: Metric name → logged points in logging order.
        summary: Final values (W&B's run summary; for CSV logs the last logged value of each metric).
        state: ``finished``, ``crashed``, ``running`` (no exit record yet) or ``unknown``.
        run_id: The logger's run id or version, when known.
        stage: The CLI subcommand that wrote the run (``fit``, ``validate``, ``test``), as logged by
            :class:`~kbqa_lit.lightning_cli.LoggerSaveConfigCallback`; ``None`` when not logged.
        hparams: The hyper-parameters as the logger recorded them (CSV ``hparams.yaml``, the W&B
            config: the module's and datamodule's ``hparams`` such as ``alpha``), flattened, without
            bookkeeping keys; ``params`` holds the resolved CLI paths instead when a config is known.
    """

    name: str
    kind: str
    path: Path
    params: dict[str, Any] = field(default_factory=dict)
    history: dict[str, list[MetricPoint]] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    state: str = "unknown"
    run_id: str | None = None
    stage: str | None = None
    hparams: dict[str, Any] = field(default_factory=dict)

    def metric_names(self) -> set[str]:
        """Every metric with a final value or a history."""
        return set(self.summary) | {k for k, v in self.history.items() if v}

    def final(self, metric: str) -> float | None:
        """The final value of ``metric`` (summary first, else the last logged point), or ``None``."""
        if metric in self.summary:
            return self.summary[metric]
        points = self.history.get(metric) or []
        return points[-1].value if points else None

    def best(self, metric: str, goal: str = "max") -> float | None:
        """The best logged value of ``metric`` (``goal`` ``max`` or ``min``), or the final one without history."""
        values = [p.value for p in self.history.get(metric) or []]
        if not values:
            return self.final(metric)
        return max(values) if goal == "max" else min(values)

    def last_step(self) -> float | None:
        """The largest trainer step seen in any metric's history."""
        steps = [p.step for points in self.history.values() for p in points if p.step is not None]
        return max(steps) if steps else None


def as_number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` for anything else (strings, bools, NaN, dicts)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings to dotted keys; list items that are mappings get ``[i]``.

    Lists of plain values stay lists (one hyper-parameter, e.g. ``target_modules``).
    """
    out: dict[str, Any] = {}
    if isinstance(obj, Mapping):
        if not obj and prefix:
            out[prefix] = {}
        for key, value in obj.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(obj, list | tuple) and any(isinstance(v, Mapping) for v in obj):
        for i, value in enumerate(obj):
            out.update(flatten(value, f"{prefix}[{i}]"))
    else:
        out[prefix] = list(obj) if isinstance(obj, tuple) else obj
    return out


def _parse_config_yaml(text: Any) -> Mapping[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return doc if isinstance(doc, Mapping) else None


def logged_hparams(hparams: Mapping[str, Any]) -> dict[str, Any]:
    """The logged hyper-parameters flattened, without bookkeeping keys (``config_yaml``, ``stage``, ``_...``)."""
    return flatten({k: v for k, v in hparams.items() if k not in BOOKKEEPING and not str(k).startswith("_")})


def logged_stage(hparams: Mapping[str, Any]) -> str | None:
    """The CLI subcommand of a run's logged ``stage`` (``FITTING`` → ``fit``, ``TESTING`` → ``test``), else ``None``."""
    stage = hparams.get("stage")
    if not isinstance(stage, str) or not stage.strip():
        return None
    text = stage.strip().lower().rsplit(".", 1)[-1]  # Lightning's TrainerFn: FITTING, TESTING, ...
    return STAGE_NAMES.get(text, text)


def run_params(hparams: Mapping[str, Any], resolved: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The flattened hyper-parameters of a run.

    Args:
        hparams: What the logger recorded (CSV ``hparams.yaml``, the W&B run config).
        resolved: The resolved LightningCLI config, when the run directory holds one.

    Returns:
        Dotted CLI paths when a resolved config is known (from ``resolved`` or the logged
        ``config_yaml``), plus any dotted CLI-path keys logged directly (W&B sweep parameters);
        otherwise the logged hyper-parameters flattened, without bookkeeping keys.
    """
    config = resolved if resolved is not None else _parse_config_yaml(hparams.get("config_yaml"))
    if config is None:
        return logged_hparams(hparams)
    params = flatten(config)
    for key, value in hparams.items():
        if "." in key and key.split(".")[0] in CLI_ROOTS and key not in params:
            params[key] = value
    return params
