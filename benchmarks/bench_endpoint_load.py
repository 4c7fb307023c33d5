"""Load on one endpoint (issue 31, scenario 1): 1, 2, 4 and 8 evaluations at once on one Virtuoso and one disk cache.

One real Virtuoso server holds the synthetic world (seed 0). An *evaluation* is one process that
answers every question the way the answer chain does: execution-guided selection
(:func:`select_answer`) over seven beams per question — the gold S-expression at a random place
among six with a relation or an entity swapped (the beams of ``tests/kb/test_virtuoso.py``), fixed
per question — on an :class:`EndpointStore` whose only cache is one SQLite
:class:`ExecutionCache` shared by every evaluation (the in-memory cache is off, so each lookup
goes to the shared file). For each level (a fresh, empty cache file each) the evaluations start
together behind a barrier; the script prints questions/s (all evaluations' questions over the
level's wall time), p50/p99 latency of a query (``execute`` as the selector sees it: cache lookup,
else HTTP round trip and cache write), the cache hit rate, failed queries, and whether every
evaluation's picks (chosen beam and answers per question) equal those of a lone evaluation run
first on an empty cache.

Needs ``virtuoso-opensource-7-bin`` (``.ci/install-virtuoso.sh``); without it the script says so
and stops. Usage: ``python benchmarks/bench_endpoint_load.py [--levels 1,2,4,8] [--questions 300]``;
``--json`` prints one JSON document instead of the table (``tests/benchmarks/test_endpoint_load.py``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from kbqa_lit.data.formats.synthetic import read_synthetic
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import StoreError
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sexpr import Atom, map_atoms, parse_sexpr, schema_items
from kbqa_lit.kb.store import ExecutionResult
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.virtuoso.server import VirtuosoServer, find_binaries
from kbqa_lit.pipelines.selection.execution_guided import select_answer

BEAMS = 7


def beams_for(ex: KBQAExample, relations: list[str], entities: list[tuple[str, str]]) -> tuple[list[str], dict]:
    """Seven normalised beams for ``ex`` (gold among six corrupted ones) and its labels; fixed per question."""
    rng = random.Random(ex.qid)
    gold = parse_sexpr(ex.s_expression or "")
    labels = {**dict(rng.sample(entities, 3)), **ex.topic_entities}
    beams = []
    for _ in range(BEAMS - 1):
        rel, ent, new_rel = rng.choice(schema_items(gold).relations), rng.choice(sorted(labels)), rng.choice(relations)
        swapped = map_atoms(
            gold,
            lambda a, r, rel=rel, ent=ent, new_rel=new_rel: (
                Atom(new_rel) if a.text == rel else Atom(ent) if r == "entity" else a
            ),
        )
        beams.append(normalize_sexpr(swapped, labels))
    beams.insert(rng.randrange(BEAMS), normalize_sexpr(gold, labels))
    return beams, labels


class TimedKB:
    """A knowledge base that times each ``execute`` of the store it wraps."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.seconds: list[float] = []
        self.failed: list[str] = []

    def execute(self, sparql: str) -> ExecutionResult:
        """Execute on the wrapped store, recording the wall time and any failure."""
        start = time.perf_counter()
        result = self.store.execute(sparql)
        self.seconds.append(time.perf_counter() - start)
        if not result.ok:
            self.failed.append(result.error or "failed")
        return result


def evaluate(world: str, endpoint: str, graph: str, cache: str, limit: int, barrier: Any, out: Any) -> None:
    """One evaluation (a process): answer the first ``limit`` questions; put a summary on ``out``."""
    from kbqa_lit.kb.store import EndpointStore

    examples = [ex for s in ("train", "dev", "test") for ex in read_synthetic(world, s)][:limit]
    relations = sorted({r for ex in examples for r in schema_items(ex.s_expression or "").relations})
    entities = sorted({(e, n) for ex in examples for e, n in ex.topic_entities.items()})
    prepared = [(ex, *beams_for(ex, relations, entities)) for ex in examples]
    disk = ExecutionCache(cache)
    store = EndpointStore(endpoint, params={"default-graph-uri": graph}, disk_cache=disk, cache_size=0, retries=2)
    kb = TimedKB(store)
    if barrier is not None:
        barrier.wait()
    start = time.perf_counter()
    picks = []
    for ex, beams, labels in prepared:
        sel = select_answer(beams, kb, semantics=ex.semantics, label_to_ids=invert_labels(labels))
        picks.append([ex.qid, sel.chosen_beam, sorted(sel.answers)])
    seconds = time.perf_counter() - start
    disk.close()
    out.put(
        {
            "seconds": seconds,
            "latencies": kb.seconds,
            "hits": disk.hits,
            "misses": disk.misses,
            "failed": kb.failed[:5],
            "failures": len(kb.failed),
            "picks": picks,
        }
    )


