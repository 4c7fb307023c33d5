"""S-expression parsing and S-expression → SPARQL conversion throughput on the real gold S-expressions.

usage: python benchmarks/bench_sexpr.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kbqa_lit.kb.lf.sexpr import parse_sexpr, to_sexpr_string
from kbqa_lit.kb.lf.sparql import SEMANTICS, sexpr_to_sparql

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def gold_sexprs() -> list[str]:
    out = [json.loads(line)["s_expression"] for line in (DATA / "grailqa" / "grailqa_dev.jsonl").open()]
    out += [
        r["SExpr"]
        for r in json.loads((DATA / "webqsp" / "WebQSP_train_subset_2897_sexpr.json").read_text())
        if r["SExpr"] != "null"
    ]
    out += [
        r["SExpr"]
        for r in json.loads((DATA / "cwq" / "cwq_test_part.json").read_text())
        if r.get("SExpr") and r["SExpr"] != "null"
    ]
    return out


def rate(fn, items, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return len(items) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exprs = gold_sexprs()
    trees = [parse_sexpr(e) for e in exprs]
    machine = platform.processor() or platform.machine()
    print(f"{len(exprs)} gold S-expressions (GrailQA dev, WebQSP train, CWQ test part); {machine}")
    print(f"parse:            {rate(parse_sexpr, exprs, args.repeat):>10,.0f} / s")
    print(f"print:            {rate(to_sexpr_string, trees, args.repeat):>10,.0f} / s")
    for semantics in SEMANTICS:
        r = rate(lambda e, s=semantics: sexpr_to_sparql(e, semantics=s), exprs, args.repeat)
        print(f"to SPARQL ({semantics:>13}, from text): {r:>10,.0f} / s")
    r = rate(sexpr_to_sparql, trees, args.repeat)
    print(f"to SPARQL (exclude-topic, from a parsed tree): {r:>10,.0f} / s")


if __name__ == "__main__":
    main()
