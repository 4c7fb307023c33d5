"""DeepSpeedCPUStrategy: Lightning's DeepSpeed strategy running real ZeRO on CPU processes (gloo).

The end-to-end tests train TFS's tiny-LLaMA LoRA (configs/tfs/base.yaml + s1.yaml settings) through ``kbqa fit`` on
one process that replays 2 ranks' micro-batches with ``accumulate_grad_batches=2`` (zero_helpers.py explains
why it then takes the same optimiser steps as 2 ranks), and with ZeRO-2 and with ZeRO-3 on 2 CPU processes
(configs/trainer/deepspeed_cpu_stage_2.yaml, ``stage`` 2 or 3), and require the adapters that
``AdapterExport`` writes at the end of each fit to agree with the reference's (under ZeRO-3 the export
gathers the partitioned weights).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from lightning.pytorch import Trainer
from lightning.pytorch.strategies import StrategyRegistry
from safetensors.torch import load_file

from kbqa_lit.strategies import CPU_STRATEGIES, DeepSpeedCPUStrategy

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HAS_DEEPSPEED = importlib.util.find_spec("deepspeed") is not None
needs_deepspeed = pytest.mark.skipif(
    not HAS_DEEPSPEED, reason="deepspeed is not installed (pip install -c constraints.txt deepspeed==0.19.8)"
)
#: Optimiser steps per epoch of the ZeRO-2 run (the reference replays twice as many micro-batches).
STEPS = 10
#: The adapters must agree to this (float32 weights of size ≈ 0.03 after 20 steps). Both runs average the
#: same two micro-batch gradients and apply the same AdamW update, so only the summation order can differ
#: (DeepSpeed's flat fp32 partitions and gloo reduce-scatter vs. per-tensor accumulation): measured 0.0 for
#: ZeRO-2 and 4e-8 for ZeRO-3, while another (equally valid) data order moves the adapter by ≈ 3.5e-2.
WEIGHT_ATOL = 1e-5
#: Logits of the two models on the same prompts (vocabulary 2,000, |logit| ≲ 10) may differ by this much.
LOGIT_ATOL = 1e-4


def test_cpu_strategy_names_are_registered() -> None:
    for name, kwargs in CPU_STRATEGIES.items():
        assert name in StrategyRegistry
        entry = StrategyRegistry[name]
        assert entry["strategy"] is DeepSpeedCPUStrategy
        assert entry["init_params"] == kwargs
    assert StrategyRegistry["deepspeed_stage_2"]["strategy"] is not DeepSpeedCPUStrategy  # the GPU one untouched


@needs_deepspeed
@pytest.mark.parametrize(("name", "stage"), [("deepspeed_cpu_stage_2", 2), ("deepspeed_cpu_stage_3", 3)])
def test_registered_name_gives_a_cpu_trainer(name: str, stage: int, tmp_path: Path) -> None:
    trainer = Trainer(accelerator="cpu", devices=2, strategy=name, logger=False, default_root_dir=tmp_path)
    assert isinstance(trainer.strategy, DeepSpeedCPUStrategy)
    assert trainer.strategy.config["zero_optimization"]["stage"] == stage
    assert trainer.num_devices == 2 and trainer.strategy.root_device.type == "cpu"


def _env(extra_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(extra_path), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("TORCH_EXTENSIONS_DIR", str(REPO / ".cache" / "torch_extensions"))  # compiled ops are reused
    env.update(HF_HUB_OFFLINE="1", WANDB_MODE="offline", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    return env


def _run(args: list[str], cwd: Path, log: Path) -> None:
    with log.open("w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "kbqa_lit", *args], cwd=cwd, env=_env(HERE), stdout=out, stderr=subprocess.STDOUT
        )
    assert proc.returncode == 0, log.read_text()[-4000:]


def _lora_config(path: Path, root: Path, world: Path, reference: bool) -> Path:
    """configs/tfs/base.yaml + s1.yaml, STEPS optimiser steps per epoch, no validation, the adapter exported."""
    base = yaml.safe_load((REPO / "configs" / "tfs" / "base.yaml").read_text())
    s1 = yaml.safe_load((REPO / "configs" / "tfs" / "s1.yaml").read_text())
    model = base["model"]
    model["init_args"]["lora_dropout"] = 0.0  # dropout masks would differ between ranks and the reference
    data = {
        "class_path": "zero_helpers.ShardOrderInstructionDataModule",
        "init_args": {**base["data"]["init_args"], **s1["data"]["init_args"], "data_dir": str(world)}
        | {"mirror_world": 2},
    }
    trainer = {
        "accelerator": "cpu",
        "devices": 1,
        "precision": "32-true",
        "max_epochs": 2,
        "limit_train_batches": 2 * STEPS if reference else STEPS,
        "accumulate_grad_batches": 2 if reference else 1,
        "limit_val_batches": 0,
        "num_sanity_val_steps": 0,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "logger": False,
        "default_root_dir": str(root),
        "callbacks": [
            {
                "class_path": "kbqa_lit.callbacks.adapter_export.AdapterExport",
                "init_args": {"dirpath": f"{root}/adapter"},
            },
            {"class_path": "zero_helpers.RecordZero", "init_args": {"dirpath": str(root)}},
        ],
    }
    doc = {"seed_everything": 0, "trainer": trainer, "model": model, "data": data}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The synthetic world and the single-process reference run that replays 2 ranks' micro-batches."""
    tmp = tmp_path_factory.mktemp("zero_reference")
    world, root = tmp / "world", tmp / "reference"
    config = _lora_config(tmp / "reference.yaml", root, world, reference=True)
    _run(["fit", "--config", str(config)], REPO, tmp / "reference.log")
    return world, root


