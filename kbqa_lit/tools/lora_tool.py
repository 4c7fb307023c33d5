"""``kbqa lora``: merge LoRA adapters, export adapter checkpoints, run the TFS fallback pipeline.

- ``kbqa lora merge --adapter DIR --out DIR [--base NAME|DIR] [--tokenizer NAME|DIR] [--dtype D]``
  merges the adapter into its base (peft ``merge_and_unload``) and writes a standalone model
  and tokenizer (``from_pretrained``-ready). Train a fresh LoRA on top by pointing a config's
  ``model.init_args.model_name_or_path`` and ``data.init_args.tokenizer_name_or_path`` at it
  (the paper's continued training); ``kbqa pipeline configs/tfs/pipeline_merge_continue.yaml``
  runs fit → merge → fit on the merged model in one command.
- ``kbqa lora export --ckpt FILE.ckpt --out DIR`` turns an adapter-only Lightning checkpoint of
  ``LoraCausalLM`` into an adapter folder (as ``AdapterExport`` writes at the end of ``fit``).
- ``kbqa lora pipeline --config configs/tfs/pipeline.yaml [--set KEY=VALUE ...] [--split S] [--limit N]
  [--out FILE] [--no-s1] [--no-s2] [--no-s3]`` answers questions with the S1 → S2 → S3 fallback
  (:mod:`kbqa_lit.pipelines.tfs.fallback`), writes one JSON line per question and prints the
  metrics (F1, Hit@1, EM, executable rate, per-strategy shares) as JSON. ``--set`` changes a config
  value by its dotted key (``form=extended``, ``data.file=...``, ``kb.build_from=[]``, a list item by
  its index: ``members.0.adapters.s1=DIR``), as ``kbqa keqing run --set`` does.

Every command prints one JSON object to stdout.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import apply_set_pairs, command_group, first_line, parse_set_pairs, print_json

MERGE_META = "kbqa_merge.json"
#: Where a ``LoraCausalLM`` checkpoint comes from (for error messages).
LORA_CHECKPOINT_HINT = "kbqa fit --config configs/tfs/base.yaml --config configs/tfs/s1.yaml writes one"
#: JSON files of an adapter folder that ``merge`` reads (peft's config; kbqa_lit's hyper-parameters, optional).
ADAPTER_JSON_FILES = ("adapter_config.json", "kbqa_lora.json")


def check_adapter_json(adapter_dir: Path) -> None:
    """Require the adapter folder's JSON files to be JSON objects (peft's and kbqa_lit's own).

    Args:
        adapter_dir: The adapter folder.

    Raises:
        UserInputError: Naming the file (and line and column) when ``adapter_config.json`` is
            missing, or when it or ``kbqa_lora.json`` is not a JSON object.
    """
    if not (adapter_dir / ADAPTER_JSON_FILES[0]).is_file():
        raise UserInputError(f"no LoRA adapter in {adapter_dir} (adapter_config.json is missing)")
    for name in ADAPTER_JSON_FILES:
        path = adapter_dir / name
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            where = f"line {exc.lineno} column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else exc
            raise UserInputError(f"{path}: not valid JSON ({where})") from None
        if not isinstance(doc, dict):
            raise UserInputError(f"{path}: expected a JSON object, got {type(doc).__name__}")


def merge_adapter(
    adapter: str | Path,
    out: str | Path,
    base: str | None = None,
    tokenizer: str | None = None,
    dtype: str | None = None,
) -> dict[str, Any]:
    """Merge a LoRA adapter into its base and save the standalone model and tokenizer.

    Args:
        adapter: The adapter folder (``save_adapter``/``AdapterExport``, or any peft LoRA folder).
        out: The output folder.
        base: Base model name or folder (default: the one the adapter records).
        tokenizer: Tokenizer name or folder (default: the adapter's, else the base's).
        dtype: Dtype to merge and save in (``float32``, ``bfloat16``...; default the base's).

    Returns:
        A JSON-ready summary (``out``, ``base``, ``adapter``, ``parameters``, ``seconds``).

    Raises:
        UserInputError: When the adapter folder is missing, one of its JSON files is malformed (the
            message names the file), or it names no base.
    """
    from kbqa_lit.backbones.causal import build_causal_tokenizer
    from kbqa_lit.modules.lora_causal_lm import LoraCausalLM

    start = time.perf_counter()
    adapter_dir = Path(adapter)
    check_adapter_json(adapter_dir)
    config = adapter_dir / ADAPTER_JSON_FILES[0]
    overrides: dict[str, Any] = {"torch_dtype": dtype, "gradient_checkpointing": False}
    if tokenizer is not None:
        overrides["tokenizer"] = build_causal_tokenizer(tokenizer)
    try:
        module = LoraCausalLM.from_adapter(adapter_dir, base=base, **overrides)
    except (ValueError, TypeError, KeyError) as exc:  # peft on a config it cannot use, or no base named
        message = str(exc) if str(adapter_dir) in str(exc) else f"{config}: peft cannot use it ({first_line(exc)})"
        raise UserInputError(message) from None
    merged = module.model.merge_and_unload()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out_dir))
    if module.tokenizer is None:
        raise UserInputError("no tokenizer in the adapter or the base: pass --tokenizer")
    module.tokenizer.save_pretrained(str(out_dir))
    summary = {
        "out": str(out_dir),
        "base": base or module.hparams.model_name_or_path or "(built from config)",
        "adapter": str(adapter_dir),
        "parameters": sum(p.numel() for p in merged.parameters()),
        "seconds": round(time.perf_counter() - start, 3),
    }
    (out_dir / MERGE_META).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def export_checkpoint(ckpt: str | Path, out: str | Path) -> dict[str, Any]:
    """Write the adapter folder of an adapter-only ``LoraCausalLM`` checkpoint."""
    from kbqa_lit.modules.checkpoint_loading import load_module_checkpoint
    from kbqa_lit.modules.lora_causal_lm import LoraCausalLM

    path = Path(ckpt)
    module = load_module_checkpoint(
        path, LoraCausalLM, hint="kbqa fit --config configs/tfs/base.yaml --config configs/tfs/s1.yaml writes one"
    )
    folder = module.save_adapter(out)
    return {"out": str(folder), "ckpt": str(path), "adapter_weights": len(module.adapter_state_dict())}


# --------------------------------------------------------------------------- commands


def cmd_merge(args: argparse.Namespace) -> int:
    """``kbqa lora merge``."""
    print_json(merge_adapter(args.adapter, args.out, base=args.base, tokenizer=args.tokenizer, dtype=args.dtype))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``kbqa lora export``."""
    print_json(export_checkpoint(args.ckpt, args.out))
    return 0


def pipeline_config(path: str | Path, pairs: list[str] | None = None) -> Any:
    """The typed ``kbqa lora pipeline`` config of ``path`` with the ``--set KEY=VALUE`` pairs applied.

    Args:
        path: The pipeline YAML.
        pairs: ``key=value`` texts (dotted keys, YAML values; an index into a list:
            ``members.0.adapters.s1=DIR``), applied in order.

    Returns:
        A :class:`~kbqa_lit.pipelines.tfs.config.TFSPipelineConfig`.

    Raises:
        UserInputError: A malformed pair, a key that is no field of the config (naming it), an index
            past a list's end, or a config that does not parse.
    """
    from kbqa_lit.pipelines.config_files import read_config_mapping
    from kbqa_lit.pipelines.tfs.config import check_override_key, parse_pipeline_config

    overrides = parse_set_pairs(pairs or [])
    for key in overrides:
        check_override_key(key)
    raw = apply_set_pairs(read_config_mapping(path, "pipeline"), overrides)
    return parse_pipeline_config(raw, path)


def cmd_pipeline(args: argparse.Namespace) -> int:
    """``kbqa lora pipeline``: the typed config and the run live in :mod:`kbqa_lit.pipelines.tfs.config`."""
    from kbqa_lit.pipelines.tfs.config import run_pipeline

    config = pipeline_config(args.config, args.set)
    disable = tuple(s for s, off in (("s1", args.no_s1), ("s2", args.no_s2), ("s3", args.no_s3)) if off)
    print_json(run_pipeline(config, split=args.split, limit=args.limit, out=args.out, disable=disable))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa lora merge``, ``export`` and ``pipeline`` to the ``kbqa`` parser."""
    sub = command_group(
        subparsers,
        "lora",
        help="LoRA adapters: merge into the base, export checkpoints, TFS fallback inference",
        description="Merge LoRA adapters, export adapter checkpoints, run the TFS-KBQA fallback pipeline.",
    )

    merge = sub.add_parser(
        "merge",
        help="merge an adapter into its base and save a standalone model",
        description="peft merge_and_unload; writes the merged model and tokenizer (from_pretrained-ready).",
    )
    merge.add_argument("--adapter", required=True, help="adapter folder (AdapterExport / save_adapter)")
    merge.add_argument("--out", required=True, help="output folder of the merged model")
    merge.add_argument("--base", default=None, help="base model name or folder (default: recorded in the adapter)")
    merge.add_argument("--tokenizer", default=None, help="tokenizer (default: the adapter's, else the base's)")
    merge.add_argument("--dtype", default=None, choices=("float32", "bfloat16", "float16"), help="dtype of the merge")
    merge.set_defaults(func=cmd_merge)

    export = sub.add_parser(
        "export",
        help="write the adapter folder of an adapter-only LoraCausalLM checkpoint",
        description="Load an adapter-only .ckpt of LoraCausalLM and write its adapter folder.",
    )
    export.add_argument("--ckpt", required=True, help="the Lightning checkpoint")
    export.add_argument("--out", required=True, help="the adapter folder to write")
    export.set_defaults(func=cmd_export)

    pipe = sub.add_parser(
        "pipeline",
        help="TFS-KBQA inference: S1 -> S2 -> S3 fallback over one or several models",
        description="Answer questions with the S1 -> S2 -> S3 fallback; writes JSON lines, prints metrics.",
    )
    pipe.add_argument("--config", required=True, help="pipeline YAML (see configs/tfs/pipeline.yaml)")
    pipe.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config value (dotted key; a list item by index: members.0.adapters.s1=DIR); repeatable",
    )
    pipe.add_argument("--split", default=None, help="split of data_dir (train, dev, test; default: config)")
    pipe.add_argument("--limit", type=int, default=None, help="answer only the first N questions")
    pipe.add_argument("--out", default=None, help="per-question JSON lines (default: config 'out')")
    for strategy in ("s1", "s2", "s3"):
        pipe.add_argument(f"--no-{strategy}", action="store_true", help=f"skip {strategy.upper()} (ablation)")
    pipe.set_defaults(func=cmd_pipeline)


__all__ = ["export_checkpoint", "merge_adapter", "pipeline_config", "register"]
