"""Stores on real parts: on-disk Oxigraph stores and a real local HTTP SPARQL endpoint."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pyoxigraph
import pytest

from kbqa_lit.errors import EndpointUnreachableError, StoreError
from kbqa_lit.kb.store import (
    EndpointStore,
    ExecutionResult,
    KnowledgeBase,
    OxigraphStore,
    open_store,
    update_keyword,
)
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
KB_NT = f"""
<{NS}m.a> <{NS}film.film.directed_by> <{NS}m.d1> .
<{NS}m.a> <{NS}film.film.directed_by> <{NS}m.d2> .
<{NS}m.b> <{NS}film.film.directed_by> <{NS}m.d1> .
<{NS}m.a> <{NS}type.object.name> "Alpha \\"A\\" film"@en .
<{NS}m.d1> <{NS}type.object.name> "Dee One"@en .
<{NS}m.a> <{NS}film.film.runtime> "09"^^<{XSD}integer> .
<{NS}m.a> <{NS}common.topic.webpage> <http://example.org/alpha> .
"""
#: Every solution of a 5-way cross product goes through a FILTER no optimiser can push down.
PATHOLOGICAL = (
    "SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n ?o "
    "FILTER(STRLEN(CONCAT(STR(?c), STR(?f), STR(?i), STR(?l), STR(?o))) < 0) }"
)
DIRECTORS = f"SELECT DISTINCT ?x WHERE {{ ?m <{NS}film.film.directed_by> ?x }} ORDER BY ?x"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kb")
    (root / "kb.nt").write_text(KB_NT, encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


@pytest.fixture(scope="module")
def big_store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 triples: the 5-way cross product has 3.2e16 rows, so the pathological query never ends."""
    root = tmp_path_factory.mktemp("bigkb")
    lines = [f'<{NS}m.e{i}> <{NS}test.rel.r{i % 7}> "v{i}" .\n' for i in range(2000)]
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


@pytest.fixture(scope="module")
def store(store_dir: Path) -> Iterator[OxigraphStore]:
    with OxigraphStore(store_dir, timeout=5.0) as s:
        yield s


# -- answers --------------------------------------------------------------------------------
def test_select_answers_are_ids_and_lexical_values(store: OxigraphStore) -> None:
    r = store.execute(DIRECTORS)
    assert r.ok and r.error is None and r.answers == ["m.d1", "m.d2"]
    assert isinstance(r, ExecutionResult) and isinstance(r.elapsed, float)  # durations: benchmarks/bench_store.py
    name = store.execute(f"SELECT ?n WHERE {{ <{NS}m.a> <{NS}type.object.name> ?n }}")
    assert name.answers == ['Alpha "A" film']
    web = store.execute(f"SELECT ?w WHERE {{ <{NS}m.a> <{NS}common.topic.webpage> ?w }}")
    assert web.answers == ["http://example.org/alpha"]  # a non-Freebase IRI stays whole
    runtime = store.execute(f"SELECT ?v WHERE {{ <{NS}m.a> <{NS}film.film.runtime> ?v }}")
    assert runtime.answers == ["9"]  # Oxigraph canonicalises typed literals ("09" -> "9")


def test_first_variable_deduplicated_in_order(store: OxigraphStore) -> None:
    r = store.execute(f"SELECT ?x ?m WHERE {{ ?m <{NS}film.film.directed_by> ?x }} ORDER BY ?m ?x")
    assert r.answers == ["m.d1", "m.d2"]
    count = store.execute(f"SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE {{ ?m <{NS}film.film.directed_by> ?x }}")
    assert count.answers == ["2"]
    unbound = store.execute("SELECT ?x WHERE { OPTIONAL { ?x <http://nothing> ?y } }")
    assert unbound.ok and unbound.answers == []


def test_ask(store: OxigraphStore) -> None:
    assert store.execute(f"ASK {{ <{NS}m.a> ?p ?o }}").answers == ["true"]
    assert store.execute(f"ASK {{ <{NS}m.zzz> ?p ?o }}").answers == ["false"]


