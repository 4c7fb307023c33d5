"""Read a Lightning ``CSVLogger`` run directory (``<save_dir>/<name>/version_<n>/``).

The directory holds ``metrics.csv`` (one row per logging call: ``epoch``, ``step`` and one column
per metric, empty where a metric was not logged), ``hparams.yaml`` (the logged hyper-parameters)
and, with the kbqa CLI, ``config.yaml`` (the resolved LightningCLI config, saved by
``SaveConfigCallback``).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import yaml

from kbqa_lit.errors import DataFormatError
from kbqa_lit.tracking.runs import MetricPoint, RunRecord, logged_hparams, logged_stage, run_params

METRICS_FILE = "metrics.csv"
INDEX_COLUMNS = ("epoch", "step")


class _LenientLoader(yaml.SafeLoader):
    """A safe YAML loader that reads ``!!python/...`` tags (Lightning may dump objects) as their text."""


def _unknown_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]


_LenientLoader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown_tag)
_LenientLoader.add_multi_constructor("!", _unknown_tag)


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping from ``path`` (``{}`` when the file is missing or empty).

    Raises:
        DataFormatError: When the file is not YAML or not a mapping.
    """
    if not path.is_file():
        return {}
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LenientLoader)  # noqa: S506 - safe loader subclass
    except yaml.YAMLError as exc:
        raise DataFormatError(path, None, f"not valid YAML ({exc})") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise DataFormatError(path, None, "expected a YAML mapping")
    return doc


def _number(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_metrics_csv(path: Path) -> dict[str, list[MetricPoint]]:
    """Metric histories from a CSVLogger ``metrics.csv``.

    Raises:
        DataFormatError: When the file has no header.
    """
    history: dict[str, list[MetricPoint]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise DataFormatError(path, None, "empty metrics file (no header)")
        metrics = [c for c in reader.fieldnames if c not in INDEX_COLUMNS]
        for row in reader:
            step, epoch = _number(row.get("step")), _number(row.get("epoch"))
            for name in metrics:
                value = _number(row.get(name))
                if value is not None:
                    history.setdefault(name, []).append(MetricPoint(step, epoch, value))
    return history


def is_csv_run(path: Path) -> bool:
    """Whether ``path`` is a CSVLogger run directory."""
    return (path / METRICS_FILE).is_file()


def read_csv_run(path: Path) -> RunRecord:
    """Read one CSVLogger run directory.

    Args:
        path: The ``version_<n>`` directory (holding ``metrics.csv``).

    Returns:
        The run, named ``<logger name>/<version>``; its summary is the last logged value of each metric,
        its ``hparams`` what ``hparams.yaml`` holds and its ``stage`` the logged CLI subcommand.
    """
    path = Path(path)
    history = read_metrics_csv(path / METRICS_FILE)
    hparams = read_yaml(path / "hparams.yaml")
    resolved = read_yaml(path / "config.yaml") or None
    return RunRecord(
        name=f"{path.parent.name}/{path.name}",
        kind="csv",
        path=path,
        params=run_params(hparams, resolved),
        history=history,
        summary={name: points[-1].value for name, points in history.items() if points},
        state="unknown",
        run_id=path.name,
        stage=logged_stage(hparams),
        hparams=logged_hparams(hparams),
    )
