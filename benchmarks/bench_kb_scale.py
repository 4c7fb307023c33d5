"""Every KB-facing step at 10^5, 10^6 (and, as an option, 10^7) triples of a Freebase-shaped KB (issue 32).

For each size, ``kbqa data synth-kb``'s generator writes the KB (:func:`~kbqa_lit.data.synthetic.fb_kb.write_scale_kb`,
kept in ``--work`` and reused), and a child process (so peak memory is per size) measures on the
embedded Oxigraph store (``kbqa kb build``, in a subprocess) and, with ``--stores oxigraph virtuoso``, a
fresh local Virtuoso 7 (:class:`~kbqa_lit.kb.virtuoso.server.VirtuosoServer`, the server of
``kbqa kb serve-virtuoso``; bulk loader, queries over HTTP):

- ``load``: bulk-load seconds, the store's size on disk and the loader's peak RSS (Oxigraph);
- ``entity index``: :meth:`EntityIndex.build` seconds, the memory the index holds, the build's peak
  above what the process had before (torch is imported only after it), and
  the p50/p99 of :meth:`EntityIndex.search` over the questions; the same for the on-disk index
  (:meth:`DiskEntityIndex.build`, measured first), with its file size;
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
``--out``.

Usage::

    nice -n 10 python benchmarks/bench_kb_scale.py --sizes 1e5 1e6 --work /tmp/kbscale
    nice -n 10 python benchmarks/bench_kb_scale.py --sizes 1e5 1e6 --stores oxigraph virtuoso --work /tmp/kbscale
    nice -n 10 python benchmarks/bench_kb_scale.py --sizes 1e5 1e6 1e7 --work /data/kbscale   # 10^7: ~1 GB disk
    python benchmarks/bench_kb_scale.py --merge small.json big.json     # one table from two runs' --out files
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


def _load_oxigraph(kb_dir: Path, timeout: float) -> tuple[Any, dict[str, Any], Any]:
    """``kbqa kb build`` in a subprocess (its own peak memory), then the store opened read-only."""
    from kbqa_lit.kb.store import OxigraphStore

    store_dir = kb_dir / "store"
    shutil.rmtree(store_dir, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "kbqa_lit.cli", "kb", "build", "--format", "nt", "--store", str(store_dir)]
    subprocess.run([*cmd, str(kb_dir / "kb.nt")], check=True, capture_output=True)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    load = {"seconds": round(seconds, 2), "disk_mb": round(_du(store_dir) / 2**20, 1)}
    load["peak_rss_mb"] = round(peak / 1024, 1) if peak > before else None  # None: below an earlier child's
    store = OxigraphStore(store_dir, timeout=timeout, cache_size=0)
    return store, load, store.close


def _load_virtuoso(kb_dir: Path, timeout: float) -> tuple[Any, dict[str, Any], Any]:
    """A fresh Virtuoso database (``kbqa kb serve-virtuoso``'s server), bulk-loaded with the KB."""
    from kbqa_lit.kb.virtuoso.server import VirtuosoServer

    db = kb_dir / "virtuoso"
    shutil.rmtree(db, ignore_errors=True)
    server = VirtuosoServer(db, memory="2G", max_query_seconds=0, max_rows=10_000_000, clean_on_exit=True)
    server.__enter__()
    try:
        t0 = time.perf_counter()
        server.load([kb_dir / "kb.nt"])
        seconds = time.perf_counter() - t0
        load = {"seconds": round(seconds, 2), "disk_mb": round(_du(db) / 2**20, 1), "peak_rss_mb": None}
        store = server.store(timeout=timeout, cache_size=0)
    except BaseException:
        server.__exit__(None, None, None)
        raise

    def close() -> None:
        load["server_peak_rss_mb"] = _server_peak_mb(server.pid)  # after every step: the server's high-water mark
        store.close()
        server.__exit__(None, None, None)

    return store, load, close


def _server_peak_mb(pid: int | None) -> float | None:
    """A server process's peak resident memory (``VmHWM``), MB; ``None`` when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, TypeError):
        pass
    return None


def _entity_index(store: Any, rows: list[Any], disk: Path | None = None) -> dict[str, Any]:
    """Build the entity index (in memory, or on disk at ``disk``) and time its lookups.

    A build that fails (its queries' timeout) is reported.
    """
    from kbqa_lit.errors import StoreError
    from kbqa_lit.kb.index.entity_db import DiskEntityIndex
    from kbqa_lit.kb.index.entity_index import EntityIndex

    rss0, peak0 = _current_rss_mb(), _rss_mb()
    t0 = time.perf_counter()
    try:
        index = EntityIndex.build(store) if disk is None else DiskEntityIndex.build(store, disk)
    except StoreError as exc:
        return {"seconds": round(time.perf_counter() - t0, 2), "error": str(exc)[:300]}
    seconds = time.perf_counter() - t0
    lookups = []
    for row in rows:
        t1 = time.perf_counter()
        index.search(row.question, top_l=10)
        lookups.append(time.perf_counter() - t1)
    out = {
        "seconds": round(seconds, 2),
        "rss_growth_mb": round(_current_rss_mb() - rss0, 1),  # the index, held
        "peak_growth_mb": round(_rss_mb() - peak0, 1),  # the build's peak above what came before
        "entities": len(index),
        **_ms(lookups),
    }
    if disk is not None:
        out["file_mb"] = round(disk.stat().st_size / 2**20, 1)
    return out


def measure(
    kb_dir: Path, timeout: float, sample: int, path_entities: int, store_kind: str, memory_index: bool = True
) -> dict[str, Any]:
    """Measure every step on the KB in ``kb_dir`` (run in a child process; the encoder is not loaded)."""
    from kbqa_lit.kb.store.execute import run_sexpr

    summary = json.loads((kb_dir / "summary.json").read_text())
    rows = list(read_jsonl(kb_dir / "questions.jsonl"))[:sample]
    out: dict[str, Any] = {"triples": summary["triples"], "questions": len(rows), "store": store_kind}
    loader = _load_oxigraph if store_kind == "oxigraph" else _load_virtuoso
    store, out["load"], close = loader(kb_dir, timeout)
    try:
        # on disk first: its held memory and build peak are then not blurred by the in-memory index's
        out["entity_index_disk"] = _entity_index(store, rows, disk=kb_dir / f"entities.{store_kind}.sqlite")
        out["entity_index"] = _entity_index(store, rows) if memory_index else {}
        from kbqa_lit.kb.index.relation_inventory import RelationInventory
        from kbqa_lit.pipelines.selection.answer_type import AnswerTypes
        from kbqa_lit.pipelines.selection.path_fallback import PathFallback

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
        out["systems"] = _systems(store, rows[: path_entities * 2], sorted(inv), sorted(classes))
        out["systems"]["fc_entity_pairs_hub"] = _hub_pairs(store, summary, sorted(inv))
        gold = []
        failed = 0
        for row in rows:
            _, result = run_sexpr(store, row.s_expression, semantics=row.meta["semantics"])
            failed += not result.ok
            gold.append(result.elapsed)
        out["gold"] = {**_ms(gold), "failed": failed}
    finally:
        close()
    out["peak_rss_mb"] = round(_rss_mb(), 1)
    return out


class _Counting:
    """The store, counting the queries sent and the rows returned (a cost that does not depend on the machine)."""

    def __init__(self, store: Any) -> None:
        self.store, self.identity, self.queries, self.rows = store, store.identity, 0, 0

    def execute(self, sparql: str) -> Any:
        result = self.store.execute(sparql)
        self.queries, self.rows = self.queries + 1, self.rows + len(result.answers)
        return result

    def execute_many(self, queries: list[str]) -> list[Any]:
        results = self.store.execute_many(queries)
        self.queries += len(results)
        self.rows += sum(len(r.answers) for r in results)
        return results


def _paths(store: Any, fallback: Any, rows: list[Any], summary: dict[str, Any], n: int) -> dict[str, Any]:
    ordinary = [next(iter(r.topic_entities)) for r in rows if not r.meta.get("hub")][:n]
    hubs = [h for h, _ in summary["top_degrees"][:3]]
    res: dict[str, Any] = {}
    for label, entities in (("ordinary", ordinary), ("hub", hubs)):
        times, counts, errors, queries, read = [], [], 0, [], []
        for e in entities:
            counting = _Counting(store)
            t1 = time.perf_counter()
            paths, errs = fallback.paths(counting, [e], mediators=True)
            times.append(time.perf_counter() - t1)
            counts.append(len(paths))
            queries.append(counting.queries)
            read.append(counting.rows)
            errors += bool(errs)
        res[label] = {**_ms(times), "max_s": round(max(times), 3), "paths_mean": round(statistics.mean(counts), 1)}
        res[label].update(failed=errors, queries_max=max(queries), rows_max=max(read))
    return res


def _systems(store: Any, rows: list[Any], relations: list[str], classes: list[str]) -> dict[str, Any]:
    """Per question, the KB reads of FC-KBQA's pair checks and Keqing's chain execution (fresh caches each).

    FC-KBQA: the question's topic entity against its gold relations and 12 others of the KB
    (:class:`Connectivity`, relation-aware pruning and relation-entity pairs), the relation-relation
    chains among them (:class:`RelationChains`) and the class-relation pairs of 4 classes
    (:class:`TypedRelations`, the pairs' check when the ontology is not trusted). Keqing: the gold
    chain executed from the seed entity (:class:`ChainExecutor`, the template chains' execution).
    """
    from kbqa_lit.kb.index.connectivity import Connectivity, RelationChains, TypedRelations
    from kbqa_lit.kb.lf.chains import chain_from_sexpr
    from kbqa_lit.kb.lf.sexpr import parse_sexpr, schema_items
    from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor

    others = relations[:: max(1, len(relations) // 12)][:12]
    some_classes = classes[:: max(1, len(classes) // 4)][:4]
    times: dict[str, list[float]] = {"fc_entity_pairs": [], "fc_relation_chains": [], "fc_class_pairs": []}
    times["keqing_chain"] = []
    for row in rows:
        items = schema_items(parse_sexpr(row.s_expression))
        rels = list(dict.fromkeys([*items.relations, *others]))
        topic = next(iter(row.topic_entities))
        t0 = time.perf_counter()
        Connectivity(store).connected([(r, topic) for r in rels])
        times["fc_entity_pairs"].append(time.perf_counter() - t0)
        pairs = [(a, b) for a in rels[:4] for b in rels[:4] if a != b]
        t0 = time.perf_counter()
        RelationChains(store).chained(pairs)
        times["fc_relation_chains"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        typed = [(c, r, side) for c in some_classes for r in rels[:4] for side in ("domain", "range")]
        TypedRelations(store).holds(typed)
        times["fc_class_pairs"].append(time.perf_counter() - t0)
        chain = chain_from_sexpr(row.s_expression)
        if chain is not None:
            executor = ChainExecutor(store)
            t0 = time.perf_counter()
            executor.execute(executor.seed_paths([chain[0]]), chain[1])
            times["keqing_chain"].append(time.perf_counter() - t0)
    return {k: {**_ms(v), "n": len(v)} for k, v in times.items()}


def _hub_pairs(store: Any, summary: dict[str, Any], relations: list[str]) -> dict[str, Any]:
    """FC-KBQA's entity-relation pairs of the 3 largest hubs against every relation of the KB (one batch each)."""
    from kbqa_lit.kb.index.connectivity import Connectivity

    times = []
    for hub, _ in summary["top_degrees"][:3]:
        t0 = time.perf_counter()
        Connectivity(store).connected([(r, hub) for r in relations])
        times.append(time.perf_counter() - t0)
    return {**_ms(times), "max_s": round(max(times), 3), "n": len(times)}


STEPS = (
    ("load s", lambda m: m["load"]["seconds"]),
    ("store disk MB", lambda m: m["load"]["disk_mb"]),
    ("entity index build s", lambda m: m["entity_index"]["seconds"]),
    ("load peak RSS MB", lambda m: m["load"]["peak_rss_mb"] or 0),
    ("Virtuoso server peak RSS MB", lambda m: m["load"].get("server_peak_rss_mb") or float("nan")),
    ("entity index held MB", lambda m: m["entity_index"]["rss_growth_mb"]),
    ("entity index build peak growth MB", lambda m: m["entity_index"]["peak_growth_mb"]),
    ("entity lookup p50 ms", lambda m: m["entity_index"]["p50_ms"]),
    ("entity lookup p99 ms", lambda m: m["entity_index"]["p99_ms"]),
    ("entity index (disk) build s", lambda m: m["entity_index_disk"]["seconds"]),
    ("entity index (disk) file MB", lambda m: m["entity_index_disk"]["file_mb"]),
    ("entity index (disk) held MB", lambda m: m["entity_index_disk"]["rss_growth_mb"]),
    ("entity index (disk) build peak growth MB", lambda m: m["entity_index_disk"]["peak_growth_mb"]),
    ("entity lookup (disk) p50 ms", lambda m: m["entity_index_disk"]["p50_ms"]),
    ("entity lookup (disk) p99 ms", lambda m: m["entity_index_disk"]["p99_ms"]),
    ("relation inventory s (per KB)", lambda m: m["relation_inventory"]["seconds"]),
    ("class list s (per KB)", lambda m: m["class_list"]["seconds"]),
    ("answer classes p50 ms (per q)", lambda m: m["answer_classes"]["p50_ms"]),
    ("answer classes p99 ms (per q)", lambda m: m["answer_classes"]["p99_ms"]),
    ("paths ordinary p50 ms (per q)", lambda m: m["paths"]["ordinary"]["p50_ms"]),
    ("paths ordinary p99 ms (per q)", lambda m: m["paths"]["ordinary"]["p99_ms"]),
    ("paths hub p50 ms (per q)", lambda m: m["paths"]["hub"]["p50_ms"]),
    ("paths hub max s (per q)", lambda m: m["paths"]["hub"]["max_s"]),
    ("paths ordinary rows read, max", lambda m: m["paths"]["ordinary"].get("rows_max", 0)),
    ("paths hub rows read, max", lambda m: m["paths"]["hub"].get("rows_max", 0)),
    ("paths hub queries, max", lambda m: m["paths"]["hub"].get("queries_max", 0)),
    ("paths hub failed reads", lambda m: m["paths"]["hub"]["failed"]),
    ("FC entity-relation pairs p50 ms (per q)", lambda m: m["systems"]["fc_entity_pairs"]["p50_ms"]),
    ("FC entity-relation pairs p99 ms (per q)", lambda m: m["systems"]["fc_entity_pairs"]["p99_ms"]),
    ("FC entity-relation pairs, hub, max s", lambda m: m["systems"]["fc_entity_pairs_hub"]["max_s"]),
    ("FC relation chains p50 ms (per q)", lambda m: m["systems"]["fc_relation_chains"]["p50_ms"]),
    ("FC relation chains p99 ms (per q)", lambda m: m["systems"]["fc_relation_chains"]["p99_ms"]),
    ("FC class-relation pairs p50 ms (per q)", lambda m: m["systems"]["fc_class_pairs"]["p50_ms"]),
    ("FC class-relation pairs p99 ms (per q)", lambda m: m["systems"]["fc_class_pairs"]["p99_ms"]),
    ("Keqing chain execution p50 ms (per q)", lambda m: m["systems"]["keqing_chain"]["p50_ms"]),
    ("Keqing chain execution p99 ms (per q)", lambda m: m["systems"]["keqing_chain"]["p99_ms"]),
    ("gold query p50 ms", lambda m: m["gold"]["p50_ms"]),
    ("gold query p99 ms", lambda m: m["gold"]["p99_ms"]),
    ("peak RSS MB (bench process, with torch)", lambda m: m["peak_rss_mb"]),
)


def _get(get: Any, m: dict[str, Any]) -> float:
    try:
        return float(get(m))
    except (KeyError, TypeError):
        return float("nan")  # the step failed (e.g. its query timed out): see the JSON


def table(results: dict[str, dict[str, Any]]) -> str:
    """Step × size (× store), with the growth factor between consecutive sizes of each store (and first → last)."""
    sizes = list(results)
    by_store: dict[str, list[str]] = {}
    for key in sizes:
        by_store.setdefault(results[key].get("store", "oxigraph"), []).append(key)
    pairs = [(a, b) for keys in by_store.values() for a, b in zip(keys, keys[1:], strict=False)]
    pairs += [(keys[0], keys[-1]) for keys in by_store.values() if len(keys) > 2]  # smallest → largest
    head = ["step"] + sizes + [f"{a}→{b}" for a, b in pairs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, get in STEPS:
        vals = [_get(get, results[s]) for s in sizes]
        by_key = dict(zip(sizes, vals, strict=True))
        growth = [f"×{by_key[b] / by_key[a]:.1f}" if by_key[a] and by_key[a] == by_key[a] else "–" for a, b in pairs]
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
    ap.add_argument(
        "--stores",
        nargs="+",
        choices=("oxigraph", "virtuoso"),
        default=["oxigraph"],
        help="stores measured (virtuoso: a fresh local Virtuoso 7 per size, needs virtuoso-t)",
    )
    ap.add_argument(
        "--no-memory-index",
        action="store_true",
        help="measure only the on-disk entity index (the in-memory one's build needs a GROUP BY over every edge)",
    )
    ap.add_argument("--store", default="oxigraph", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None, help="JSON results file (default: print only)")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument(
        "--merge", nargs="+", type=Path, default=None, help="print one table from earlier --out files (no measuring)"
    )
    args = ap.parse_args(argv)
    if args.merge:
        merged: dict[str, dict[str, Any]] = {}
        for path in args.merge:
            merged.update(json.loads(path.read_text())["results"])
        print(table(dict(sorted(merged.items(), key=lambda kv: ("virtuoso" in kv[0], float(kv[0].split()[0]))))))
        return 0
    if args.child is not None:
        memory_index = not args.no_memory_index
        m = measure(args.child, args.timeout, args.sample, args.path_entities, args.store, memory_index)
        print(json.dumps(m))
        return 0
    results: dict[str, dict[str, Any]] = {}
    for size in args.sizes:
        kb_dir = args.work / size
        if not (kb_dir / "summary.json").is_file():
            t0 = time.perf_counter()
            write_scale_kb(kb_dir, triples=int(float(size)), seed=args.seed)
            print(f"generated {size} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        for store in args.stores:
            cmd = [sys.executable, __file__, "--child", str(kb_dir), "--timeout", str(args.timeout), "--store", store]
            cmd += ["--sample", str(args.sample), "--path-entities", str(args.path_entities)]
            cmd += ["--no-memory-index"] if args.no_memory_index else []
            done = subprocess.run(cmd, check=False, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"measuring {size} on {store} failed (exit {done.returncode})")
            key = size if store == "oxigraph" else f"{size} {store}"
            results[key] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{key}: {json.dumps(results[key])}", file=sys.stderr)
    print(table(results))
    if args.out is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        payload = {"date": stamp, "command": " ".join(sys.argv), "results": results}
        args.out.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
