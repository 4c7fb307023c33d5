"""The cross-system comparison's wall time against its budget (issue: ≤ 60 minutes on 2 CPU cores).

    python benchmarks/bench_compare.py [--work outputs/compare_synthetic] [--run] [--quick]

With ``--run`` it runs ``kbqa pipeline configs/compare/synthetic.yaml`` first (resuming: finished steps
are skipped and keep the seconds they took). Then it reads the timings files the comparison and the four
chains wrote (``${work}/pipeline_timings.jsonl``, ``${work}/<system>/pipeline_timings.jsonl``) and prints,
per system, the minutes of training and of answering (the steps the comparison's scores name) and the
total against the budget. Figures of a resumed run are those of the run that did each step.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from kbqa_lit.runner.timings import read_timings

ROOT = Path(__file__).resolve().parents[1]
BUDGET_MIN = 60.0
SYSTEMS = ("coq", "tfs", "fc", "keqing")


def _latest(records: list[dict]) -> dict[tuple, float]:
    """Seconds of the latest finished run of each (step, binding)."""
    out: dict[tuple, float] = {}
    for r in records:
        out[(r["step"], tuple(sorted(r["binding"].items())))] = float(r["seconds"])
    return out


def main() -> int:
    """Run (optionally) and print the budget table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / "outputs" / "compare_synthetic")
    ap.add_argument("--run", action="store_true", help="run the comparison pipeline first")
    ap.add_argument("--quick", action="store_true", help="with --run: the --quick smoke form")
    args = ap.parse_args()
    if args.run:
        cmd = [sys.executable, "-m", "kbqa_lit", "pipeline", str(ROOT / "configs/compare/synthetic.yaml")]
        cmd += ["--set", f"work={args.work}", "--set", f"configs={ROOT / 'configs'}"] + (
            ["--quick"] if args.quick else []
        )
        subprocess.run(cmd, check=True, cwd=ROOT)
    top = _latest(read_timings(args.work / "pipeline_timings.jsonl"))
    print(f"comparison under {args.work}")
    print(f"{'part':<20} {'minutes':>8}  slowest step")
    total = 0.0
    for part, seconds in top.items():
        name = part[0] + (f"[{','.join(v for _, v in part[1])}]" if part[1] else "")
        slowest = ""
        inner_file = args.work / part[0] / "pipeline_timings.jsonl"
        if part[0] in SYSTEMS and inner_file.is_file():
            # a chain's own steps: the sum is right across resumed runs (the outer record holds the last run only)
            inner = _latest(read_timings(inner_file))
            seconds = sum(inner.values())
            step, secs = max(inner.items(), key=lambda kv: kv[1])
            slowest = f"{step[0]}{dict(step[1]) or ''} {secs / 60:.1f} min"
        print(f"{name:<20} {seconds / 60:>8.1f}  {slowest}")
        total += seconds
    print(f"{'total':<20} {total / 60:>8.1f}  budget {BUDGET_MIN:.0f} min: ratio {total / 60 / BUDGET_MIN:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
