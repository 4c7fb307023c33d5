"""Helpers of tests/strategies/test_deepspeed_cpu.py that run inside `kbqa` subprocesses (PYTHONPATH=tests/strategies).

The reference for a data-parallel run on W ranks is ONE process that trains on the same micro-batches
with ``accumulate_grad_batches=W``: rank r's k-th micro-batch of an epoch is Lightning's
``DistributedSampler(num_replicas=W, rank=r, shuffle=True, seed=PL_GLOBAL_SEED)`` order cut into
``batch_size`` chunks, and the reference walks them as (rank 0, k), (rank 1, k), ... Each optimiser step
then averages the same W micro-batch gradients as the W ranks do (Lightning divides each accumulated
loss by W; DeepSpeed averages the ranks' gradients), so the two runs differ only in floating-point
summation order.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lightning import Callback, LightningModule, Trainer
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionCollator


class InterleavedShardsBatchSampler(Sampler[list[int]]):
    """Micro-batches of ``world`` distributed-sampler shards, interleaved rank by rank."""

    def __init__(self, size: int, batch_size: int, world: int, seed: int) -> None:
        self.size, self.batch_size, self.world, self.seed = size, batch_size, world, seed
        self.epoch = 0
        self.sampler = self  # Lightning calls set_epoch on ``batch_sampler.sampler``

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _shards(self) -> list[list[int]]:
        shards = []
        for rank in range(self.world):
            sampler = DistributedSampler(
                range(self.size), num_replicas=self.world, rank=rank, shuffle=True, seed=self.seed
            )
            sampler.set_epoch(self.epoch)
            shards.append(list(sampler))
        return shards

    def __iter__(self) -> Iterator[list[int]]:
        shards = self._shards()
        for k in range(0, len(shards[0]), self.batch_size):
            for shard in shards:
                yield shard[k : k + self.batch_size]

    def __len__(self) -> int:
        return self.world * math.ceil(math.ceil(self.size / self.world) / self.batch_size)


class ShardOrderInstructionDataModule(InstructionDataModule):
    """``InstructionDataModule`` whose single-process training loader replays ``mirror_world`` ranks' micro-batches.

    Args:
        mirror_world: Ranks whose micro-batches a single process replays (run it with
            ``accumulate_grad_batches=mirror_world``); with several processes the stock loader is used.
        **kwargs: ``InstructionDataModule`` arguments.
    """

    def __init__(self, mirror_world: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mirror_world = mirror_world

    def train_dataloader(self) -> DataLoader:
        world, _ = self._world()
        if world > 1:
            return super().train_dataloader()
        rows = self.rows("train")
        seed = int(os.environ.get("PL_GLOBAL_SEED", 0))
        batches = InterleavedShardsBatchSampler(len(rows), self.hparams.batch_size, self.mirror_world, seed)
        return DataLoader(rows, batch_sampler=batches, collate_fn=InstructionCollator(self.pad_token_id))  # type: ignore[arg-type]


class RecordZero(Callback):
    """Write ``<dirpath>/zero_rank<R>.json``: the ZeRO stage, this rank's optimiser partition and parameter slices."""

    def __init__(self, dirpath: str) -> None:
        super().__init__()
        self.dirpath = dirpath

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        engine = getattr(trainer.strategy, "deepspeed_engine", None)
        record: dict[str, Any] = {"rank": trainer.global_rank, "world_size": trainer.world_size}
        params = list(pl_module.parameters())
        partitioned = [p for p in params if hasattr(p, "ds_id")]  # ZeRO-3: each rank holds a slice (ds_tensor)
        record.update(
            parameters=len(params),
            partitioned_parameters=len(partitioned),
            parameter_numel=int(sum(getattr(p, "ds_numel", p.numel()) for p in params)),
            local_parameter_numel=int(
                sum(p.ds_tensor.numel() if hasattr(p, "ds_tensor") else p.numel() for p in params)
            ),
        )
        if engine is not None:
            optimizer = engine.optimizer
            flat = getattr(optimizer, "single_partition_of_fp32_groups", None) or getattr(
                optimizer, "fp32_partitioned_groups_flat", []
            )
            record.update(
                stage=int(engine.zero_optimization_stage()),
                optimizer=type(optimizer).__name__,
                partition_numel=int(sum(t.numel() for t in flat)),
                trainable_numel=int(sum(getattr(p, "ds_numel", p.numel()) for p in params if p.requires_grad)),
            )
        path = Path(self.dirpath) / f"zero_rank{trainer.global_rank}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record), encoding="utf-8")
