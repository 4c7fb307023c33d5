"""How long a caller really waits when a query times out (the figures the tests no longer time).

Prints, for each case, the wall-clock wait and its ratio to the configured timeout:
- Oxigraph, process isolation (default): a never-ending 5-way cross product, timeout 1 s;
- Oxigraph, thread isolation: the same query, timeout 1 s (the abandoned thread keeps running);
- an endpoint on a closed port (timeout 1 s, 2 retries, back-off 0.05 s);
- an endpoint that answers after 2 s (timeout 0.5 s; a read timeout is not retried);
- Oxigraph with 1 and 2 query workers, timeout 0.5 s, and the next query after it.

usage: python benchmarks/bench_timeouts.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kbqa_lit.kb.lf.iri import NS
from kbqa_lit.kb.store import EndpointStore, OxigraphStore
from kbqa_lit.kb.store.loaders import build_store

PATHOLOGICAL = (
    "SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n ?o "
    "FILTER(STRLEN(CONCAT(STR(?c), STR(?f), STR(?i), STR(?l), STR(?o))) < 0) }"
)


class _Slow(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        time.sleep(2.0)
        body = b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}'
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass


def _wait(fn) -> float:
    start = time.monotonic()
    fn()
    return time.monotonic() - start


def _report(name: str, timeout: float, waits: list[float]) -> None:
    med = statistics.median(waits)
    ratio = med / timeout
    print(
        f"{name:<52} timeout {timeout:>3.1f} s  wait median {med:5.2f} s  max {max(waits):5.2f} s  ratio {ratio:4.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_timeouts-"))
    lines = [f'<{NS}m.e{i}> <{NS}test.rel.r{i % 7}> "v{i}" .\n' for i in range(2000)]
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")

    for isolation in ("process", "thread"):
        with OxigraphStore(root / "store", timeout=1.0, cache_size=0, isolation=isolation) as s:
            waits = []
            for _ in range(args.repeat):
                waits.append(_wait(lambda s=s: s.execute(PATHOLOGICAL)))
            _report(f"Oxigraph ({isolation} isolation), never-ending query", 1.0, waits)

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/sparql"
    unreachable = EndpointStore(closed, timeout=1, retries=2, backoff=0.05, cache_size=0)
    _report(
        "endpoint on a closed port (2 retries)",
        1.0,
        [_wait(lambda: unreachable.execute("ASK {}")) for _ in range(args.repeat)],
    )

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slow = EndpointStore(f"http://127.0.0.1:{server.server_address[1]}/sparql", timeout=0.5, retries=3, cache_size=0)
    _report("endpoint answering after 2 s", 0.5, [_wait(lambda: slow.execute("ASK {}")) for _ in range(args.repeat)])
    server.shutdown()

    for workers in (1, 2):
        with OxigraphStore(root / "store", timeout=0.5, cache_size=0, workers=workers) as s:
            waits = [_wait(lambda s=s: s.execute(PATHOLOGICAL)) for _ in range(args.repeat)]
            follow = _wait(lambda s=s: s.execute(f"ASK {{ <{NS}m.e5> ?p ?o }}"))
        _report(f"Oxigraph, {workers} worker(s), never-ending query", 0.5, waits)
        print(f"  next query after the timeout answered in {follow:.3f} s")


if __name__ == "__main__":
    main()
