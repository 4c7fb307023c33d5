from __future__ import annotations

import random

import numpy as np
import torch

from kbqa_lit.datamodules.resumable import LoaderProgress, ResumableDataLoader, random_states, set_random_states
from kbqa_lit.datamodules.samplers import LengthBucketSampler

LENGTHS = [3, 9, 4, 1, 7, 5, 2, 8, 6, 10, 11, 12, 13]


def make_loader(progress: LoaderProgress | None = None) -> ResumableDataLoader:
    sampler = LengthBucketSampler(LENGTHS, batch_size=2, seed=7, bucket_batches=2)
    return ResumableDataLoader(list(range(len(LENGTHS))), batch_size=2, sampler=sampler, progress=progress)


def epoch_batches(loader: ResumableDataLoader, epoch: int) -> list[list[int]]:
    loader.sampler.set_epoch(epoch)
    return [b.tolist() for b in loader]


def test_random_states_round_trip() -> None:
    states = random_states()
    expected = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(123), random.seed(5), np.random.seed(9)
    set_random_states(states)
    assert torch.equal(torch.rand(3), expected[0])
    assert random.random() == expected[1] and np.random.rand() == expected[2]


def test_resume_mid_epoch_continues_with_the_unseen_batches_and_the_same_randomness() -> None:
    full = epoch_batches(make_loader(), 1)
    # the interrupted run: 3 batches of epoch 1, a checkpoint, then the next step's random draw
    first = make_loader()
    first.sampler.set_epoch(1)
    it = iter(first)
    seen = [next(it).tolist() for _ in range(3)]
    state = first.state_dict()
    next_draw = torch.rand(4)
    assert seen == full[:3] and state["epoch"] == 1 and state["batches"] == 3
    # the resumed run: a new process (other random state); the datamodule hands the state over
    torch.manual_seed(999)
    progress = LoaderProgress()
    progress.load_state_dict(state)
    resumed = make_loader(progress)
    batches = iter(resumed)  # created before set_epoch, as Lightning does
    resumed.sampler.set_epoch(1)
    rest = [next(batches).tolist()]
    assert torch.equal(torch.rand(4), next_draw)  # the checkpoint's random state, right before the step
    rest += [b.tolist() for b in batches]
    assert rest == full[3:]
    assert progress.batches == len(full)


def test_resumed_random_stream_matches() -> None:
    first = make_loader()
    first.sampler.set_epoch(0)
    it = iter(first)
    next(it)
    state = first.state_dict()
    expected = torch.rand(4)
    torch.manual_seed(1)
    resumed = make_loader()
    resumed.load_state_dict(state)
    resumed.sampler.set_epoch(0)
    next(iter(resumed))
    assert torch.equal(torch.rand(4), expected)


def test_state_of_a_finished_epoch_skips_nothing_in_the_next_one() -> None:
    loader = make_loader()
    epoch_batches(loader, 2)
    state = loader.state_dict()
    assert state["batches"] == len(loader)
    resumed = make_loader()
    resumed.load_state_dict(state)
    assert epoch_batches(resumed, 3) == epoch_batches(make_loader(), 3)


def test_lightning_sees_a_stateful_loader() -> None:
    from lightning.fabric.utilities.types import _Stateful

    assert isinstance(make_loader(), _Stateful)
