"""The GPU check's parts: each trains a few dozen steps and evaluates once through the shipped configs.

Every part composes the real YAML files (``configs/coq/freebase.yaml``, ``configs/tfs/llama2_7b_webqsp.yaml``,
``configs/trainer/deepspeed_lora_stage_3_offload.yaml``...) with a few overrides (the model folders
of :mod:`gpu_check_assets`, the synthetic world's files, ``max_steps``), writes the composed file
into its folder and runs it with ``kbqa fit`` / ``kbqa test`` in this process (LightningCLI, the
code users run). :class:`~kbqa_lit.callbacks.throughput.ThroughputProbe` measures steps/s, tokens/s
and peak memory. Each part returns a JSON-ready dict; ``gpu_check.py`` runs each in its own process.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import torch
import yaml
from gpu_check_assets import (
    LLAMA2_7B,
    LLAMA2_13B,
    LLAMA_1B,
    ROOT,
    VOCAB,
    Context,
    bert_folder,
    folder_gib,
    llama_folder,
    model_info,
    run_kbqa,
    t5_folder,
)

from kbqa_lit.lightning_cli import build_cli

GIB = 1024**3


# ---------------------------------------------------------------------- composing configs


def merge(base: Any, over: Any) -> Any:
    """Deep-merge ``over`` into ``base`` as jsonargparse merges ``--config`` files.

    Mappings merge key by key; a mapping naming another ``class_path`` replaces the old one
    (its ``init_args`` belong to the other class); lists and scalars replace.
    """
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return copy.deepcopy(over)
    if "class_path" in over and base.get("class_path") not in (None, over["class_path"]):
        return copy.deepcopy(over)
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = merge(out[key], value) if key in out else copy.deepcopy(value)
    return out


def compose(files: list[str], overrides: dict[str, Any]) -> dict[str, Any]:
    """The shipped ``configs/`` files merged in order, then ``overrides``."""
    config: dict[str, Any] = {}
    for name in files:
        config = merge(config, yaml.safe_load((ROOT / "configs" / name).read_text(encoding="utf-8")))
    return merge(config, overrides)


def for_device(config: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """On the CPU (``--tiny`` self-test): CPU accelerator, fp32, DeepSpeed through ``DeepSpeedCPUStrategy``."""
    if ctx.gpu:
        return config
    trainer = config.setdefault("trainer", {})
    trainer.update(accelerator="cpu", devices=1, precision="32-true")
    strategy = trainer.get("strategy")
    if isinstance(strategy, dict) and strategy.get("class_path", "").endswith("DeepSpeedStrategy"):
        strategy["class_path"] = "kbqa_lit.strategies.DeepSpeedCPUStrategy"
    init = config.get("model", {}).get("init_args", {})
    if init.get("torch_dtype") == "bfloat16":
        init["torch_dtype"] = "float32"  # CPU ZeRO partitions fp32 parameters
    return config


def run_cli(subcommand: str, config: dict[str, Any], path: Path, extra: list[str] | None = None) -> Any:
    """Write ``config`` to ``path`` and run ``kbqa <subcommand> --config path`` here; return the CLI."""
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return build_cli([subcommand, "--config", str(path), *(extra or [])], run=True)


def probe(folder: Path, name: str, warmup: int) -> dict[str, Any]:
    """The ``ThroughputProbe`` callback entry of a config, writing ``<folder>/<name>.json``."""
    return {
        "class_path": "kbqa_lit.callbacks.throughput.ThroughputProbe",
        "init_args": {"out_file": str(folder / f"{name}.json"), "warmup_steps": warmup},
    }


def read_probe(folder: Path, name: str) -> dict[str, Any]:
    """What a ``ThroughputProbe`` wrote (``{}`` when it wrote nothing)."""
    path = folder / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def last_metrics(csv_file: Path) -> dict[str, float]:
    """The last logged value of every column of a CSVLogger ``metrics.csv``."""
    out: dict[str, float] = {}
    if not csv_file.is_file():
        return out
    with csv_file.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for key, value in row.items():
                if value not in (None, ""):
                    try:
                        out[key] = float(value)
                    except ValueError:
                        continue
    return out


def logger(folder: Path, version: str) -> dict[str, Any]:
    """A CSVLogger entry writing ``<folder>/logs/<version>/metrics.csv``."""
    return {
        "class_path": "lightning.pytorch.loggers.CSVLogger",
        "init_args": {"save_dir": str(folder), "name": "logs", "version": version},
    }


def adapter_export(folder: Path) -> dict[str, Any]:
    """The ``AdapterExport`` callback entry writing the adapter into ``folder``."""
    return {"class_path": "kbqa_lit.callbacks.adapter_export.AdapterExport", "init_args": {"dirpath": str(folder)}}


def short_run(ctx: Context, folder: Path, steps: int) -> dict[str, Any]:
    """Trainer settings of a measured fit: ``steps`` optimiser steps, no validation, files under ``folder``."""
    return {
        "max_steps": steps,
        "max_epochs": None,
        "limit_val_batches": 0,
        "num_sanity_val_steps": 0,
        "log_every_n_steps": 1,
        "default_root_dir": str(folder),
        "enable_progress_bar": False,
        "logger": logger(folder, "fit"),
    }


# ---------------------------------------------------------------------- CoQ


def part_coq(ctx: Context) -> dict[str, Any]:
    """CoQ's multitask generator, t5-base shape, ``configs/coq/freebase.yaml`` settings, bf16.

    A fit of a few dozen steps, then ``kbqa test`` execution-guided with 50 beams (freebase.yaml's
    ExecutionGuidedEval against the world's embedded store), unconstrained and schema-constrained.
    """
    from kbqa_lit.datamodules.coq.generation import GenerationDataModule

    folder = ctx.part_dir("coq")
    world, store = ctx.world, ctx.store
    dm = GenerationDataModule(data_dir=str(world), vocab_size=2000, mask_entities=True, patterns="none")
    model_dir = t5_folder(ctx, dm.tokenizer)
    steps, beams, batches = (6, 5, 1) if ctx.tiny else (100, 50, 2)
    data = {
        "tokenizer_name_or_path": str(model_dir),
        "data_dir": str(world),
        "use_decomposition": False,  # the synthetic decomposition ends with the answer
        "patterns": "none",  # the world has no predicted patterns
        "linking_store": str(store),
        "linking_build_from": [str(world / "kb.nt")],
        "num_workers": 2 if ctx.gpu else 0,
    }
    base = compose(
        ["quickstart.yaml", "coq/freebase.yaml", "trainer/gpu.yaml"],
        {
            "model": {"init_args": {"model_name_or_path": str(model_dir), "model_config": None}},
            "data": {"init_args": data},
        },
    )
    eval_args = dict(base["trainer"]["callbacks"][-1]["init_args"])  # freebase.yaml's ExecutionGuidedEval
    fit = merge(base, {"trainer": short_run(ctx, folder, steps)})
    fit["trainer"]["callbacks"] = [
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(folder / "checkpoints"), "save_last": True, "save_top_k": 0},
        },
        probe(folder, "fit_probe", warmup=3 if not ctx.tiny else 1),
    ]
    run_cli("fit", for_device(fit, ctx), folder / "fit.yaml")
    result: dict[str, Any] = {"model": model_info(model_dir), "fit": read_probe(folder, "fit_probe").get("fit", {})}
    for mode in ("none", "schema"):
        args = {
            **eval_args,
            "store": str(store),
            "build_from": [str(world / "kb.nt")],
            "disk_cache": None,
            "reverse_properties": None,
            "num_beams": beams,
            "num_return_sequences": beams,
            "workers": 8 if ctx.gpu else 1,
            "constrained": mode,
            "predictions_dir": str(folder / f"test_{mode}"),
        }
        test = merge(base, {"trainer": {"limit_test_batches": batches, "logger": logger(folder, f"test_{mode}")}})
        test["trainer"]["default_root_dir"] = str(folder)
        test["trainer"]["enable_progress_bar"] = False
        test["trainer"]["callbacks"] = [
            {"class_path": "kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval", "init_args": args},
            probe(folder, f"test_{mode}_probe", warmup=0),
        ]
        run_cli(
            "test",
            for_device(test, ctx),
            folder / f"test_{mode}.yaml",
            ["--ckpt_path", str(folder / "checkpoints/last.ckpt")],
        )
        metrics = last_metrics(folder / "logs" / f"test_{mode}" / "metrics.csv")
        keep = (
            "test/f1",
            "test/hit1",
            "test/executable",
            "test/questions_per_s",
            "test/time_generate_s",
            "test/time_total_s",
        )
        result[f"test_{mode}"] = {
            "beams": beams,
            **{k.split("/", 1)[1]: v for k, v in metrics.items() if k in keep},
            **{
                k: v for k, v in read_probe(folder, f"test_{mode}_probe").get("test", {}).items() if k.startswith("gpu")
            },
        }
    slow, fast = result["test_schema"].get("time_total_s"), result["test_none"].get("time_total_s")
    if slow and fast:
        result["constrained_cost_ratio"] = round(slow / fast, 3)
    return result


# ---------------------------------------------------------------------- FC-KBQA


def part_fc(ctx: Context) -> dict[str, Any]:
    """FC-KBQA's relation extractor, bert-base shape, 48 same-domain negatives, bf16: fit, then one validation."""
    from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule

    folder = ctx.part_dir("fc")
    world = ctx.world
    ontology = str(world / "schema.json")
    dm = ExtractorDataModule(kind="relation", ontology=ontology, data_dir=str(world), tokenizer_name_or_path=None)
    model_dir = bert_folder(ctx, dm.tokenizer)
    steps = 6 if ctx.tiny else 40
    base = compose(
        ["fc/relation_extractor_bert.yaml"],
        {
            "model": {"init_args": {"ontology": ontology, "encoder_name_or_path": str(model_dir)}},
            "data": {
                "init_args": {
                    "ontology": ontology,
                    "data_dir": str(world),
                    "synthetic_size": "small",
                    "tokenizer_name_or_path": str(model_dir),
                    "num_workers": 2 if ctx.gpu else 0,
                }
            },
        },
    )
    fit = merge(base, {"trainer": short_run(ctx, folder, steps)})
    fit["trainer"]["callbacks"] = [
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(folder / "checkpoints"), "save_last": True, "save_top_k": 0},
        },
        probe(folder, "fit_probe", warmup=3 if not ctx.tiny else 1),
    ]
    cli = run_cli("fit", for_device(fit, ctx), folder / "fit.yaml")
    negatives = int(cli.datamodule.hparams.num_negatives)
    val = merge(base, {"trainer": {"limit_val_batches": 2 if ctx.tiny else 8, "logger": logger(folder, "validate")}})
    val["trainer"].update(default_root_dir=str(folder), enable_progress_bar=False)
    val["trainer"]["callbacks"] = [probe(folder, "val_probe", warmup=0)]
    run_cli(
        "validate",
        for_device(val, ctx),
        folder / "validate.yaml",
        ["--ckpt_path", str(folder / "checkpoints/last.ckpt")],
    )
    metrics = last_metrics(folder / "logs" / "validate" / "metrics.csv")
    return {
        "model": model_info(model_dir),
        "negatives": negatives,
        "fit": read_probe(folder, "fit_probe").get("fit", {}),
        "validate": {
            **read_probe(folder, "val_probe").get("validate", {}),
            **{k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith("val/recall")},
        },
    }


