"""Samplers: length-bucketed shuffling for training, exact (unpadded) sharding for evaluation.

:class:`LengthBucketSampler` yields indices whose consecutive ``batch_size`` chunks hold examples
of similar length, so dynamic padding pads little; the order is random but fixed by
``(seed, epoch)``. Under DDP Lightning wraps it (``DistributedSamplerWrapper``) and hands rank
``r`` every ``W``-th index of its output, so each rank's batches stay length-homogeneous.

:class:`UnrepeatedDistributedSampler` gives rank ``r`` the indices ``r, r+W, r+2W, ...`` with no
padding and no duplicates, so an evaluation over ``W`` ranks scores every question exactly once
(torch's :class:`~torch.utils.data.DistributedSampler` pads the last ranks with repeats). It
subclasses ``DistributedSampler`` so Lightning leaves it alone; ranks may get one batch more or
less than each other, which is fine for epoch-end metric syncs (torchmetrics, ``self.log``
with ``on_epoch=True``) but not for per-step collectives.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

from torch.utils.data import Dataset, DistributedSampler, Sampler


class LengthBucketSampler(Sampler[int]):
    """Shuffle within buckets of similar length; batches are then shuffled as a whole.

    Per epoch: sort the indices by length (ties broken at random), cut the sorted list into
    buckets of ``batch_size * bucket_batches`` indices, shuffle inside each bucket, cut each bucket
    into batches of ``batch_size``, and shuffle the order of all batches. A ``DataLoader`` with the
    same ``batch_size`` then sees length-homogeneous batches in random order.

    Args:
        lengths: Length of each example (index ``i`` → ``lengths[i]``).
        batch_size: Batch size of the ``DataLoader`` that uses this sampler.
        bucket_batches: Batches per bucket: larger mixes lengths more (more randomness, more
            padding); 1 is the tightest packing.
        seed: Base seed; epoch ``e`` uses ``seed + e``.
        drop_last: Drop the final short batch (keeps every batch full).
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        bucket_batches: int = 4,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if batch_size < 1 or bucket_batches < 1:
            raise ValueError("batch_size and bucket_batches must be at least 1")
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.bucket_batches = bucket_batches
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Fix the epoch (Lightning calls this before each training epoch)."""
        self.epoch = epoch

    def batches(self, epoch: int | None = None) -> list[list[int]]:
        """The batches of an epoch (default: the current one), in the order they are yielded."""
        rng = random.Random(self.seed + (self.epoch if epoch is None else epoch))
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        order.sort(key=lambda i: self.lengths[i])  # stable: equal lengths stay in random order
        bucket = self.batch_size * self.bucket_batches
        batches: list[list[int]] = []
        for start in range(0, len(order), bucket):
            chunk = order[start : start + bucket]
            rng.shuffle(chunk)
            chunk.sort(key=lambda i: self.lengths[i])
            batches.extend(chunk[j : j + self.batch_size] for j in range(0, len(chunk), self.batch_size))
        # One short batch at most, whatever the bucket boundaries: re-cut if several are short.
        flat = [i for b in batches for i in b]
        if sum(len(b) < self.batch_size for b in batches) > 1:
            batches = [flat[j : j + self.batch_size] for j in range(0, len(flat), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        full = [b for b in batches if len(b) == self.batch_size]
        short = [b for b in batches if len(b) < self.batch_size]
        rng.shuffle(full)
        return full + short  # a short batch last: a DataLoader's fixed-size cut stays aligned

    def __iter__(self) -> Iterator[int]:
        batches = self.batches()
        self.epoch += 1  # a new order next time even if set_epoch is never called
        for batch in batches:
            yield from batch

    def __len__(self) -> int:
        n = len(self.lengths)
        return (n // self.batch_size) * self.batch_size if self.drop_last else n


class UnrepeatedDistributedSampler(DistributedSampler):
    """Rank ``r`` of ``W`` gets indices ``r, r+W, r+2W, ...`` in order: no padding, no repeats.

    Args:
        dataset: The dataset to shard (only its length is used).
        num_replicas: World size ``W``.
        rank: This process's global rank ``r``.
    """

    def __init__(self, dataset: Dataset, num_replicas: int, rank: int) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=False, drop_last=False)
        n = len(dataset)  # type: ignore[arg-type]
        self.num_samples = max(0, math.ceil((n - rank) / num_replicas))
        self.total_size = n

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.rank, self.total_size, self.num_replicas))

    def __len__(self) -> int:
        return self.num_samples


__all__ = ["LengthBucketSampler", "UnrepeatedDistributedSampler"]
