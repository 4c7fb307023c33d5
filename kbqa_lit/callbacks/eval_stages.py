"""Stages, metric names and prefixes of the execution-guided evaluation, and the one warning it hides.

``STAGES`` maps a trainer stage to its metric prefix and datamodule split, ``LOGGED`` lists the
metrics logged per stage, :func:`metric_prefix` puts them under ``oracle/`` when evaluation sees
gold inputs, and :class:`ResyncAdviceFilter` hides Lightning's advice to sync values that are
synced already.
"""

from __future__ import annotations

import warnings

import lightning as L
from lightning.pytorch.utilities.warnings import PossibleUserWarning

from kbqa_lit.data.linking import ORACLE_PREFIX

#: Trainer stage → (metric prefix, datamodule split).
STAGES: dict[str, tuple[str, str]] = {
    "validate": ("val", "val"),
    "test": ("test", "test"),
    "predict": ("predict", "predict"),
}
#: Metrics logged per stage (``em`` only when measured).
LOGGED = (
    "f1",
    "hit1",
    "hit1_any",
    "em",
    "executable",
    "fallback_rate",
    "path_fallback_rate",
    "path_override_rate",
    "answer_type_rate",
    "exec_cache_hit_rate",
)


class ResyncAdviceFilter:
    """Until the loop ends, hide Lightning's advice to sync the logged values (they are synced already).

    Lightning gives it under DDP when it collects epoch-level values logged with
    ``sync_dist=False``, after the epoch-end hooks; the filter lives from the epoch-end log
    (:meth:`install`) to ``on_{validation,test}_end`` (:meth:`remove`), so no other warning is touched.
    """

    def __init__(self) -> None:
        self._quiet: warnings.catch_warnings | None = None

    def install(self) -> None:
        """Start hiding the advice (once; a second call does nothing)."""
        if self._quiet is None:
            self._quiet = warnings.catch_warnings()
            self._quiet.__enter__()
            warnings.filterwarnings(
                "ignore",
                message=r"It is recommended to use `self\.log\('(val|test)/(" + "|".join(LOGGED) + r")'",
                category=PossibleUserWarning,
            )

    def remove(self) -> None:
        """Put the warning filters back as they were."""
        if self._quiet is not None:
            self._quiet.__exit__(None, None, None)
            self._quiet = None


def metric_prefix(stage: str, trainer: L.Trainer) -> str:
    """``val``/``test``/``predict``, under ``oracle/`` when the datamodule feeds evaluation gold inputs.

    Gold inputs are what the datamodule's ``oracle_inputs()`` names (gold linking, oracle
    patterns); a datamodule without that method is an oracle when its ``linking`` is ``gold``.
    """
    prefix = STAGES[stage][0]
    dm = getattr(trainer, "datamodule", None)
    oracle_inputs = getattr(dm, "oracle_inputs", None)
    oracle = bool(oracle_inputs()) if callable(oracle_inputs) else getattr(dm, "linking", None) == "gold"
    return ORACLE_PREFIX + prefix if oracle else prefix


__all__ = ["LOGGED", "STAGES", "ResyncAdviceFilter", "metric_prefix"]
