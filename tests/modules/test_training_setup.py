"""allow_offloaded_torch_optimizer: ZeRO offload accepts the modules' own AdamW (DeepSpeed refuses it otherwise).

The end-to-end proof is the GPU check's ZeRO-3 offload part, which fails with DeepSpeed's
``ZeRORuntimeException`` ("ZeRO-Offload with a client provided optimizer") without this flag; its
``--tiny`` form runs in ``tests/benchmarks/test_gpu_check.py``.
"""

from __future__ import annotations

import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy

from kbqa_lit.modules.training_setup import allow_offloaded_torch_optimizer, eval_mode
from tests.helpers.run_if import run_if


@run_if(deepspeed=True)
def test_offloading_strategies_get_the_flag_others_are_left_alone() -> None:
    from lightning.pytorch.strategies import DeepSpeedStrategy

    offload = DeepSpeedStrategy(stage=3, offload_optimizer=True, offload_parameters=True)
    assert allow_offloaded_torch_optimizer(offload) is True
    assert offload.config["zero_force_ds_cpu_optimizer"] is False
    stage2 = DeepSpeedStrategy(stage=2)
    assert allow_offloaded_torch_optimizer(stage2) is False and "zero_force_ds_cpu_optimizer" not in stage2.config
    chosen = DeepSpeedStrategy(stage=2, offload_optimizer=True)
    chosen.config["zero_force_ds_cpu_optimizer"] = True  # a user's own choice is kept
    assert allow_offloaded_torch_optimizer(chosen) is True and chosen.config["zero_force_ds_cpu_optimizer"] is True


def test_strategies_without_a_deepspeed_config() -> None:
    assert allow_offloaded_torch_optimizer(DDPStrategy()) is False
    assert allow_offloaded_torch_optimizer(None) is False


def test_eval_mode_restores_the_mode_it_found_even_after_an_error() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    with eval_mode(net):
        assert not net.training and not net[1].training
    assert net.training and net[1].training
    with pytest.raises(RuntimeError), eval_mode(net):
        raise RuntimeError("inside")
    assert net.training
    net.eval()
    with eval_mode(net):
        pass
    assert not net.training  # a module in eval mode stays there
