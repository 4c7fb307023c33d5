"""``benchmarks/bench_endpoint_load.py`` (issue 31, scenario 1): two evaluations at once equal a lone one.

The script starts a real Virtuoso, runs a lone evaluation on an empty shared execution cache, then
two at once on another; what must hold is correctness, not speed: each of the two picks the same
beam and answers for every question as the lone run, and no query fails. The figures themselves
(questions/s, p50/p99, hit rate at 1, 2, 4 and 8 evaluations) are the script's to print.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_endpoint_load.py"


@pytest.mark.slow  # a Virtuoso server and three evaluation processes (≈ 10 s)
@pytest.mark.virtuoso
def test_two_evaluations_at_once_equal_a_lone_one() -> None:
    cmd = [sys.executable, str(SCRIPT), "--levels", "2", "--questions", "40", "--memory", "256M", "--json"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if "skipped" in report:
        pytest.skip(f"{report['skipped']} (or run .ci/install-virtuoso.sh)")
    (level,) = report["levels"]
    assert level["evaluations"] == 2 and level["questions"] == 80
    assert level["identical_to_lone"] == 2, level
    assert level["failed_queries"] == 0, level["failures_seen"]
    assert level["executable"] == 80  # the gold beam is among every question's beams
