"""Helpers of tests/cli/test_scale_out.py that run inside `kbqa` subprocesses (PYTHONPATH=tests/cli)."""

from __future__ import annotations

import os

import lightning as L

#: Exit status of a run stopped by :class:`KillAtStep` (what a SIGKILL'd job leaves behind: no cleanup).
KILLED_EXIT = 86


class KillAtStep(L.Callback):
    """End the process at once, without any cleanup or checkpoint, after optimiser step ``step``."""

    def __init__(self, step: int) -> None:
        super().__init__()
        self.step = step

    def on_train_batch_end(self, trainer: L.Trainer, *args: object) -> None:
        if trainer.global_step >= self.step:
            os._exit(KILLED_EXIT)
