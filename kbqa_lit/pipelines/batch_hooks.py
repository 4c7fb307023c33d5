"""``EvalBatchCallback``: one method each for the batch ends, epoch starts and epoch ends of the evaluation stages.

Lightning calls ``on_validation_batch_end``, ``on_test_batch_end`` and ``on_predict_batch_end``
with the same arguments, and likewise the three epoch starts and ends; a callback that treats the
stages alike (the execution-guided evaluation, the throughput probe, CoQ's pattern writer)
subclasses this class and writes :meth:`EvalBatchCallback.eval_batch_end` (and, where it needs
them, :meth:`~EvalBatchCallback.eval_epoch_start` and :meth:`~EvalBatchCallback.eval_epoch_end`),
told the stage. It lives on the pipelines floor, the
lowest one that both ``callbacks/`` and the pipelines' own callbacks may import.
"""

from __future__ import annotations

from typing import Any

import lightning as L

#: The stage names :meth:`EvalBatchCallback.eval_batch_end` is called with.
EVAL_STAGES = ("validate", "test", "predict")


class EvalBatchCallback(L.Callback):
    """A callback whose validation, test and predict batch ends share one method."""

    def eval_batch_end(
        self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any
    ) -> None:
        """Handle the end of one evaluation batch (default: nothing).

        Args:
            stage: ``validate``, ``test`` or ``predict``.
            trainer: The running trainer.
            pl_module: The module being evaluated.
            outputs: What the step returned.
            batch: The batch.
        """

    def eval_epoch_start(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Handle the start of an evaluation epoch of ``stage`` (default: nothing)."""

    def eval_epoch_end(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Handle the end of an evaluation epoch of ``stage`` (default: nothing)."""

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Hand the start to :meth:`eval_epoch_start` as ``validate``."""
        self.eval_epoch_start("validate", trainer, pl_module)

    def on_test_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Hand the start to :meth:`eval_epoch_start` as ``test``."""
        self.eval_epoch_start("test", trainer, pl_module)

    def on_predict_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Hand the start to :meth:`eval_epoch_start` as ``predict``."""
        self.eval_epoch_start("predict", trainer, pl_module)

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Hand the end to :meth:`eval_epoch_end` as ``validate``."""
        self.eval_epoch_end("validate", trainer, pl_module)

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Hand the end to :meth:`eval_epoch_end` as ``test``."""
        self.eval_epoch_end("test", trainer, pl_module)

    def on_predict_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Hand the end to :meth:`eval_epoch_end` as ``predict``."""
        self.eval_epoch_end("predict", trainer, pl_module)

    def on_validation_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Hand the batch to :meth:`eval_batch_end` as ``validate``."""
        self.eval_batch_end("validate", trainer, pl_module, outputs, batch)

    def on_test_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Hand the batch to :meth:`eval_batch_end` as ``test``."""
        self.eval_batch_end("test", trainer, pl_module, outputs, batch)

    def on_predict_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Hand the batch to :meth:`eval_batch_end` as ``predict``."""
        self.eval_batch_end("predict", trainer, pl_module, outputs, batch)


__all__ = ["EVAL_STAGES", "EvalBatchCallback"]
