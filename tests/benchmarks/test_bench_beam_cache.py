"""The beam-cache benchmark runs at a tiny shape on the CPU and finds the two searches equal in fp32."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_beam_cache.py"


def test_tiny_run_compares_equal_work(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_beam_cache", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "rows.json"
    args = ["--device", "cpu", "--shape", "tiny", "--beams", "3,5", "--batch", "2", "--source", "12"]
    rows = bench.main([*args, "--new-tokens", "4", "--dtypes", "fp32", "--repeats", "1", "--json", str(out)])
    assert [r["beams"] for r in rows] == [3, 5]
    assert all(r["equal_rows"] == r["rows"] == 2 * r["beams"] for r in rows)
    assert all(r["plain_s"] > 0 and r["shared_s"] > 0 for r in rows)
    assert json.loads(out.read_text())["rows"] == rows