def test_bad_queries_never_raise(store: OxigraphStore) -> None:
    bad = store.execute("SELECT ?x WHERE { ?x ns:film.film.directed_by ?y }")
    assert not bad.ok and bad.answers == [] and "syntax" in bad.error.lower()
    construct = store.execute("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert not construct.ok and "SELECT and ASK" in construct.error
    assert not store.execute(None).ok  # type: ignore[arg-type]
    assert not store.execute("").ok


@pytest.mark.parametrize(
    "update",
    [
        "INSERT DATA { <http://a> <http://b> <http://c> }",
        "PREFIX ns: <http://rdf.freebase.com/ns/>\ndelete where { ?s ?p ?o }",
        "# comment\nDROP ALL",
        "LOAD <http://example.org/x.nt>",
        "CLEAR DEFAULT",
        "WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        "SELECT ?x WHERE { ?x ?p ?o } ; INSERT DATA { <http://a> <http://b> 1 }",
    ],
)
def test_updates_refused(store: OxigraphStore, update: str) -> None:
    r = store.execute(update)
    assert not r.ok and "read-only" in r.error and "update" in r.error
    assert store.execute(f"ASK {{ <{NS}m.a> ?p ?o }}").answers == ["true"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?delete WHERE { ?delete ?p 'insert' }",
        "SELECT ?x WHERE { ?x <http://x/DROP> ?y } # CLEAR everything",
        "PREFIX ns: <http://rdf.freebase.com/ns/> SELECT ?x WHERE { ?x ns:common.topic.add ?y }",
        'SELECT ?x WHERE { ?x ?p """LOAD\nthis""" }',
    ],
)
def test_queries_mentioning_update_words_are_not_updates(query: str) -> None:
    assert update_keyword(query) is None


# -- timeouts -------------------------------------------------------------------------------
def test_pathological_query_times_out_and_store_recovers(big_store_dir: Path) -> None:
    with OxigraphStore(big_store_dir, timeout=1.0, cache_size=10) as s:
        r = s.execute(PATHOLOGICAL)  # runs for minutes unless stopped; wait figures: bench_timeouts.py
        assert not r.ok and "timeout" in r.error
        assert s.execute(f"ASK {{ <{NS}m.e5> ?p ?o }}").answers == ["true"]  # a fresh worker answers
        again = s.execute(PATHOLOGICAL)  # timeouts are not cached
        assert not again.ok and not again.cached and s.misses == 3


def test_thread_isolation_answers_and_times_out(store_dir: Path) -> None:
    with OxigraphStore(store_dir, timeout=0.1, isolation="thread", cache_size=0) as s:
        assert s.execute(DIRECTORS).answers == ["m.d1", "m.d2"]
        # 7^7 rows: outlasts 0.1 s (≈ 0.5 s here) but ends, so the abandoned thread finishes soon
        patterns = " . ".join(f"?s{i} ?p{i} ?o{i}" for i in range(7))
        r = s.execute(f"SELECT (COUNT(*) AS ?n) WHERE {{ {patterns} }}")
        if r.ok:
            pytest.skip("machine too fast for the finite slow query")
        assert "timeout" in r.error
        assert s._runners.queue[0].abandoned == 1


def test_worker_killed_from_outside_is_replaced(store_dir: Path) -> None:
    with OxigraphStore(store_dir, cache_size=0) as s:
        runner = s._runners.queue[0]
        os.kill(runner._proc.pid, signal.SIGKILL)
        runner._proc.wait()
        assert s.execute(DIRECTORS).answers == ["m.d1", "m.d2"]


def test_several_workers_serve_threads(store_dir: Path) -> None:
    with OxigraphStore(store_dir, cache_size=0, workers=2) as s:
        results: list[ExecutionResult] = []
        threads = [threading.Thread(target=lambda: results.append(s.execute(DIRECTORS))) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [r.answers for r in results] == [["m.d1", "m.d2"]] * 6


def _query_in_child(s: OxigraphStore, conn: Any) -> None:
    conn.send((s.execute(DIRECTORS).answers, s._runners.queue[0]._proc.pid))
    conn.close()


def test_forked_child_gets_its_own_worker(store_dir: Path) -> None:
    with OxigraphStore(store_dir, cache_size=0) as s:
        assert s.execute(DIRECTORS).ok
        parent_worker = s._runners.queue[0]._proc.pid
        ctx = multiprocessing.get_context("fork")
        receiver, sender = ctx.Pipe()
        child = ctx.Process(target=_query_in_child, args=(s, sender))  # inherited, not pickled
        child.start()
        answers, child_worker = receiver.recv()
        child.join(10)
        assert answers == ["m.d1", "m.d2"] and child_worker != parent_worker
        assert s._runners.queue[0]._proc.pid == parent_worker  # the child neither used nor killed it
        assert s._runners.queue[0]._proc.poll() is None
        assert s.execute(DIRECTORS).answers == ["m.d1", "m.d2"]


# -- caches, opening ------------------------------------------------------------------------
def test_memory_cache_hits_are_flagged(store_dir: Path) -> None:
    with OxigraphStore(store_dir, cache_size=2) as s:
        first, second = s.execute(DIRECTORS), s.execute(DIRECTORS)
        assert not first.cached and second.cached and second.answers == first.answers
        second.answers.append("mutated")
        assert s.execute(DIRECTORS).answers == ["m.d1", "m.d2"]
        assert (s.hits, s.misses) == (2, 1)
        s.execute("SELECT ?x WHERE { ?x ns:a.b ?y }")
        assert s.execute("SELECT ?x WHERE { ?x ns:a.b ?y }").cached  # parse errors are definitive


def test_disk_cache_shared_by_two_store_objects(store_dir: Path, tmp_path: Path) -> None:
    cache = ExecutionCache(tmp_path / "cache.sqlite")
    with OxigraphStore(store_dir, disk_cache=cache) as s1:
        assert not s1.execute(DIRECTORS).cached
    with OxigraphStore(store_dir, disk_cache=ExecutionCache(tmp_path / "cache.sqlite")) as s2:
        r = s2.execute(DIRECTORS)
        assert r.cached and r.answers == ["m.d1", "m.d2"] and s2.cache_info()["disk_hits"] == 1


def test_open_store_dispatch_and_errors(store_dir: Path, tmp_path: Path) -> None:
    s = open_store(str(store_dir), timeout=3)
    assert isinstance(s, OxigraphStore) and isinstance(s, KnowledgeBase)
    s.close()
    assert s.execute(DIRECTORS).ok  # a closed store restarts its worker
    s.close()
    endpoint = open_store("http://127.0.0.1:9/sparql")
    assert isinstance(endpoint, EndpointStore) and isinstance(endpoint, KnowledgeBase)
    with pytest.raises(StoreError, match="does not exist"):
        open_store(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="empty"):
        open_store(tmp_path / "empty")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.txt").write_text("not a store")
    with pytest.raises(StoreError, match="cannot open"):
        OxigraphStore(tmp_path / "junk")
    with pytest.raises(StoreError, match="unsupported"):
        open_store("ftp://example.org/sparql")


def test_build_classmethod_and_closed_thread_store_reopens(tmp_path: Path) -> None:
    (tmp_path / "kb.txt").write_text("Up|directed_by|Pete Docter\n", encoding="utf-8")
    s = OxigraphStore.build(tmp_path / "s", [tmp_path / "kb.txt"], "metaqa", isolation="thread")
    assert s.build_stats is not None and s.build_stats["triples"] == 3
    s.close()
    assert s.execute("ASK { ?s ?p ?o }").answers == ["true"]
    assert "#" in s.identity  # the build id makes a rebuilt store a different cache key


def test_store_pickles(store_dir: Path) -> None:
    with OxigraphStore(store_dir, timeout=2.0) as s:
        clone = pickle.loads(pickle.dumps(s))
        try:
            assert clone.timeout == 2.0 and clone.execute(DIRECTORS).answers == ["m.d1", "m.d2"]
        finally:
            clone.close()


# -- a real HTTP SPARQL endpoint ------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:
        self._answer(parse_qs(urlparse(self.path).query).get("query", [""])[0])

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8")
        if self.headers.get("Content-Type", "").startswith("application/sparql-query"):
            self._answer(body)
        else:
            self._answer(parse_qs(body).get("query", [""])[0])

    def _answer(self, query: str) -> None:
        server = self.server
        server.requests.append(query)  # type: ignore[attr-defined]
        time.sleep(server.delay)  # type: ignore[attr-defined]
        if server.status != 200:  # type: ignore[attr-defined]
            self._send(server.status, b"Internal error", "text/plain")  # type: ignore[attr-defined]
            return
        try:
            results = server.store.query(query)  # type: ignore[attr-defined]
        except SyntaxError as exc:
            self._send(400, f"Parse error: {exc}".encode(), "text/plain")
            return
        body = results.serialize(format=pyoxigraph.QueryResultsFormat.JSON)
        self._send(200, body, "application/sparql-results+json")

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (timeout test)
            pass


def _serve(delay: float = 0.0, status: int = 200) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.store = pyoxigraph.Store()  # type: ignore[attr-defined]
    server.store.load(KB_NT.encode(), pyoxigraph.RdfFormat.N_TRIPLES)  # type: ignore[attr-defined]
    server.delay, server.status, server.requests = delay, status, []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/sparql"


@pytest.fixture
def endpoint() -> Iterator[tuple[ThreadingHTTPServer, str]]:
    server, url = _serve()
    yield server, url
    server.shutdown()
    server.server_close()


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/sparql"


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_endpoint_select_ask_and_cache(endpoint: tuple[ThreadingHTTPServer, str], method: str) -> None:
    server, url = endpoint
    s = EndpointStore(url, timeout=5, method=method)
    assert s.execute(DIRECTORS).answers == ["m.d1", "m.d2"]
    assert s.execute(DIRECTORS).cached and len(server.requests) == 1
    assert s.execute(f"SELECT ?n WHERE {{ <{NS}m.a> <{NS}type.object.name> ?n }}").answers == ['Alpha "A" film']
    assert s.execute(f"ASK {{ <{NS}m.b> ?p ?o }}").answers == ["true"]
    assert s.ping() < 5


def test_endpoint_bad_query_and_update(endpoint: tuple[ThreadingHTTPServer, str]) -> None:
    server, url = endpoint
    s = EndpointStore(url, timeout=5, retries=2, backoff=0.01)
    bad = s.execute("SELECT ?x WHERE { ?x ns:a.b ?y }")
    assert not bad.ok and "HTTP 400" in bad.error and "Parse error" in bad.error
    assert len(server.requests) == 1  # a 400 is not retried
    assert s.execute("SELECT ?x WHERE { ?x ns:a.b ?y }").cached
    update = s.execute("DELETE WHERE { ?s ?p ?o }")
    assert not update.ok and "read-only" in update.error and len(server.requests) == 1


def test_endpoint_unreachable_gives_clear_error() -> None:
    url = _closed_port_url()
    s = EndpointStore(url, timeout=1, retries=2, backoff=0.05)
    r = s.execute(DIRECTORS)
    assert not r.ok and "unreachable" in r.error and url in r.error and "3 attempts" in r.error
    assert not s.execute(DIRECTORS).cached  # unreachable is never cached
    with pytest.raises(EndpointUnreachableError, match=url):
        s.ping()


def test_endpoint_slow_server_times_out_without_retry() -> None:
    server, url = _serve(delay=2.0)
    try:
        s = EndpointStore(url, timeout=0.5, retries=3, backoff=0.01)
        r = s.execute(DIRECTORS)
        assert not r.ok and "timeout" in r.error
        assert len(server.requests) == 1  # a read timeout is not retried
    finally:
        server.shutdown()
        server.server_close()


def test_endpoint_500_is_retried_then_reported() -> None:
    server, url = _serve(status=503)
    try:
        s = EndpointStore(url, timeout=2, retries=2, backoff=0.01)
        r = s.execute(DIRECTORS)
        assert not r.ok and "HTTP 503" in r.error and len(server.requests) == 3
        with pytest.raises(EndpointUnreachableError, match="503"):
            s.ping()
    finally:
        server.shutdown()
        server.server_close()


def test_endpoint_rejects_non_http_url() -> None:
    with pytest.raises(StoreError, match="http"):
        EndpointStore("localhost:8890/sparql")