def run_level(n: int, root: Path, server: VirtuosoServer, world: Path, limit: int) -> list[dict[str, Any]]:
    """``n`` evaluations at once on a fresh cache file; their summaries, plus the level's wall time."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    cache = root / f"cache-{n}-{time.monotonic_ns()}.sqlite"
    args = (str(world), server.endpoint, server.graph, str(cache), limit, barrier, out)
    procs = [ctx.Process(target=evaluate, args=args) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join()
    return results


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarise(n: int, results: list[dict[str, Any]], lone: list[list[Any]]) -> dict[str, Any]:
    """The level's figures."""
    latencies = [s for r in results for s in r["latencies"]]
    hits, misses = sum(r["hits"] for r in results), sum(r["misses"] for r in results)
    questions = sum(len(r["picks"]) for r in results)
    wall = max(r["seconds"] for r in results)
    return {
        "evaluations": n,
        "questions": questions,
        "wall_s": round(wall, 2),
        "questions_per_s": round(questions / wall, 1),
        "queries": len(latencies),
        "p50_ms": round(pct(latencies, 0.5) * 1e3, 2),
        "p99_ms": round(pct(latencies, 0.99) * 1e3, 2),
        "hit_rate": round(hits / max(1, hits + misses), 3),
        "failed_queries": sum(r["failures"] for r in results),
        "failures_seen": sorted({f for r in results for f in r["failed"]})[:3],
        "identical_to_lone": sum(r["picks"] == lone for r in results),
        "executable": sum(1 for r in results for p in r["picks"] if p[1] is not None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,2,4,8", help="evaluations at once, comma-separated")
    parser.add_argument("--questions", type=int, default=300, help="questions per evaluation (synthetic world)")
    parser.add_argument("--size", default="small", help="synthetic world size")
    parser.add_argument("--memory", default="512M", help="memory for Virtuoso's buffers")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = parser.parse_args()
    try:
        find_binaries()
    except StoreError as exc:
        print(json.dumps({"skipped": str(exc)}) if args.json else f"skipped: {exc} (or run .ci/install-virtuoso.sh)")
        return
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = root / "world"
        build_world(world, seed=0, size=args.size)
        server = VirtuosoServer(root / "vdb", memory=args.memory, max_query_seconds=30, clean_on_exit=True)
        server.prepare(data_dirs=[world])
        try:
            server.start(timeout=120)
            server.load([world / "kb.nt"])
            lone = run_level(1, root, server, world, args.questions)[0]["picks"]
            rows = [summarise(n, run_level(n, root, server, world, args.questions), lone) for n in levels]
        finally:
            server.cleanup()
    if args.json:
        print(json.dumps({"questions": args.questions, "levels": rows}))
        return
    print(f"synthetic world ({args.size}), {args.questions} questions x {BEAMS} beams per evaluation, one Virtuoso")
    head = "evals  questions/s  queries  p50 ms  p99 ms  hit rate  failed  identical to lone  wall s"
    print(head)
    for r in rows:
        print(
            f"{r['evaluations']:5d}  {r['questions_per_s']:11.1f}  {r['queries']:7d}  {r['p50_ms']:6.2f}  "
            f"{r['p99_ms']:6.2f}  {r['hit_rate']:8.3f}  {r['failed_queries']:6d}  "
            f"{r['identical_to_lone']:>9d}/{r['evaluations']:<7d}  {r['wall_s']:6.2f}"
        )
        if r["failures_seen"]:
            print(f"       failures: {r['failures_seen']}")


if __name__ == "__main__":
    main()