# ---------------------------------------------------------------------- TFS-KBQA


#: TFS variants: the LLaMA shape, the shipped configs composed, whether to check export/reload/merge.
#: Offloaded ZeRO-3 moves every weight over PCIe in each pass, so those variants run fewer steps.
TFS_VARIANTS: dict[str, tuple[str, list[str], dict[str, Any], bool]] = {
    "tfs_7b": ("7b", ["tfs/llama2_7b_webqsp.yaml", "trainer/gpu.yaml"], {"trainer": {"strategy": "auto"}}, True),
    "tfs_7b_zero2": ("7b", ["tfs/llama2_7b_webqsp.yaml", "trainer/deepspeed_lora_stage_2.yaml"], {}, False),
    "tfs_7b_zero3_offload": (
        "7b",
        ["tfs/llama2_7b_webqsp.yaml", "trainer/deepspeed_lora_stage_3_offload.yaml"],
        {"model": {"init_args": {"gradient_checkpointing": True}}},
        False,
    ),
    "tfs_13b_zero3_offload": ("13b", ["tfs/llama2_13b_webqsp.yaml"], {}, False),
}


def part_tfs(ctx: Context, name: str) -> dict[str, Any]:
    """TFS-KBQA's LoRA fine-tune on a LLaMA-2 shape under one strategy (plain bf16, ZeRO-2, ZeRO-3 offload)."""
    size, files, extra, check_adapter = TFS_VARIANTS[name]
    folder = ctx.part_dir(name)
    world, store = ctx.world, ctx.store
    model_dir = llama_folder(ctx, size)
    offload = name.endswith("offload")
    steps = 4 if ctx.tiny else (8 if offload else 20)
    overrides = merge(
        {
            "model": {"init_args": {"model_name_or_path": str(model_dir)}},
            "data": {
                "init_args": {
                    "data_dir": str(world),
                    "train_file": "train.jsonl",
                    "val_file": "dev.jsonl",
                    "test_file": "test.jsonl",
                    "tokenizer_name_or_path": str(model_dir),
                    "linking_store": str(store),
                    "linking_build_from": [str(world / "kb.nt")],
                    "num_workers": 2 if ctx.gpu else 0,
                }
            },
            "trainer": short_run(ctx, folder, steps),
        },
        extra,
    )
    config = compose(files, overrides)
    config["trainer"]["devices"] = 1
    config["trainer"]["callbacks"] = [
        {
            "class_path": "kbqa_lit.callbacks.adapter_export.AdapterExport",
            "init_args": {"dirpath": str(folder / "adapter")},
        },
        probe(folder, "fit_probe", warmup=1 if ctx.tiny else (2 if offload else 3)),
    ]
    config = for_device(config, ctx)
    started = time.perf_counter()
    cli = run_cli("fit", config, folder / "fit.yaml")
    fit = read_probe(folder, "fit_probe").get("fit", {})
    strategy = config["trainer"].get("strategy")
    result: dict[str, Any] = {
        "model": model_info(model_dir),
        "strategy": strategy if isinstance(strategy, str) else strategy.get("init_args", {}),
        "gradient_checkpointing": bool(config["model"]["init_args"].get("gradient_checkpointing")),
        "fit": fit,
        "fit_wall_s": round(time.perf_counter() - started, 2),
        "adapter_files": sorted(p.name for p in (folder / "adapter").glob("*")),
        "checkpoint_gib": folder_gib(folder / "logs" / "fit" / "checkpoints"),
        "estimate": memory_estimate(model_info(model_dir)["parameters"], size, fit, ctx.tiny, config),
    }
    if check_adapter:
        result["adapter"] = adapter_roundtrip(cli, folder / "adapter", model_dir, ctx)
    return result


