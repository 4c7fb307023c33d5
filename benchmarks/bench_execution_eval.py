"""Execution-guided selection vs a naive sequential, uncached loop over the same beams.

N questions of the synthetic world (dev split) × B beams each. Beams are built like a beam
search's output: the gold S-expression (normalised) at a random position, the others corrupted
variants — a wrong relation (executes, mostly empty), a wrong entity (a distractor among the
question's linked candidates), broken syntax, and surface variants of earlier beams (spacing,
label case) that denormalise to the same S-expression.

- naive: for each beam in order: denormalise, convert, execute on a store WITHOUT cache, stop at
  the first beam with a non-empty answer (COUNT 0 not executable). Also "naive, all beams":
  execute every beam, then pick the first executable one.
- execution-guided: ``ExecutionGuidedSelector`` (dedup, the store's cache, a thread pool over a
  window of beams) with 1 and 2 workers on a fresh store (cold cache), and once more on the same
  store (warm cache: a second validation epoch).

The chosen beam and answers of every question must equal the naive loop's (asserted). Prints
per-question times (median of repeats) and the ratios.

    python benchmarks/bench_execution_eval.py [--questions 100] [--beams 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from kbqa_lit.data.formats.synthetic import read_synthetic
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.synthetic.world import build_world
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr, invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sexpr import Atom, SExpr, map_atoms, parse_sexpr, schema_items
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import EndpointStore, OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector

#: (question, beams, label → ids, the gold beam's text)
Case = tuple[KBQAExample, list[str], dict[str, list[str]], str]
Choice = tuple[int | None, list[str]]

#: A SPARQL endpoint over the same store in another process, adding a fixed latency per request
#: (a remote Virtuoso/QLever: network round trip and server time); prints its port.
SERVER = """
import sys, time, pyoxigraph
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs
store, latency = pyoxigraph.Store.read_only(sys.argv[1]), float(sys.argv[2]) / 1000

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        time.sleep(latency)
        try:
            results = store.query(parse_qs(body)["query"][0])
            data, code = results.serialize(format=pyoxigraph.QueryResultsFormat.JSON), 200
        except SyntaxError as exc:
            data, code = str(exc).encode(), 400
        self.send_response(code)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextlib.contextmanager
