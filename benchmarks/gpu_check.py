"""The GPU check: every GPU path the configs promise, run for real on one GPU, in one script (≈ 7 min on an H100).

Parts (each in its own process, in this order, each with its own time limit inside ``--budget``;
``pytest_gpu`` only when ``--parts`` names it):

======================== =====================================================================
``coq``                  CoQ multitask generator, t5-base shape, ``configs/coq/freebase.yaml``, bf16:
                         fit steps/s, tokens/s, peak memory; ``kbqa test`` with 50 beams,
                         unconstrained and schema-constrained: questions/s and the cost ratio
``fc``                   FC-KBQA relation extractor, bert-base shape, 48 same-domain negatives
``tfs_7b``               TFS-KBQA LoRA, LLaMA-2-7B shape, plain bf16; adapter export, reload
                         (identical logits) and merge
``tfs_7b_zero2``         the same under DeepSpeed ZeRO-2 (``configs/tfs/llama2_7b_webqsp.yaml``)
``tfs_13b_zero3_offload`` LLaMA-2-13B shape, ZeRO-3 with parameter + optimizer offload
``keqing``               Keqing's LoRA decomposer (TinyLlama-1.1B shape), ``kbqa lora merge``,
                         ``kbqa keqing run`` with decomposition and template matching on CUDA
``tfs_7b_zero3_offload`` 7B shape under ``configs/trainer/deepspeed_lora_stage_3_offload.yaml``
``pytest_gpu``           ``pytest -m gpu`` (tiny shapes of every part on CUDA; ≥ 2.5 min)
======================== =====================================================================

Models are built from the real configs' shapes with random weights and saved with
``save_pretrained`` into local folders that the shipped configs then load (no download). The
report (``<out>/report.json``, rewritten after every part) and a table on stdout give the figures;
``--tiny`` runs the same parts with tiny shapes on the CPU (the self-test in ``tests/``)::

    python benchmarks/gpu_check.py                       # on a GPU machine: every part, real shapes
    python benchmarks/gpu_check.py --parts coq,fc        # some parts
    python benchmarks/gpu_check.py --tiny --out /tmp/gc  # CPU, tiny shapes (what the test runs)

Results go to ``docs/scale-out.md`` ("Measured on a GPU").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_json_atomic

#: Seconds each part may take on the GPU (its process is killed after that); the budget caps them too.
PART_LIMITS = {
    "coq": 150,
    "fc": 60,
    "tfs_7b": 180,
    "tfs_7b_zero2": 100,
    "tfs_13b_zero3_offload": 240,
    "keqing": 120,
    "tfs_7b_zero3_offload": 150,
    "pytest_gpu": 300,
}
#: What a plain run does (≈ 7 min on an H100, measured); ``pytest_gpu`` runs when named (``--parts``).
ORDER = [p for p in PART_LIMITS if p != "pytest_gpu"]
TINY_LIMIT = 300


def environment() -> dict[str, Any]:
    """Versions and the device (what the report's figures were measured with)."""
    import importlib.metadata as md

    import torch

    env: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    for name in ("torch", "lightning", "transformers", "peft", "deepspeed", "jsonargparse", "pyoxigraph"):
        try:
            env[name] = md.version(name)
        except md.PackageNotFoundError:
            env[name] = None
    env["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = props.name
        env["gpu_memory_gib"] = round(props.total_memory / 1024**3, 1)
        env["bf16"] = torch.cuda.is_bf16_supported()
    env["cpus"] = os.cpu_count()
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            env["host_memory_gib"] = round(int(handle.readline().split()[1]) / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    return env


def run_part_here(name: str, out: Path, tiny: bool, device: str) -> int:
    """Run one part in this process and write ``<out>/parts/<name>.json``; 0 on success."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_check_assets import Context
    from gpu_check_parts import PARTS

    result_file = out / "parts" / f"{name}.json"
    result_file.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        result = {"status": "ok", **PARTS[name](Context(out=out, tiny=tiny, device=device))}
        code = 0
    except Exception as exc:  # reported in the table; the next part still runs
        traceback.print_exc()
        result = {"status": "failed", "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
        code = 1
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_json_atomic(result_file, result)
    return code


def run_part(name: str, args: argparse.Namespace, limit: float) -> dict[str, Any]:
    """Run one part in a child process with a time limit; its result, or why there is none."""
    log_file = args.out / "logs" / f"{name}.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    result_file = args.out / "parts" / f"{name}.json"
    result_file.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--part",
        name,
        "--out",
        str(args.out),
        "--device",
        args.device,
    ]
    if args.tiny:
        cmd.append("--tiny")
    started = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with log_file.open("w", encoding="utf-8") as log:
        try:
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=limit, check=False, env=env)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "limit_s": round(limit), "seconds": round(time.perf_counter() - started, 1)}
    if not result_file.is_file():
        tail = log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
        return {"status": "died", "seconds": round(time.perf_counter() - started, 1), "log_tail": tail}
    return json.loads(result_file.read_text(encoding="utf-8"))


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(report: dict[str, Any]) -> str:
    """One row per part: status, seconds, steps/s, tokens/s, peak GPU and host memory, the part's own figure."""
    rows = [
        "| part | status | s | steps/s | tokens/s | peak GPU GiB (alloc / reserved) | host peak GiB | figure |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, part in report["parts"].items():
        fit = part.get("fit", {}) if isinstance(part.get("fit"), dict) else {}
        figure = ""
        if name == "coq" and part.get("test_none"):
            n, s = part["test_none"], part.get("test_schema", {})
            figure = (
                f"{n.get('beams')} beams: {_fmt(n.get('questions_per_s'))} q/s free, "
                f"{_fmt(s.get('questions_per_s'))} q/s constrained (×{_fmt(part.get('constrained_cost_ratio'))} time)"
            )
        elif name == "fc" and part.get("validate"):
            figure = (
                f"{part.get('negatives')} negatives; validation {_fmt(part['validate'].get('samples_per_s'), 1)} rows/s"
            )
        elif name.startswith("tfs") and part.get("estimate") is not None:
            est = part["estimate"]
            ratio = _fmt(est.get("measured_over_estimate"))
            figure = f"estimate {_fmt(est.get('total_gib'))} GiB (measured/estimate {ratio})"
            if part.get("adapter"):
                a = part["adapter"]
                agree = _fmt(a.get("merged_top1_agreement"), 3)
                figure += f"; reload identical: {a.get('reload_identical')}, merged top-1 agreement {agree}"
        elif name == "keqing" and part.get("answer"):
            matcher = part.get("oracle_decomposition", {}).get("matcher") or {}
            figure = (
                f"answering {_fmt(part['answer'].get('questions_per_s'))} q/s (decomposer on {report['device']}); "
                f"template matching {_fmt(matcher.get('texts_per_s'), 0)} texts/s on {matcher.get('device')}"
            )
        elif name == "pytest_gpu" and part.get("tests"):
            figure = ", ".join(f"{v} {k}" for k, v in part["tests"].items())
        elif part.get("status") != "ok":
            figure = (part.get("error") or " ".join(part.get("log_tail", [])[-2:]) or "")[:160]
        rows.append(
            f"| {name} | {part.get('status')} | {_fmt(part.get('seconds'), 0)} | {_fmt(fit.get('batches_per_s'))} | "
            f"{_fmt(fit.get('tokens_per_s'), 0)} | {_fmt(fit.get('gpu_peak_allocated_gib'))} / "
            f"{_fmt(fit.get('gpu_peak_reserved_gib'))} | {_fmt(fit.get('host_peak_rss_gib'))} | {figure} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run the check (or, with ``--part``, one part in this process)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/gpu_check"), help="output folder")
    parser.add_argument(
        "--parts",
        default=",".join(ORDER),
        help=f"comma-separated parts of {list(PART_LIMITS)} (default: all but the last)",
    )
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (the CPU self-test)")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto", help="auto: cuda when available")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds for all parts together (default 480)")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # internal: run one part in this process
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    if args.device == "auto":
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.part:
        return run_part_here(args.part, args.out, args.tiny, args.device)
    names = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in names if p not in PART_LIMITS]
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {list(PART_LIMITS)}")
    if not args.tiny and args.device != "cuda":
        parser.error("real shapes need a CUDA GPU (7B/13B models); use --tiny on the CPU")
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "tiny": args.tiny,
        "device": args.device,
        "env": environment(),
        "parts": {},
    }
    path = args.out / "report.json"
    deadline = time.monotonic() + args.budget
    for name in names:
        left = deadline - time.monotonic()
        if left < 20:
            report["parts"][name] = {"status": "skipped", "reason": f"budget of {args.budget:.0f} s spent"}
            continue
        limit = min(TINY_LIMIT if args.tiny else PART_LIMITS[name], left)
        print(f"== {name} (limit {limit:.0f} s)", flush=True)
        report["parts"][name] = run_part(name, args, limit)
        print(f"   {report['parts'][name].get('status')} in {report['parts'][name].get('seconds')} s", flush=True)
        write_json_atomic(path, report)
    write_json_atomic(path, report)
    print(table(report))
    print(f"report: {path}")
    return 0 if all(p.get("status") == "ok" for p in report["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
