"""``DeepSpeedCPUStrategy``: Lightning's DeepSpeed strategy on CPU processes (gloo), for tests and CPU-only machines.

Lightning's :class:`~lightning.pytorch.strategies.DeepSpeedStrategy` refuses any accelerator but
CUDA, yet DeepSpeed itself runs ZeRO-2 and ZeRO-3 on CPU processes (its CPU accelerator, with
the gloo backend). This subclass removes exactly the CUDA-only parts and nothing else:

- :meth:`setup_environment` skips the "only supported on CUDA GPUs" check;
- :meth:`setup_distributed` skips the check that device indices equal local ranks (CPU devices
  have no index);
- :meth:`_setup_model_and_optimizer` and :meth:`_initialize_deepspeed_inference` call
  ``deepspeed.initialize`` with ``device_rank=local_rank`` (Lightning passes
  ``root_device.index``, which is ``None`` on the CPU).

Everything else — the ZeRO config, checkpointing (a sharded checkpoint directory), the
optimiser/scheduler hand-over, gradient clipping — is the stock strategy's. Give the module a
torch optimiser (``configure_optimizers``), not DeepSpeed's ``"optimizer"`` config block: on the
CPU that block compiles DeepSpeed's ``fused_adam`` op (≈ 45 s) for nothing. The first run
compiles one small C++ op (≈ 30 s) into ``TORCH_EXTENSIONS_DIR``; point it at a persistent folder
so later runs reuse it.

GPU users never need this class: ``strategy: deepspeed_stage_2`` (or ``deepspeed_stage_3_offload``)
from ``configs/trainer/`` is Lightning's own strategy. Importing :mod:`kbqa_lit.strategies`
registers ``deepspeed_cpu``, ``deepspeed_cpu_stage_2``, ``deepspeed_cpu_stage_3`` and
``deepspeed_cpu_stage_3_offload`` in Lightning's ``StrategyRegistry``, so
``Trainer(accelerator="cpu", devices=2, strategy="deepspeed_cpu_stage_2")`` works from Python;
YAML names the class (``class_path: kbqa_lit.strategies.DeepSpeedCPUStrategy``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lightning.fabric.utilities.seed import reset_seed
from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy
from lightning.pytorch.strategies.deepspeed import remove_module_hooks
from torch.nn import Module
from torch.optim import Optimizer

if TYPE_CHECKING:  # deepspeed is an optional dependency
    import deepspeed

#: Names registered in Lightning's ``StrategyRegistry`` → ``DeepSpeedCPUStrategy`` keyword arguments.
CPU_STRATEGIES: dict[str, dict[str, Any]] = {
    "deepspeed_cpu": {},
    "deepspeed_cpu_stage_2": {"stage": 2},
    "deepspeed_cpu_stage_3": {"stage": 3},
    "deepspeed_cpu_stage_3_offload": {"stage": 3, "offload_optimizer": True, "offload_parameters": True},
}


class DeepSpeedCPUStrategy(DeepSpeedStrategy):
    """Lightning's DeepSpeed strategy without its CUDA-only checks: real ZeRO on CPU processes (gloo).

    Takes the same arguments as :class:`~lightning.pytorch.strategies.DeepSpeedStrategy`
    (``stage``, ``offload_optimizer``, ``offload_parameters``, ``config``, ...). Use it with
    ``accelerator="cpu"`` and ``precision="32-true"``; on GPUs use the stock strategy.
    """

    strategy_name = "deepspeed_cpu"

    def setup_environment(self) -> None:
        """Set up the process environment like DDP does, without DeepSpeed's "CUDA GPUs only" check."""
        DDPStrategy.setup_environment(self)

    def setup_distributed(self) -> None:
        """Reset the seed, set the world ranks and init DeepSpeed's process group (gloo on CPU).

        The stock method also requires device indices to equal the local ranks, which CPU devices
        (index ``None``) cannot satisfy.
        """
        reset_seed()
        self.set_world_ranks()
        self._init_deepspeed_distributed()

    def _deepspeed_args(self) -> argparse.Namespace:
        """``deepspeed.initialize``'s ``args``: the device rank is the local rank (the CPU device has no index)."""
        return argparse.Namespace(device_rank=self.local_rank)

    def _setup_model_and_optimizer(
        self,
        model: Module,
        optimizer: Optimizer | None,
        lr_scheduler: Any = None,
    ) -> tuple[deepspeed.DeepSpeedEngine, Optimizer]:
        """Wrap the model and the torch optimiser in a DeepSpeed engine (ZeRO partitions the optimiser state).

        Args:
            model: The LightningModule.
            optimizer: The torch optimiser from ``configure_optimizers`` (``None`` when the
                DeepSpeed config has an ``"optimizer"`` block).
            lr_scheduler: The scheduler, handed back to Lightning after initialisation.

        Returns:
            The DeepSpeed engine and DeepSpeed's optimiser wrapper.
        """
        import deepspeed

        engine, ds_optimizer, _, _ = deepspeed.initialize(
            args=self._deepspeed_args(),
            config=self.config,
            model=model,
            model_parameters=[p for p in model.parameters() if p.requires_grad],
            optimizer=optimizer,
            lr_scheduler=lr_scheduler,
            dist_init_required=False,
        )
        return engine, ds_optimizer

    def _initialize_deepspeed_inference(self, model: Module) -> None:
        """Wrap the model for ``validate``/``test``/``predict`` (the stock method, with a CPU device rank)."""
        import deepspeed

        assert isinstance(self.config, dict)
        inference_config: dict[str, Any] = {"train_micro_batch_size_per_gpu": 1}
        for key in ("fp16", "bf16"):
            if key in self.config:
                inference_config[key] = self.config[key]
        if self.zero_stage_3:
            inference_config["zero_allow_untested_optimizer"] = self.config["zero_allow_untested_optimizer"]
            inference_config["zero_optimization"] = self.config["zero_optimization"]
        remove_module_hooks(model)
        engine, _, _, _ = deepspeed.initialize(
            args=self._deepspeed_args(),
            config=inference_config,
            model=model,
            optimizer=None,
            lr_scheduler=None,
            model_parameters=[],
            dist_init_required=False,
        )
        self.model = engine

    @classmethod
    def register_strategies(cls, strategy_registry: Any) -> None:
        """Register the CPU names (:data:`CPU_STRATEGIES`) in Lightning's ``StrategyRegistry``."""
        for name, kwargs in CPU_STRATEGIES.items():
            if name not in strategy_registry:
                strategy_registry.register(name, cls, description=f"DeepSpeed on CPU processes ({name})", **kwargs)


__all__ = ["CPU_STRATEGIES", "DeepSpeedCPUStrategy"]
