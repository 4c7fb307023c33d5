"""Every KB-facing step at 10^5, 10^6 (and, as an option, 10^7) triples of a Freebase-shaped KB (issue 32).

For each size, ``kbqa data synth-kb``'s generator writes the KB (:func:`~kbqa_lit.data.synthetic.fb_kb.write_scale_kb`,
kept in ``--work`` and reused), and a child process (so peak memory is per size) measures on the
embedded Oxigraph store (``kbqa kb build``'s :func:`~kbqa_lit.kb.store.loaders.build_store`):

- ``load``: bulk-load seconds and the store's size on disk;
- ``entity index``: :meth:`EntityIndex.build` seconds, the child's peak RSS growth during it, and
  the p50/p99 of :meth:`EntityIndex.search` over the questions;
- ``relation inventory`` / ``class list``: :meth:`RelationInventory.from_store` (``SELECT DISTINCT ?p``)
  and :meth:`AnswerTypes.kb_classes` (the answer-type check's class list, read once per KB);
- ``answer classes``: :meth:`AnswerTypes.answer_classes` of each question's gold answers (the
  answer-type check's per-question KB read);
- ``paths``: :meth:`PathFallback.paths` (one-, two- and mediator three-hop paths, the KB reads of the
  KB-path fallback and of the answer-type check's path search) per linked entity: ordinary ones (the
  questions' topic entities) and the largest hubs; with the rows the store returned;
- ``gold``: p50/p99 of executing the gold S-expressions.

Caches are off (``cache_size=0``); the store's timeout is ``--timeout`` seconds (a timed-out read is
reported as such). The sentence encoder is not loaded: only the KB parts of the steps are timed.
Prints one table (step × size) with growth factors between consecutive sizes and writes JSON to
``--out``. Virtuoso is not measured by this script (see docs/scale-out.md).

Usage::

    nice -n 10 python benchmarks/bench_kb_scale.py --sizes 1e5 1e6 --work /tmp/kbscale
    nice -n 10 python benchmarks/bench_kb_scale.py --sizes 1e5 1e6 1e7 --work /data/kbscale   # 10^7: ~1 GB disk
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic.fb_kb import write_scale_kb


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(1000 * _pct(values, 0.5), 3), "p99_ms": round(1000 * _pct(values, 0.99), 3)}


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _rss_mb() -> float:
    """Peak resident memory of this process so far, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    """Resident memory of this process now, MB (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def measure(kb_dir: Path, timeout: float, sample: int, path_entities: int) -> dict[str, Any]:
    """Measure every step on the KB in ``kb_dir`` (run in a child process)."""
    from kbqa_lit.kb.index.entity_index import EntityIndex
    from kbqa_lit.kb.index.relation_inventory import RelationInventory
    from kbqa_lit.kb.store import OxigraphStore
    from kbqa_lit.kb.store.execute import run_sexpr
    from kbqa_lit.kb.store.loaders import build_store
    from kbqa_lit.pipelines.selection.answer_type import AnswerTypes
    from kbqa_lit.pipelines.selection.path_fallback import PathFallback

    summary = json.loads((kb_dir / "summary.json").read_text())
    rows = list(read_jsonl(kb_dir / "questions.jsonl"))[:sample]
    out: dict[str, Any] = {"triples": summary["triples"], "questions": len(rows)}
    store_dir = kb_dir / "store"
    shutil.rmtree(store_dir, ignore_errors=True)
    t0 = time.perf_counter()
    build_store(store_dir, [kb_dir / "kb.nt"], "nt")
    out["load"] = {"seconds": round(time.perf_counter() - t0, 2), "disk_mb": round(_du(store_dir) / 2**20, 1)}
    store = OxigraphStore(store_dir, timeout=timeout, cache_size=0)
    try:
        rss0 = _current_rss_mb()
        t0 = time.perf_counter()
        index = EntityIndex.build(store)
        seconds = time.perf_counter() - t0
        lookups = []
        for row in rows:
            t1 = time.perf_counter()
            index.search(row.question, top_l=10)
            lookups.append(time.perf_counter() - t1)
        out["entity_index"] = {
            "seconds": round(seconds, 2),
            "rss_growth_mb": round(_current_rss_mb() - rss0, 1),  # the index, held
            "entities": len(index),
            **_ms(lookups),
        }
        del index
        t0 = time.perf_counter()
        inv = RelationInventory.from_store(store, cache_path=kb_dir / "relations.json", refresh=True)
        out["relation_inventory"] = {"seconds": round(time.perf_counter() - t0, 3), "relations": len(inv)}
        types = AnswerTypes()
        t0 = time.perf_counter()
        classes = types.kb_classes(store)
        out["class_list"] = {"seconds": round(time.perf_counter() - t0, 3), "classes": len(classes)}
        per_q = []
        for row in rows:
            t1 = time.perf_counter()
            types.answer_classes(store, [a.id for a in row.answers])
            per_q.append(time.perf_counter() - t1)
        out["answer_classes"] = _ms(per_q)
        out["paths"] = _paths(store, PathFallback(), rows, summary, path_entities)
        gold = []
        failed = 0
        for row in rows:
            _, result = run_sexpr(store, row.s_expression, semantics=row.meta["semantics"])
            failed += not result.ok
            gold.append(result.elapsed)
        out["gold"] = {**_ms(gold), "failed": failed}
    finally:
        store.close()
    out["peak_rss_mb"] = round(_rss_mb(), 1)
    return out


def _paths(store: Any, fallback: Any, rows: list[Any], summary: dict[str, Any], n: int) -> dict[str, Any]:
    ordinary = [next(iter(r.topic_entities)) for r in rows if not r.meta.get("hub")][:n]
    hubs = [h for h, _ in summary["top_degrees"][:3]]
    res: dict[str, Any] = {}
    for label, entities in (("ordinary", ordinary), ("hub", hubs)):
        times, counts, errors = [], [], 0
        for e in entities:
            t1 = time.perf_counter()
            paths, errs = fallback.paths(store, [e], mediators=True)
            times.append(time.perf_counter() - t1)
            counts.append(len(paths))
            errors += bool(errs)
        res[label] = {**_ms(times), "max_s": round(max(times), 3), "paths_mean": round(statistics.mean(counts), 1)}
        res[label]["failed"] = errors
    return res


STEPS = (
    ("load s", lambda m: m["load"]["seconds"]),
    ("store disk MB", lambda m: m["load"]["disk_mb"]),
    ("entity index build s", lambda m: m["entity_index"]["seconds"]),
    ("entity index RSS growth MB", lambda m: m["entity_index"]["rss_growth_mb"]),
    ("entity lookup p50 ms", lambda m: m["entity_index"]["p50_ms"]),
    ("entity lookup p99 ms", lambda m: m["entity_index"]["p99_ms"]),
    ("relation inventory s (per KB)", lambda m: m["relation_inventory"]["seconds"]),
    ("class list s (per KB)", lambda m: m["class_list"]["seconds"]),
    ("answer classes p50 ms (per q)", lambda m: m["answer_classes"]["p50_ms"]),
    ("answer classes p99 ms (per q)", lambda m: m["answer_classes"]["p99_ms"]),
    ("paths ordinary p50 ms (per q)", lambda m: m["paths"]["ordinary"]["p50_ms"]),
    ("paths ordinary p99 ms (per q)", lambda m: m["paths"]["ordinary"]["p99_ms"]),
    ("paths hub p50 ms (per q)", lambda m: m["paths"]["hub"]["p50_ms"]),
    ("paths hub max s (per q)", lambda m: m["paths"]["hub"]["max_s"]),
    ("paths hub failed reads", lambda m: m["paths"]["hub"]["failed"]),
    ("gold query p50 ms", lambda m: m["gold"]["p50_ms"]),
    ("gold query p99 ms", lambda m: m["gold"]["p99_ms"]),
    ("peak RSS MB (bench process)", lambda m: m["peak_rss_mb"]),
)


def table(results: dict[str, dict[str, Any]]) -> str:
    """Step × size, with the growth factor between consecutive sizes."""
    sizes = list(results)
    head = ["step"] + sizes + [f"{a}→{b}" for a, b in zip(sizes, sizes[1:], strict=False)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, get in STEPS:
        vals = [get(results[s]) for s in sizes]
        growth = [f"×{b / a:.1f}" if a else "–" for a, b in zip(vals, vals[1:], strict=False)]
        lines.append("| " + " | ".join([name] + [f"{v:g}" for v in vals] + growth) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Generate, load and measure each size; print the table and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["1e5", "1e6"], help="KB sizes in triples (default 1e5 1e6)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kbqa-kb-scale"), help="folder for KBs and stores")
    ap.add_argument("--seed", type=int, default=0, help="generator seed")
    ap.add_argument("--timeout", type=float, default=60.0, help="store timeout per query, seconds")
    ap.add_argument("--sample", type=int, default=200, help="questions measured per size")
    ap.add_argument("--path-entities", type=int, default=20, help="ordinary entities whose paths are read")
    ap.add_argument("--out", type=Path, default=None, help="JSON results file (default: print only)")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure(args.child, args.timeout, args.sample, args.path_entities)))
        return 0
    results: dict[str, dict[str, Any]] = {}
    for size in args.sizes:
        kb_dir = args.work / size
        if not (kb_dir / "summary.json").is_file():
            t0 = time.perf_counter()
            write_scale_kb(kb_dir, triples=int(float(size)), seed=args.seed)
            print(f"generated {size} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        cmd = [sys.executable, __file__, "--child", str(kb_dir), "--timeout", str(args.timeout)]
        cmd += ["--sample", str(args.sample), "--path-entities", str(args.path_entities)]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        results[size] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{size}: {json.dumps(results[size])}", file=sys.stderr)
    print(table(results))
    if args.out is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        payload = {"date": stamp, "command": " ".join(sys.argv), "results": results}
        args.out.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
