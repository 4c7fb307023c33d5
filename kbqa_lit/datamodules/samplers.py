"""Samplers: length-bucketed shuffling for training, exact (unpadded) sharding for evaluation.

:class:`LengthBucketSampler` yields indices whose consecutive ``batch_size`` chunks hold examples
of similar length, so dynamic padding pads little; the order is random but fixed by
``(seed, epoch)`` and the same on every rank, which takes its share of each global batch.

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

from torch.utils.data import Dataset, DistributedSampler


class LengthBucketSampler(DistributedSampler):
    """Shuffle within buckets of similar length; batches are then shuffled as a whole.

    Per epoch (the same on every rank): sort the indices by length (ties broken at random), cut
    the sorted list into buckets of ``G * bucket_batches`` indices where ``G = batch_size *
    num_replicas`` is the global batch, shuffle inside each bucket, cut each bucket into global
    batches of ``G``, and shuffle the order of the global batches (a short one, if any, comes
    last). Rank ``r`` takes every ``num_replicas``-th index of each global batch, so a
    ``DataLoader`` with the same ``batch_size`` sees length-homogeneous batches in random order.
    With several replicas the short last global batch is padded with repeats to a multiple of
    ``num_replicas`` (all ranks take the same number of steps, as DDP training needs).

    It subclasses ``DistributedSampler`` so Lightning uses it as it is under DDP (a plain sampler
    would be wrapped and re-shuffled, losing the buckets).

    Args:
        lengths: Length of each example (index ``i`` → ``lengths[i]``).
        batch_size: Per-rank batch size of the ``DataLoader`` that uses this sampler.
        num_replicas: World size (1 without DDP).
        rank: This process's global rank.
        bucket_batches: Global batches per bucket: larger mixes lengths more (more randomness,
            more padding); 1 is the tightest packing.
        seed: Base seed; epoch ``e`` uses ``seed + e``.
        drop_last: Drop the final short global batch.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        num_replicas: int = 1,
        rank: int = 0,
        bucket_batches: int = 4,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if batch_size < 1 or bucket_batches < 1:
            raise ValueError("batch_size and bucket_batches must be at least 1")
        self.lengths = list(lengths)
        super().__init__(
            self.lengths, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed, drop_last=drop_last
        )
        self.batch_size = batch_size
        self.bucket_batches = bucket_batches
        self.num_samples = sum(len(b) for b in self.batches())
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Fix the epoch (Lightning calls this before each training epoch)."""
        self.epoch = epoch

    def global_batches(self, epoch: int | None = None) -> list[list[int]]:
        """The global batches of an epoch (default: the current one), padded, in yield order."""
        rng = random.Random(self.seed + (self.epoch if epoch is None else epoch))
        world, size = self.num_replicas, self.batch_size * self.num_replicas
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        order.sort(key=lambda i: self.lengths[i])  # stable: equal lengths stay in random order
        bucket = size * self.bucket_batches
        batches: list[list[int]] = []
        for start in range(0, len(order), bucket):
            chunk = order[start : start + bucket]
            rng.shuffle(chunk)
            batches.extend(chunk[j : j + size] for j in range(0, len(chunk), size))
        # Every bucket but the last is a whole number of batches, so at most one batch is short.
        full = [b for b in batches if len(b) == size]
        short = [b for b in batches if len(b) < size]
        rng.shuffle(full)
        if short and not self.drop_last:
            last = short[0]
            padded = len(last) + (-len(last)) % world
            full.append([last[k % len(last)] for k in range(padded)])
        return full

    def batches(self, epoch: int | None = None) -> list[list[int]]:
        """This rank's batches of an epoch (default: the current one), in yield order."""
        return [b[self.rank :: self.num_replicas] for b in self.global_batches(epoch)]

    def __iter__(self) -> Iterator[int]:
        batches = self.batches()
        self.epoch += 1  # a new order next time, even if set_epoch is never called
        for batch in batches:
            yield from batch

    def __len__(self) -> int:
        return self.num_samples


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