@needs_deepspeed
@pytest.mark.slow  # one `kbqa fit` on 2 processes per stage (≈ 25 s) after the reference run (≈ 15 s)
@pytest.mark.parametrize("stage", [2, 3])
def test_zero_on_two_cpu_processes_reproduces_the_single_process_adapter(
    stage: int, reference: tuple[Path, Path], tmp_path: Path
) -> None:
    """ZeRO-2 (optimiser state sharded) and ZeRO-3 (parameters sharded too; the adapter export gathers them)."""
    from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
    from kbqa_lit.modules.lora_causal_lm import LoraCausalLM

    world, ref_root = reference
    zero_root = tmp_path / f"zero{stage}"
    zero_cfg = _lora_config(tmp_path / f"zero{stage}.yaml", zero_root, world, reference=False)
    zero_yaml = REPO / "configs" / "trainer" / "deepspeed_cpu_stage_2.yaml"
    args = ["fit", "--config", str(zero_cfg), "--config", str(zero_yaml)]
    _run([*args, "--trainer.strategy.init_args.stage", str(stage)], REPO, tmp_path / f"zero{stage}.log")

    # it really was ZeRO-<stage> on 2 ranks, each holding only its share of the optimiser state
    records = [json.loads((zero_root / f"zero_rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["world_size"] == 2 and r["stage"] == stage for r in records), records
    assert all(0 < r["partition_numel"] < r["trainable_numel"] for r in records), records
    assert sum(r["partition_numel"] for r in records) >= records[0]["trainable_numel"]
    if stage == 3:  # ... and only its share of every parameter (the export had to gather them)
        assert all(r["partitioned_parameters"] == r["parameters"] > 0 for r in records), records
        assert all(0 < r["local_parameter_numel"] < r["parameter_numel"] for r in records), records
    else:
        assert all(r["partitioned_parameters"] == 0 for r in records), records

    ref_w = load_file(ref_root / "adapter" / "adapter_model.safetensors")
    zero_w = load_file(zero_root / "adapter" / "adapter_model.safetensors")
    assert ref_w.keys() == zero_w.keys() and ref_w
    assert max(float(v.abs().max()) for k, v in ref_w.items() if "lora_B" in k) > 1e-3  # training moved B from 0
    for key, value in ref_w.items():
        torch.testing.assert_close(zero_w[key], value, rtol=0, atol=WEIGHT_ATOL, msg=key)

    # the saved adapters (and, for the built base, the base weights saved beside them) load and
    # answer the same validation prompts the same way
    ref_model = LoraCausalLM.from_adapter(ref_root / "adapter").eval()
    zero_model = LoraCausalLM.from_adapter(zero_root / "adapter").eval()
    dm = InstructionDataModule(data_dir=str(world), tasks=["s1"], max_length=128, max_response_length=128)
    dm.setup("validate")
    batch = next(iter(dm.val_dataloader()))
    with torch.no_grad():
        ref_logits = ref_model(batch["input_ids"], batch["attention_mask"])
        zero_logits = zero_model(batch["input_ids"], batch["attention_mask"])
    torch.testing.assert_close(zero_logits, ref_logits, rtol=0, atol=LOGIT_ATOL)
    ref_beams = ref_model.generate(batch, num_beams=2, max_new_tokens=32)
    assert zero_model.generate(batch, num_beams=2, max_new_tokens=32) == ref_beams
    assert any(b[0] for b in ref_beams)  # non-empty generations