def memory_estimate(params: int, size: str, fit: dict[str, Any], tiny: bool, config: dict[str, Any]) -> dict[str, Any]:
    """docs/tfs.md's memory formula at the measured padded batch (GiB, allocator figures, no CUDA context).

    Weights 2 bytes/parameter (with ZeRO-3 offload at most ``stage3_max_live_parameters`` = 1e9
    of them); LoRA + AdamW 16 bytes/parameter; saved activations 27·T·h bytes per layer (2·T·h
    per layer plus one layer's 27·T·h with checkpointing); logits ≈ 10·T·V bytes (bf16 logits,
    their fp32 copy and its gradient).
    """
    if tiny or not fit.get("padded_tokens_per_batch"):
        return {}
    shape = {"1b": LLAMA_1B, "7b": LLAMA2_7B, "13b": LLAMA2_13B}[size]
    h, layers, t, v = shape["hidden_size"], shape["num_hidden_layers"], fit["padded_tokens_per_batch"], VOCAB["llama"]
    init = config["model"]["init_args"]
    strategy = config["trainer"].get("strategy")
    offload = isinstance(strategy, dict) and strategy.get("init_args", {}).get("offload_parameters")
    weights = min(params, 10**9) * 2 if offload else params * 2  # ZeRO-3 keeps <= 1e9 parameters live
    adapter = int(fit.get("trainable_parameters") or 0) * 16
    if init.get("gradient_checkpointing"):
        acts = 2 * t * h * layers + 27 * t * h
    else:
        acts = 27 * t * h * layers
    logits = 10 * t * v
    total = (weights + adapter + acts + logits) / GIB
    measured = fit.get("gpu_peak_allocated_gib")
    return {
        "tokens_per_batch_padded": t,
        "weights_gib": round(weights / GIB, 2),
        "activations_gib": round(acts / GIB, 2),
        "logits_gib": round(logits / GIB, 2),
        "total_gib": round(total, 2),
        "measured_over_estimate": round(measured / total, 3) if measured and total else None,
    }


