"""``benchmarks/gpu_check.py``: its ``--tiny`` form runs every part on the CPU, so the GPU check cannot rot.

The same script with real shapes runs on a GPU machine (docs/scale-out.md has its measured table);
the gpu-marked test runs every part at tiny shapes on CUDA (``pytest -m gpu``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.run_if import run_if

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
#: Every part but the gpu-marked tests (which would run this file again) and the 7B ZeRO-3 offload
#: variant (at tiny shapes the same run as the 13B one).
TINY_PARTS = "coq,fc,tfs_7b,tfs_7b_zero2,tfs_13b_zero3_offload,keqing"


def run_check(out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--out", str(out), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    report_file = out / "report.json"
    report = json.loads(report_file.read_text(encoding="utf-8")) if report_file.is_file() else {}
    return proc, report


def check_report(report: dict, device: str) -> None:
    parts = report["parts"]
    failed = {name: part.get("error") or part.get("log_tail") for name, part in parts.items() if part["status"] != "ok"}
    assert not failed, failed
    assert report["tiny"] is True and report["device"] == device
    coq = parts["coq"]
    assert coq["fit"]["optimizer_steps"] == 6 and coq["fit"]["tokens_per_s"] > 0
    for mode in ("none", "schema"):
        assert coq[f"test_{mode}"]["questions_per_s"] > 0 and coq[f"test_{mode}"]["beams"] == 5
    assert coq["constrained_cost_ratio"] > 0
    assert parts["fc"]["negatives"] == 48 and parts["fc"]["validate"]["samples"] > 0
    assert 0.0 <= parts["fc"]["validate"]["recall@10"] <= 1.0
    adapter = parts["tfs_7b"]["adapter"]
    assert adapter["reload_identical"] is True and adapter["reload_max_abs_diff"] == 0.0
    assert adapter["merged_top1_agreement"] > 0.99
    for name in ("tfs_7b", "tfs_7b_zero2", "tfs_13b_zero3_offload"):
        part = parts[name]
        assert part["fit"]["optimizer_steps"] == 4, name
        assert "adapter_model.safetensors" in part["adapter_files"], name
    assert parts["tfs_7b_zero2"]["strategy"]["stage"] == 2
    zero3 = parts["tfs_13b_zero3_offload"]["strategy"]
    assert zero3["stage"] == 3 and zero3["offload_optimizer"] and zero3["offload_parameters"]
    keqing = parts["keqing"]
    assert keqing["answer"]["questions"] == 4 and keqing["answer"]["stage_seconds"]["decomposition"] >= 0
    assert keqing["oracle_decomposition"]["oracle_inputs"] == ["decomposition"]
    assert keqing["oracle_decomposition"]["matcher"]["device"].startswith(device)


@pytest.mark.slow
@run_if(deepspeed=True)
def test_tiny_check_runs_every_part_on_the_cpu(tmp_path: Path) -> None:
    proc, report = run_check(tmp_path, "--device", "cpu", "--parts", TINY_PARTS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check_report(report, "cpu")
    for name in TINY_PARTS.split(","):
        assert f"| {name} | ok |" in proc.stdout


def test_a_spent_budget_skips_parts_and_an_unknown_part_is_refused(tmp_path: Path) -> None:
    proc, report = run_check(tmp_path, "--device", "cpu", "--parts", "coq,fc", "--budget", "0")
    assert proc.returncode == 1
    assert {p["status"] for p in report["parts"].values()} == {"skipped"}
    assert report["env"]["torch"] and report["env"]["python"]
    proc, _ = run_check(tmp_path, "--parts", "coq,warp_drive")
    assert proc.returncode == 2 and "unknown parts ['warp_drive']" in proc.stderr
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "real shapes need a CUDA GPU" in proc.stderr


@pytest.mark.gpu
@run_if(cuda=True, deepspeed=True)
def test_every_part_runs_at_tiny_shapes_on_cuda(tmp_path: Path) -> None:
    proc, report = run_check(tmp_path, "--device", "cuda", "--parts", TINY_PARTS + ",tfs_7b_zero3_offload")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check_report(report, "cuda")
    for name in ("coq", "fc", "tfs_7b", "tfs_7b_zero2", "tfs_13b_zero3_offload", "keqing"):
        assert report["parts"][name]["fit"]["gpu_peak_allocated_gib"] > 0, name
