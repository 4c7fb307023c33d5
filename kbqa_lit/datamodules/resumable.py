"""``ResumableDataLoader``: a training loader whose place in the epoch is saved in checkpoints, for exact resumes.

Lightning 2.x restores the model, the optimiser, the schedulers and its loop counters from a
checkpoint, and it calls ``set_epoch`` on the sampler, so :class:`~.samplers.LengthBucketSampler`
rebuilds the epoch's batch order from ``(seed, epoch)``. Two things are *not* restored when a
checkpoint was written in the middle of an epoch (``ModelCheckpoint(every_n_train_steps=...)``):

- **the position in the epoch**: a plain ``DataLoader`` starts the epoch over, so the resumed run
  trains again on the epoch's first batches instead of the ones it had not seen (Lightning warns
  "your dataloader is not resumable");
- **the random streams** (torch, ``random``, NumPy; CUDA when initialised) that the following
  steps draw from: dropout masks after the resume differ from those of an uninterrupted run.

This loader counts the batches each pass serves; its state (the sampler's epoch, the batches
served, the random states at that moment) goes into every checkpoint, through the datamodule's
``state_dict`` and Lightning's fit-loop state. On resume the next pass restores the random states
and, when it is the same epoch, skips the served batches. The resumed run then sees the same
batches with the same dropout as the uninterrupted one and ends with the same weights and
metrics (``tests/cli/test_scale_out.py``).

Limits: the epoch's order must be a function of ``(seed, epoch)`` (``LengthBucketSampler``,
``DistributedSampler``); a ``RandomSampler`` draws each epoch's order from the global generator,
which a resumed run cannot replay. Skipped batches are loaded and collated, then dropped (cheap
for tokenised data). Under DDP every rank restores global rank 0's random states (only rank 0
writes the checkpoint), so data order and position stay exact but dropout on the other ranks
does not.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader


def random_states() -> dict[str, Any]:
    """The process's random states (torch, ``random``, NumPy, CUDA if initialised), safe for ``weights_only`` loads."""
    version, internal, gauss = random.getstate()
    np_state = np.random.get_state(legacy=False)
    states: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": [version, list(internal), gauss],
        "numpy": {
            "bit_generator": np_state["bit_generator"],
            "key": [int(k) for k in np_state["state"]["key"]],
            "pos": int(np_state["state"]["pos"]),
            "has_gauss": int(np_state["has_gauss"]),
            "gauss": float(np_state["gauss"]),
        },
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_random_states(states: dict[str, Any]) -> None:
    """Restore states taken by :func:`random_states` (missing entries are left alone)."""
    if "torch" in states:
        torch.set_rng_state(states["torch"])
    if "python" in states:
        version, internal, gauss = states["python"]
        random.setstate((version, tuple(internal), gauss))
    if "numpy" in states:
        npst = states["numpy"]
        np.random.set_state(
            {
                "bit_generator": npst["bit_generator"],
                "state": {"key": np.asarray(npst["key"], dtype=np.uint32), "pos": npst["pos"]},
                "has_gauss": npst["has_gauss"],
                "gauss": npst["gauss"],
            }
        )
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class LoaderProgress:
    """Where the training loader is in its epoch, and the resume state waiting for its next pass.

    One object is shared by a :class:`ResumableDataLoader`, the copies Lightning makes of it (it
    re-creates loaders to add a distributed sampler) and the datamodule that owns it, so the
    datamodule can save and restore it without finding the loader Lightning actually iterates.
    """

    def __init__(self) -> None:
        #: The sampler's epoch in the current pass (``None`` for samplers without one).
        self.epoch: int | None = None
        #: Batches the current pass has served.
        self.batches = 0
        #: A loaded state for the next pass (its skip and random states), or ``None``.
        self.pending: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any]:
        """The pass's epoch, the batches served and the random states now (between two training steps)."""
        return {"epoch": self.epoch, "batches": self.batches, "random_states": random_states()}

    def load_state_dict(self, state_dict: dict[str, Any] | None) -> None:
        """Keep ``state_dict`` for the next pass (loading the same state twice is harmless)."""
        self.pending = dict(state_dict) if state_dict else None


def _sampler_epoch(loader: DataLoader) -> int | None:
    for sampler in (loader.sampler, getattr(loader.batch_sampler, "sampler", None)):
        epoch = getattr(sampler, "epoch", None)
        if isinstance(epoch, int):
            return epoch
    return None


class ResumableDataLoader(DataLoader):
    """A ``DataLoader`` that resumes in the middle of an epoch.

    Takes ``DataLoader``'s arguments plus ``progress``. A pass starts at the first ``next`` (after
    Lightning's ``set_epoch``); when a loaded state is pending it skips the batches served before
    the checkpoint if the sampler is in the saved epoch (or has no epoch), then restores the
    random states (after creating the iterator, which draws the workers' seed). A state saved at
    an epoch's end thus restores only the random states, since the resumed run starts the next
    epoch.

    ``state_dict``/``load_state_dict`` make it "stateful" for Lightning, which saves the state in
    the fit loop's part of the checkpoint. Lightning 2.6 does not load it back when
    ``configure_optimizers`` reads ``trainer.estimated_stepping_batches`` (Lightning issue #20550),
    so datamodules also save :attr:`progress` in their own ``state_dict``, which Lightning restores
    before the loaders are built.

    Args:
        *args: ``DataLoader`` arguments.
        progress: The shared :class:`LoaderProgress` (default: a new one).
        **kwargs: ``DataLoader`` keyword arguments.
    """

    def __init__(self, *args: Any, progress: LoaderProgress | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.progress = progress if progress is not None else LoaderProgress()

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        return self._pass()

    def _pass(self) -> Iterator[Any]:
        progress = self.progress
        epoch = _sampler_epoch(self)
        pending, progress.pending = progress.pending, None
        skip = 0
        if pending is not None:
            saved_epoch = pending.get("epoch")
            if saved_epoch is None or epoch is None or saved_epoch == epoch:
                skip = int(pending.get("batches", 0))
        progress.epoch, progress.batches = epoch, 0
        iterator = super().__iter__()  # draws the workers' base seed from torch's generator
        for _ in range(skip):  # loaded and collated, then dropped
            try:
                next(iterator)
            except StopIteration:
                break
            progress.batches += 1
        if pending is not None and pending.get("random_states"):
            set_random_states(pending["random_states"])  # last: nothing may draw between here and the step
        for batch in iterator:
            progress.batches += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        """See :meth:`LoaderProgress.state_dict`."""
        return self.progress.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """See :meth:`LoaderProgress.load_state_dict`."""
        self.progress.load_state_dict(state_dict)


__all__ = ["LoaderProgress", "ResumableDataLoader", "random_states", "set_random_states"]
