"""Training strategies that Lightning does not ship: DeepSpeed on CPU processes (tests, CPU-only machines).

Importing this package registers :class:`DeepSpeedCPUStrategy` under ``deepspeed_cpu``,
``deepspeed_cpu_stage_2``, ``deepspeed_cpu_stage_3`` and ``deepspeed_cpu_stage_3_offload`` in
Lightning's ``StrategyRegistry``. DeepSpeed itself is imported only when a run starts.
"""

from __future__ import annotations

from lightning.pytorch.strategies import StrategyRegistry

from kbqa_lit.strategies.deepspeed_cpu import CPU_STRATEGIES, DeepSpeedCPUStrategy

DeepSpeedCPUStrategy.register_strategies(StrategyRegistry)

__all__ = ["CPU_STRATEGIES", "DeepSpeedCPUStrategy"]