@torch.no_grad()
def adapter_roundtrip(cli: Any, adapter_dir: Path, model_dir: Path, ctx: Context) -> dict[str, Any]:
    """Reload the exported adapter onto the base folder (logits must equal the trained module's), then merge."""
    from kbqa_lit.modules.lora_causal_lm import LoraCausalLM

    trained = cli.model.eval()
    batch = next(iter(cli.datamodule.train_dataloader()))
    ids = batch["input_ids"][:4].to(trained.device)
    mask = batch["attention_mask"][:4].to(trained.device)
    before = trained(ids, mask).float()
    started = time.perf_counter()
    dtype = cli.model.hparams.torch_dtype
    reloaded = LoraCausalLM.from_adapter(adapter_dir, base=str(model_dir), torch_dtype=dtype).to(trained.device).eval()
    reload_s = time.perf_counter() - started
    after = reloaded(ids, mask).float()
    started = time.perf_counter()
    merged = reloaded.model.merge_and_unload()
    merge_s = time.perf_counter() - started
    merged_logits = merged(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
    real = mask.bool()
    return {
        "reload_s": round(reload_s, 2),
        "reload_max_abs_diff": float((before - after).abs()[real].max()),
        "reload_identical": bool(torch.equal(before[real], after[real])),
        "merge_s": round(merge_s, 2),
        "merged_max_abs_diff": float((after - merged_logits).abs()[real].max()),
        "merged_top1_agreement": float((after.argmax(-1) == merged_logits.argmax(-1))[real].float().mean()),
        "logit_scale": float(after[real].abs().max()),
    }


# ---------------------------------------------------------------------- Keqing


def part_keqing(ctx: Context) -> dict[str, Any]:
    """Keqing: the LoRA decomposer trained a few steps, merged (``kbqa lora merge``), then answering on CUDA.

    The decomposer is a TinyLlama-1.1B-shaped LLaMA here (the 7B shape's LoRA fine-tune is the same
    ``LoraCausalLM`` path, measured by ``tfs_7b``; a 7B merge writes and reloads 13 GB, which the
    check's time does not allow). The answering step decomposes with the merged model through the
    local Hugging Face backend (bf16 on the GPU) and matches sub-questions to templates with an all-MiniLM-L6-v2-shaped
    encoder on the same device; chains run on the embedded store.
    """
    from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule

    folder = ctx.part_dir("keqing")
    world, store = ctx.world, ctx.store
    templates = folder / "templates.json"
    run_kbqa(["keqing", "templates", "--input", str(world / "train.jsonl"), "--out", str(templates)])
    llama = llama_folder(ctx, "1b")
    words = ExtractorDataModule(
        kind="relation", ontology=str(world / "schema.json"), data_dir=str(world), tokenizer_name_or_path=None
    )
    encoder = bert_folder(ctx, words.tokenizer, minilm=True)
    steps = 4 if ctx.tiny else 20
    model: dict[str, Any] = {"model_name_or_path": str(llama), "model_config": None}
    if ctx.gpu:
        model.update(torch_dtype="bfloat16", target_modules=["q_proj", "v_proj"], lora_r=8, lora_alpha=16)
    config = compose(
        ["keqing/decomposer.yaml"],
        {
            "model": {"init_args": model},
            "data": {
                "init_args": {
                    "train_file": str(world / "train.jsonl"),
                    "val_file": str(world / "dev.jsonl"),
                    "templates": str(templates),
                    "tokenizer_name_or_path": str(llama),
                    "batch_size": 8,
                }
            },
            "trainer": {**short_run(ctx, folder, steps), "accelerator": "gpu", "precision": "bf16-mixed"},
        },
    )
    config["trainer"]["callbacks"] = [
        {
            "class_path": "kbqa_lit.callbacks.adapter_export.AdapterExport",
            "init_args": {"dirpath": str(folder / "adapter")},
        },
        probe(folder, "fit_probe", warmup=3 if not ctx.tiny else 1),
    ]
    run_cli("fit", for_device(config, ctx), folder / "fit.yaml")
    merged = folder / "merged"
    started = time.perf_counter()
    run_kbqa(["lora", "merge", "--adapter", str(folder / "adapter"), "--out", str(merged), "--base", str(llama)])
    merge_s = time.perf_counter() - started
    limit = 4 if ctx.tiny else 16
    sets = {
        "data.file": world / "test.jsonl",
        "kb.store": store,
        "linking.mode": "predicted",
        "templates": templates,
        "decomposer.backend.init_args.model": merged,
        "decomposer.backend.init_args.device": ctx.device,
        "decomposer.backend.init_args.torch_dtype": "bfloat16" if ctx.gpu else "float32",
        "decomposer.backend.init_args.max_new_tokens": 64 if ctx.tiny else 160,
        "matching.encoder": encoder,
        "matching.device": ctx.device,
        "matching.cache_dir": folder / "cache",
    }
    answer = keqing_run(folder / "predictions.jsonl", sets, limit)
    # A few dozen steps leave the decomposer's JSON unparsable, so nothing reaches template matching;
    # the gold decomposition (an oracle, for timing only) sends every sub-question through it.
    matching = keqing_run(folder / "predictions_gold_decomposition.jsonl", {**sets, "decomposer.source": "gold"}, limit)
    matching["matcher"] = time_matcher(templates, encoder, world / "dev.jsonl", ctx.device)
    size = folder_gib(merged)
    shutil.rmtree(merged, ignore_errors=True)  # disk: the merged model is a full copy of the base
    return {
        "model": model_info(llama),
        "fit": read_probe(folder, "fit_probe").get("fit", {}),
        "merge_s": round(merge_s, 2),
        "merged_gib": size,
        "answer": answer,
        "oracle_decomposition": matching,
    }


def time_matcher(templates: Path, encoder: Path, questions: Path, device: str) -> dict[str, Any]:
    """TemplateMatcher on ``device``: every question of a split against the mined templates (top 3)."""
    from kbqa_lit.data.keqing.templates import TemplateBank
    from kbqa_lit.pipelines.keqing.matching import TemplateMatcher

    texts = [json.loads(line)["question"] for line in questions.read_text(encoding="utf-8").splitlines() if line]
    started = time.perf_counter()
    matcher = TemplateMatcher(TemplateBank.load(templates).templates, str(encoder), device=device)
    load_s = time.perf_counter() - started
    matcher.top_k(texts[:8], 3)  # warm-up
    started = time.perf_counter()
    matcher.top_k(texts, 3)
    seconds = time.perf_counter() - started
    return {
        "device": str(next(matcher.sentences.model.parameters()).device),
        "templates": len(matcher.templates),
        "texts": len(texts),
        "load_s": round(load_s, 3),
        "texts_per_s": round(len(texts) / seconds, 1),
    }


def keqing_run(out: Path, sets: dict[str, Any], limit: int) -> dict[str, Any]:
    """``kbqa keqing run`` (``configs/keqing/run.yaml`` + ``--set``) on ``limit`` questions: timing and figures."""
    args = [
        "keqing",
        "run",
        "--config",
        str(ROOT / "configs/keqing/run.yaml"),
        "--limit",
        str(limit),
        "--out",
        str(out),
    ]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    started = time.perf_counter()
    printed = io.StringIO()
    with redirect_stdout(printed):
        run_kbqa(args)
    wall = time.perf_counter() - started
    summary = _last_json(printed.getvalue())
    overall = summary.get("all", {}) if isinstance(summary, dict) else {}
    return {
        "questions": limit,
        "wall_s": round(wall, 2),
        "questions_per_s": summary.get("questions_per_s"),
        "stage_seconds": summary.get("stage_seconds"),
        **{k: overall.get(k) for k in ("parsed", "f1", "hit1", "retrieval_recall")},
        "oracle_inputs": summary.get("oracle_inputs"),
    }


def _last_json(text: str) -> Any:
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"stdout_tail": text[-2000:]}


