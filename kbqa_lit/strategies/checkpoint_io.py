"""``AtomicCheckpointIO``: Lightning checkpoints written beside their target and renamed into place.

Lightning's :class:`~lightning.pytorch.plugins.io.TorchCheckpointIO` writes a local checkpoint
through an fsspec transaction whose temporary file lies in the system's temporary folder
(``/tmp``); when the checkpoint folder is on another file system the commit is a *copy*, and a
copy that runs out of room leaves a truncated ``epoch=...ckpt`` under the final name. This
subclass writes local checkpoints with :func:`kbqa_lit.atomic.atomic_binary_writer` instead — a
temporary file in the checkpoint's own folder, renamed over it when complete — so a full disk
leaves the previous checkpoint (or none) and raises :class:`~kbqa_lit.errors.FileWriteError`
naming the file, which ``kbqa fit`` prints in one line (status 2); the run resumes from the last
complete checkpoint (``--ckpt_path``) once there is room. Remote paths (``s3://``...) are left to
Lightning. ``kbqa fit|validate|test|predict`` install it with :func:`use_atomic_checkpoints`.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem
from lightning.fabric.utilities.types import _PATH
from lightning.pytorch import Trainer
from lightning.pytorch.plugins.io import TorchCheckpointIO

from kbqa_lit.atomic import atomic_binary_writer


class AtomicCheckpointIO(TorchCheckpointIO):
    """:class:`TorchCheckpointIO` whose local checkpoints are written atomically in their own folder."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: _PATH, storage_options: Any | None = None) -> None:
        """Write ``checkpoint`` to ``path`` (serialised in memory first, as Lightning does).

        Args:
            checkpoint: The state Lightning dumps.
            path: The checkpoint file.
            storage_options: Not supported (Lightning's ``TypeError``), as in :class:`TorchCheckpointIO`.

        Raises:
            FileWriteError: When the file cannot be written (disk full, quota, file-size limit); the
                message names ``path`` and nothing is left under its name.
        """
        fs, local_path = url_to_fs(str(path))
        if storage_options is not None or not isinstance(fs, LocalFileSystem):
            super().save_checkpoint(checkpoint, path, storage_options=storage_options)
            return
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        with atomic_binary_writer(Path(local_path)) as handle:
            handle.write(buffer.getbuffer())


def use_atomic_checkpoints(trainer: Trainer) -> bool:
    """Give ``trainer``'s strategy an :class:`AtomicCheckpointIO` when it uses Lightning's plain one.

    A strategy with another checkpoint plugin (asynchronous, XLA, one a config chose) keeps it.

    Args:
        trainer: A trainer whose strategy is set up (as after ``Trainer(...)``).

    Returns:
        Whether the plugin was installed.
    """
    strategy = trainer.strategy
    if type(strategy.checkpoint_io) is not TorchCheckpointIO:
        return False
    strategy.checkpoint_io = AtomicCheckpointIO()
    return True


__all__ = ["AtomicCheckpointIO", "use_atomic_checkpoints"]