def endpoint(store_dir: Path, latency_ms: float) -> Iterator[str]:
    """Serve the store over HTTP in a child process; yield the endpoint URL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(store_dir), str(latency_ms)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/sparql"
    finally:
        proc.terminate()
        proc.wait(10)


def corrupt(gold: SExpr, role: str, new: str, rng: random.Random) -> SExpr:
    """Replace one relation (or every entity) of ``gold`` by ``new``."""
    if role == "relation":
        victim = rng.choice(schema_items(gold).relations)
        return map_atoms(gold, lambda a, r: Atom(new) if r == "relation" and a.text == victim else a)
    return map_atoms(gold, lambda a, r: Atom(new) if r == "entity" else a)


def make_beams(
    gold: SExpr, labels: dict[str, str], relations: list[str], n_beams: int, rng: random.Random
) -> list[str]:
    """The gold S-expression at a random position among corrupted variants, all normalised."""
    gold_entities = set(schema_items(gold).entities)
    distractors = sorted(set(labels) - gold_entities) or sorted(labels)
    gold_text = normalize_sexpr(gold, labels)
    gold_at = rng.randrange(n_beams)
    beams: list[str] = []
    while len(beams) < n_beams:
        kind = rng.random()
        if len(beams) == gold_at:
            beams.append(gold_text)
        elif kind < 0.25 and beams:  # a surface variant of an earlier beam: same S-expression
            earlier = rng.choice(beams)
            beams.append(earlier.replace("( ", "(", 1) if rng.random() < 0.5 else earlier.lower())
        elif kind < 0.6 and schema_items(gold).relations:  # wrong relation: executes, mostly empty
            beams.append(normalize_sexpr(corrupt(gold, "relation", rng.choice(relations), rng), labels))
        elif kind < 0.85:  # wrong entity: a distractor among the linked candidates
            beams.append(normalize_sexpr(corrupt(gold, "entity", rng.choice(distractors), rng), labels))
        elif rng.random() < 0.5:  # broken syntax: truncated
            beams.append(gold_text[: rng.randrange(1, len(gold_text))])
        else:  # broken syntax: a parenthesis missing
            beams.append(gold_text.replace(")", "", 1))
    return beams


def make_cases(examples: list[KBQAExample], n_beams: int, rng: random.Random) -> list[Case]:
    """Attach realistic beams and a label map (topic entities + 4 distractor candidates) to each question."""
    relations = sorted({r for ex in examples for r in schema_items(ex.s_expression or "").relations})
    entities = sorted({(e, n) for ex in examples for e, n in ex.topic_entities.items()})
    cases: list[Case] = []
    for ex in examples:
        assert ex.s_expression
        labels = {**dict(rng.sample(entities, 4)), **ex.topic_entities}
        gold = parse_sexpr(ex.s_expression)
        beams = make_beams(gold, labels, relations, n_beams, rng)
        cases.append((ex, beams, invert_labels(labels), normalize_sexpr(gold, labels)))
    return cases


def naive(store: OxigraphStore, cases: list[Case], stop_early: bool = True) -> list[Choice]:
    """The loop one writes first: no dedup, no cache, one query at a time."""
    out: list[Choice] = []
    for ex, beams, label_to_ids, _ in cases:
        chosen: Choice = (None, [])
        for i, beam in enumerate(beams):
            try:
                sexpr = denormalize_sexpr(beam, label_to_ids)
                sparql = sexpr_to_sparql(sexpr, semantics=ex.semantics)
            except SExprError:
                continue
            result = store.execute(sparql)
            counting = sexpr.startswith("(COUNT")
            if result.ok and result.answers and not (counting and result.answers == ["0"]):
                if chosen[0] is None:
                    chosen = (i, list(result.answers))
                if stop_early:
                    break
        out.append(chosen)
    return out


def guided(selector: ExecutionGuidedSelector, cases: list[Case]) -> list[Choice]:
    out: list[Choice] = []
    for ex, beams, label_to_ids, _ in cases:
        sel = selector.select(beams, semantics=ex.semantics, label_to_ids=label_to_ids)
        out.append((sel.chosen_beam, sel.answers if sel.executable else []))
    return out


def timed(
    fn: Callable[[], list[Choice]],
) -> tuple[float, list[Choice]]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run_suite(
    title: str,
    open_store: Callable[[bool, int], contextlib.AbstractContextManager[OxigraphStore | EndpointStore]],
    cases: list[Case],
    worker_counts: tuple[int, ...],
    repeats: int,
    all_beams: bool,
) -> None:
    """Time the naive loop and the selector on one kind of store; check and print."""
    n = len(cases)
    times: dict[str, list[float]] = {}
    results: dict[str, list[Choice]] = {}
    queries: dict[str, int] = {}
    naive_runs = [(True, "naive (stop at first)")] + ([(False, "naive (all beams)")] if all_beams else [])
    for _ in range(repeats):
        for stop_early, name in naive_runs:
            with open_store(False, 1) as store:
                seconds, res = timed(lambda s=store, e=stop_early: naive(s, cases, e))
                times.setdefault(name, []).append(seconds)
                results[name], queries[name] = res, store.cache_info()["misses"]
        for workers in worker_counts:
            with open_store(True, workers) as store, ExecutionGuidedSelector(store, workers=workers) as sel:
                for phase in ("cold", "warm"):
                    name = f"guided, {workers} worker(s), {phase} cache"
                    before = store.cache_info()["misses"]
                    seconds, res = timed(lambda sel=sel: guided(sel, cases))
                    times.setdefault(name, []).append(seconds)
                    results[name], queries[name] = res, store.cache_info()["misses"] - before
    reference = results["naive (stop at first)"]
    for name, res in results.items():
        same = sum(a == b for a, b in zip(res, reference, strict=True))
        assert same == n, f"{name}: {n - same} question(s) chose differently from the naive loop"
    base = statistics.median(times["naive (stop at first)"])
    print(f"\n{title}: same chosen beam and answers as the naive loop: True ({n}/{n})")
    print(f"{'method':<36} {'ms/question':>12} {'queries run':>12} {'speed-up':>9}")
    for name, values in times.items():
        t = statistics.median(values)
        print(f"{name:<36} {1000 * t / n:>12.2f} {queries[name]:>12} {base / t:>8.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--beams", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--latency-ms", type=float, default=2.0, help="added per endpoint request")
    args = p.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-exec-") as tmp:
        root = Path(tmp)
        build_world(root / "world", seed=args.seed, size="small")
        build_store(root / "store", [root / "world" / "kb.nt"], "nt")
        examples = [ex for ex in read_synthetic(root / "world", "dev") if ex.s_expression][: args.questions]
        cases = make_cases(examples, args.beams, rng)
        gold_at = statistics.mean(beams.index(gold) for _, beams, _, gold in cases)
        print(
            f"{len(cases)} questions x {args.beams} beams (synthetic world, dev split), gold beam at "
            f"position {gold_at:.1f} on average; median of {args.repeats} runs; {os.cpu_count()} CPUs"
        )

        def oxigraph(cached: bool, workers: int) -> contextlib.AbstractContextManager[OxigraphStore]:
            return OxigraphStore(root / "store", cache_size=100_000 if cached else 0, workers=workers)

        run_suite("Embedded Oxigraph store (worker processes)", oxigraph, cases, (1, 2), args.repeats, True)
        with endpoint(root / "store", args.latency_ms) as url:

            def http(cached: bool, workers: int) -> contextlib.AbstractContextManager[EndpointStore]:
                return EndpointStore(url, timeout=30, retries=0, cache_size=100_000 if cached else 0)

            title = f"SPARQL endpoint over HTTP (+{args.latency_ms:g} ms per request)"
            run_suite(title, http, cases, (1, 2, 4), args.repeats, False)


if __name__ == "__main__":
    main()