# ---------------------------------------------------------------------- the gpu-marked tests


def part_pytest_gpu(ctx: Context) -> dict[str, Any]:
    """``pytest -m gpu``: the gpu-marked tests (tiny shapes of every part on CUDA, the generator smoke test).

    The tests' output goes to this part's log as it comes (a run stopped at its time limit still
    shows how far it got); the counts are read from pytest's JUnit XML.
    """
    folder = ctx.part_dir("pytest_gpu")
    report = folder / "junit.xml"
    # only the files that hold gpu-marked tests: collecting the whole suite costs half a minute
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if "mark.gpu" in p.read_text())
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-v", "-p", "no:cacheprovider", f"--junitxml={report}"]
    code = subprocess.run([*cmd, *files], cwd=ROOT, check=False).returncode
    counts = junit_counts(report)
    if code not in (0, 5) or counts.get("failures") or counts.get("errors"):
        raise RuntimeError(f"pytest -m gpu exited with {code}: {counts}")
    return {"returncode": code, "seconds": round(time.perf_counter() - started, 1), "tests": counts, "files": files}


def junit_counts(path: Path) -> dict[str, int]:
    """Test, failure, error and skip counts of a pytest JUnit XML file (``{}`` when there is none)."""
    import xml.etree.ElementTree as ET

    if not path.is_file():
        return {}
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return {}
    return {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}


PARTS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "coq": part_coq,
    "fc": part_fc,
    "tfs_7b": lambda ctx: part_tfs(ctx, "tfs_7b"),
    "tfs_7b_zero2": lambda ctx: part_tfs(ctx, "tfs_7b_zero2"),
    "tfs_13b_zero3_offload": lambda ctx: part_tfs(ctx, "tfs_13b_zero3_offload"),
    "keqing": part_keqing,
    "tfs_7b_zero3_offload": lambda ctx: part_tfs(ctx, "tfs_7b_zero3_offload"),
    "pytest_gpu": part_pytest_gpu,
}
