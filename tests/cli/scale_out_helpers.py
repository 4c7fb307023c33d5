"""Helpers of tests/cli/test_scale_out.py that run inside `kbqa` subprocesses (PYTHONPATH=tests/cli)."""

from __future__ import annotations

import os

import lightning as L

#: Environment variable naming the optimiser step after which :class:`KillAtStep` ends the process.
KILL_ENV = "KBQA_TEST_KILL_AT_STEP"
#: Exit status of a run stopped by :class:`KillAtStep`.
KILLED_EXIT = 86


class KillAtStep(L.Callback):
    """End the process at once (``os._exit``: no cleanup, no checkpoint) after step ``$KBQA_TEST_KILL_AT_STEP``.

    Without the variable it does nothing, so the interrupted, resumed and uninterrupted runs share one config.
    """

    def on_train_batch_end(self, trainer: L.Trainer, *args: object) -> None:
        step = os.environ.get(KILL_ENV)
        if step and trainer.global_step >= int(step):
            os._exit(KILLED_EXIT)
