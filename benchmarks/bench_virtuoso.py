"""Oxigraph vs Virtuoso: start-up, bulk load and query latency on the same SPARQL.

Workloads (each query is converted by ``sexpr_to_sparql`` once and run on both engines):

- ``synthetic``: every gold S-expression of the synthetic world (seed 0, ``--size medium``:
  2,800 questions, 31 k triples);
- ``metaqa-{1,2,3}hop``: a sample of MetaQA dev questions per hop (``--metaqa-sample``; gold
  S-expressions from ``read_metaqa``, simple-path semantics) on MetaQA's KB (172 k triples), when
  ``../shared/data/metaqa`` exists.

Per workload it prints p50/p95 latency of ``OxigraphStore.execute`` (worker process, caches off),
``EndpointStore.execute`` on a local Virtuoso (HTTP via SPARQLWrapper, caches off), raw
``pyoxigraph.Store.query`` in this process and a raw keep-alive HTTP POST to Virtuoso (no
SPARQLWrapper), the Virtuoso/Oxigraph ratio, and how many queries gave identical answer sets.
Needs ``virtuoso-opensource-7-bin``. Usage: ``python benchmarks/bench_virtuoso.py``.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import statistics
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pyoxigraph

from kbqa_lit.data.formats.metaqa import read_metaqa
from kbqa_lit.data.formats.synthetic import read_synthetic
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import StoreError
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store, write_ntriples
from kbqa_lit.kb.virtuoso.server import VirtuosoServer, find_binaries

METAQA = Path(__file__).resolve().parents[2] / "shared" / "data" / "metaqa"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(run: Callable[[str], object], queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        run(q)
        out.append(time.perf_counter() - t)
    return out


class RawHTTP:
    """One keep-alive connection posting form-encoded queries (what SPARQLWrapper costs on top)."""

    def __init__(self, endpoint: str, graph: str) -> None:
        url = urllib.parse.urlparse(endpoint)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        self.path, self.graph = url.path, graph

    def __call__(self, query: str) -> bytes:
        body = urllib.parse.urlencode({"query": query, "default-graph-uri": self.graph})
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/sparql-results+json",
        }
        self.conn.request("POST", self.path, body, headers)
        return self.conn.getresponse().read()


def compare(name: str, queries: list[str], ox_dir: Path, server: VirtuosoServer, repeats: int) -> None:
    ox = OxigraphStore(ox_dir, cache_size=0)
    vi = server.store(cache_size=0, retries=0)
    raw_ox = pyoxigraph.Store.read_only(str(ox_dir))
    raw_vi = RawHTTP(server.endpoint, server.graph)
    same = sum(set(ox.execute(q).answers) == set(vi.execute(q).answers) for q in queries)  # also warms up
    rows = {}
    for label, run in (
        ("OxigraphStore.execute", ox.execute),
        ("EndpointStore.execute (Virtuoso)", vi.execute),
        ("pyoxigraph raw", lambda q: list(raw_ox.query(q))),
        ("Virtuoso raw HTTP", raw_vi),
    ):
        rows[label] = list(itertools.chain.from_iterable(timed(run, queries) for _ in range(repeats)))
    ox.close()
    print(f"\n{name}: {len(queries)} queries x {repeats}; identical answers {same}/{len(queries)}")
    for label, values in rows.items():
        print(f"  {label:34s} p50 {pct(values, 0.5) * 1e3:7.3f} ms   p95 {pct(values, 0.95) * 1e3:7.3f} ms")
    a, b = rows["EndpointStore.execute (Virtuoso)"], rows["OxigraphStore.execute"]
    c, d = rows["Virtuoso raw HTTP"], rows["pyoxigraph raw"]
    print(
        f"  Virtuoso/Oxigraph (store API): p50 {statistics.median(a) / statistics.median(b):.1f}x, "
        f"p95 {pct(a, 0.95) / pct(b, 0.95):.1f}x;  "
        f"raw: p50 {statistics.median(c) / statistics.median(d):.1f}x, "
        f"p95 {pct(c, 0.95) / pct(d, 0.95):.1f}x"
    )


def load_both(root: Path, name: str, nt: Path, memory: str) -> tuple[Path, VirtuosoServer, dict[str, float]]:
    t = time.perf_counter()
    stats = build_store(root / f"ox-{name}", [nt], "nt")
    ox_load = time.perf_counter() - t
    server = VirtuosoServer(root / f"vdb-{name}", memory=memory, clean_on_exit=True)
    server.prepare(data_dirs=[nt.parent])
    start = server.start()
    load = server.load([nt])
    print(
        f"{name}: {stats['triples']:,} triples; Oxigraph build_store {ox_load:.2f} s; Virtuoso start "
        f"{start:.2f} s (fresh database), bulk load + checkpoint {load['seconds']:.2f} s "
        f"({load['triples']:,} triples)"
    )
    return root / f"ox-{name}", server, {"start": start, "load": load["seconds"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="medium", help="synthetic world size")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes over each workload")
    parser.add_argument("--metaqa-sample", type=int, default=1000, help="MetaQA dev questions per hop (0: skip)")
    parser.add_argument("--memory", default="2G", help="memory for Virtuoso's buffers")
    args = parser.parse_args()
    try:
        find_binaries()
    except StoreError as exc:
        print(f"skipped: {exc} (or run .ci/install-virtuoso.sh)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_world(root / "world", seed=0, size=args.size)
        examples = [ex for s in ("train", "dev", "test") for ex in read_synthetic(root / "world", s)]
        queries = [sexpr_to_sparql(ex.s_expression or "", semantics=ex.semantics) for ex in examples]
        ox_dir, server, _ = load_both(root, f"synthetic-{args.size}", root / "world" / "kb.nt", args.memory)
        with server:
            compare(f"synthetic ({args.size})", queries, ox_dir, server, args.repeats)
        if args.metaqa_sample and (METAQA / "kb.txt").is_file():
            nt = root / "metaqa" / "kb.nt"
            nt.parent.mkdir()
            write_ntriples([METAQA / "kb.txt"], "metaqa", nt)
            ox_dir, server, _ = load_both(root, "metaqa", nt, args.memory)
            with server:
                for hop in (1, 2, 3):
                    exs = list(itertools.islice(read_metaqa(METAQA, "dev", hops=(hop,)), args.metaqa_sample))
                    qs = [sexpr_to_sparql(ex.s_expression or "", semantics=ex.semantics) for ex in exs]
                    compare(f"metaqa {hop}-hop (dev)", qs, ox_dir, server, args.repeats)


if __name__ == "__main__":
    main()
