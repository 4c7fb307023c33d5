"""Knowledge-base stores: execute SPARQL and return answers, never raising for a bad or slow query.

Two stores share one contract (:class:`KnowledgeBase`): :class:`OxigraphStore`, an embedded
on-disk Oxigraph store opened read-only, and :class:`EndpointStore`, any SPARQL 1.1 endpoint
(Virtuoso, QLever, Fuseki) over HTTP through SPARQLWrapper. Both

- return an :class:`ExecutionResult` (answers, ok, error, elapsed, cached): a parse error, a
  timeout, an unreachable endpoint are ``ok=False`` with the error text, never an exception;
- enforce a per-query timeout;
- are read-only: SPARQL updates (``INSERT``/``DELETE``/``LOAD``/``CLEAR``/``DROP``...) are refused;
- cache results by query text in memory (LRU) and, optionally, on disk
  (:class:`~kbqa_lit.kb.cache.ExecutionCache`, shared between processes).

Answers are the values of the FIRST projected variable of each solution, deduplicated in order:
IRIs under the Freebase namespace become bare ids (``m.0abc``), other IRIs stay whole, literals
give their lexical value (as the store returns it: Oxigraph canonicalises typed literals, e.g.
``"1e+12"^^xsd:float`` comes back as ``1000000000000`` and ``"09"^^xsd:integer`` as ``9``).
``ASK`` gives ``["true"]`` or ``["false"]``.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kbqa_lit.errors import EndpointUnreachableError, StoreError
from kbqa_lit.kb.cache import ExecutionCache, LRUCache
from kbqa_lit.kb.iri import local_id
from kbqa_lit.kb.literals import canonical_literal
from kbqa_lit.kb.oxigraph_runner import STORE_MARKER, ProcessRunner, ThreadRunner

log = logging.getLogger(__name__)

#: Words that only occur in SPARQL Update requests.
UPDATE_KEYWORDS = frozenset({"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY"})
_UPDATE_WORDS = (*sorted(UPDATE_KEYWORDS), "WITH")

_TOKEN_RE = re.compile(
    r"""(?P<comment>\#[^\n]*)
    |(?P<iri><[^<>"{}|^`\\\s]*>)
    |(?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
        |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
    |(?P<skip>[?$][\w]+|@[A-Za-z][\w-]*|[\w.-]*:[\w.:%-]*)
    |(?P<word>[A-Za-z]+)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)


def update_keyword(sparql: str) -> str | None:
    """Return the SPARQL Update keyword a request uses, or ``None`` for a plain query.

    Comments, IRIs, string literals, variables, language tags and prefixed names are skipped, so
    ``?delete`` or ``ns:common.topic.add`` are not mistaken for updates.

    Args:
        sparql: The request text.

    Returns:
        The upper-cased keyword (``"INSERT"``, ``"DROP"``, ``"WITH"``...) or ``None``.

    """
    upper_text = sparql.upper()
    if not any(k in upper_text for k in _UPDATE_WORDS):  # the common case, ≈ 15× faster than tokenising
        return None
    first = True
    for m in _TOKEN_RE.finditer(sparql):
        word = m.group("word")
        if word is None:
            continue
        upper = word.upper()
        if upper in UPDATE_KEYWORDS or (first and upper == "WITH"):
            return upper
        first = first and upper in ("PREFIX", "BASE")
    return None


@dataclass(slots=True)
class ExecutionResult:
    """The outcome of executing one query.

    Attributes:
        answers: KB ids (Freebase namespace stripped; other IRIs whole) or literal lexical values
            of the first projected variable, deduplicated in order; ``["true"]``/``["false"]`` for ASK.
        ok: Whether the query executed.
        error: Why it did not (``None`` when ok).
        elapsed: Wall-clock seconds spent in :meth:`KnowledgeBase.execute`.
        cached: Whether the result came from a cache.

    """

    answers: list[str] = field(default_factory=list)
    ok: bool = True
    error: str | None = None
    elapsed: float = 0.0
    cached: bool = False


@runtime_checkable
class KnowledgeBase(Protocol):
    """Anything that executes SPARQL and returns an :class:`ExecutionResult` without raising."""

    def execute(self, sparql: str) -> ExecutionResult:
        """Execute one SPARQL query."""
        ...


@runtime_checkable
class BatchKnowledgeBase(KnowledgeBase, Protocol):
    """A knowledge base that also executes several queries at once (both stores here).

    For any other :class:`KnowledgeBase`, :func:`kbqa_lit.kb.execute.execute_many` falls back to
    a loop over ``execute``.
    """

    def execute_many(self, queries: Sequence[str]) -> list[ExecutionResult]:
        """Execute queries in order, each under the store's timeout, without raising."""
        ...


class _CachingStore:
    """The parts every store shares: update refusal, the two caches, counters, never raising."""

    identity: str = ""
    _args: dict[str, Any]

    def _init_cache(self, cache_size: int, disk_cache: ExecutionCache | None) -> None:
        self._memory = LRUCache(cache_size)
        self.disk_cache = disk_cache
        self.hits = 0
        self.misses = 0

    def _run(self, sparql: str) -> tuple[ExecutionResult, bool]:
        """Execute for real; return the result and whether a failure is definitive (cacheable)."""
        raise NotImplementedError

    def execute(self, sparql: str) -> ExecutionResult:
        """Execute a SPARQL ``SELECT`` or ``ASK`` query.

        Never raises: every failure is an ``ok=False`` result whose ``error`` says what happened.

        Args:
            sparql: The query text.

        Returns:
            The answers of the first projected variable (see the module docstring).

        """
        start = time.perf_counter()
        try:
            result = self._execute(sparql)
        except Exception as exc:  # the last line of defence of the never-raise contract
            log.exception("unexpected error while executing a query on %s", self.identity)
            result = ExecutionResult([], False, f"internal error: {type(exc).__name__}: {exc}")
        result.elapsed = time.perf_counter() - start
        return result

    def execute_many(self, queries: Sequence[str]) -> list[ExecutionResult]:
        """Execute several queries (e.g. a question's beams) at once; results in order.

        The caches are consulted first and only the misses are run, in one batch (the Oxigraph
        store: one round trip to its worker process), each still under the store's timeout. Equal
        to :meth:`execute` on each query in turn (answers, ok, error); never raises.

        Args:
            queries: The query texts.

        Returns:
            One result per query; ``elapsed`` of a query that was run is its share of the batch.

        """
        from kbqa_lit.kb.store_batch import cached_execute_many

        return cached_execute_many(self, queries)

    def _execute(self, sparql: str) -> ExecutionResult:
        refused = self._refusal(sparql)
        if refused is not None:
            return refused
        hit = self._lookup(sparql)
        if hit is not None:
            return hit
        self.misses += 1
        result, definitive = self._run(sparql)
        self._remember(sparql, result, definitive)
        return result

    def _run_many(self, queries: list[str]) -> list[tuple[ExecutionResult, bool]]:
        """Execute cache misses for real, in order (stores with a batch round trip override this)."""
        return [self._run(q) for q in queries]

    @staticmethod
    def _refusal(sparql: Any) -> ExecutionResult | None:
        """The failed result of a request that must not run (not a string, an update), else ``None``."""
        if not isinstance(sparql, str):
            return ExecutionResult([], False, f"query must be a string, got {type(sparql).__name__}")
        keyword = update_keyword(sparql)
        if keyword is not None:
            return ExecutionResult(
                [], False, f"refused: the store is read-only and this is a SPARQL update ({keyword})"
            )
        return None

    def _lookup(self, sparql: str) -> ExecutionResult | None:
        """The cached result of ``sparql`` (memory, then disk), counting a hit; ``None`` on a miss."""
        hit = self._memory.get(sparql)
        if hit is not None:
            self.hits += 1
            answers, ok, error = hit  # type: ignore[misc]
            return ExecutionResult(list(answers), ok, error, cached=True)
        if self.disk_cache is not None:
            try:
                row = self.disk_cache.get(self.identity, sparql)
            except (sqlite3.Error, OSError) as exc:
                log.warning("execution cache %s unusable for a lookup: %s", self.disk_cache.path, exc)
                row = None
            if row is not None:
                self.hits += 1
                self._memory.put(sparql, (tuple(row[0]), row[1], row[2]))
                return ExecutionResult(row[0], row[1], row[2], cached=True)
        return None

    def _remember(self, sparql: str, result: ExecutionResult, definitive: bool) -> None:
        """Cache a result that was run, when it is ok or its failure is definitive."""
        if result.ok or definitive:
            self._memory.put(sparql, (tuple(result.answers), result.ok, result.error))
            if self.disk_cache is not None:
                try:
                    self.disk_cache.put(self.identity, sparql, result, definitive=definitive)
                except (sqlite3.Error, OSError) as exc:
                    log.warning("execution cache %s unusable for a write: %s", self.disk_cache.path, exc)

    def cache_info(self) -> dict[str, Any]:
        """Return the cache counters: store hits/misses, memory entries, disk hits/misses."""
        info: dict[str, Any] = {"hits": self.hits, "misses": self.misses, "memory_entries": len(self._memory)}
        if self.disk_cache is not None:
            info.update(disk_hits=self.disk_cache.hits, disk_misses=self.disk_cache.misses)
        return info

    def clear_cache(self) -> None:
        """Forget the in-memory cache (the disk cache is left alone)."""
        self._memory.clear()

    def close(self) -> None:
        """Release the store's resources."""

    def __getstate__(self) -> dict[str, Any]:  # pickles as its constructor arguments
        return dict(self._args)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __enter__(self) -> _CachingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _store_identity(path: Path) -> str:
    marker = path / STORE_MARKER
    build_id = ""
    if marker.is_file():
        try:
            build_id = str(json.loads(marker.read_text(encoding="utf-8")).get("build_id", ""))
        except (OSError, ValueError, AttributeError):
            build_id = ""
    return f"oxigraph:{path}" + (f"#{build_id}" if build_id else "")


class OxigraphStore(_CachingStore):
    """An on-disk Oxigraph store opened read-only.

    pyoxigraph 0.5 has no query timeout or cancellation (``Store.query`` takes none, and the
    evaluation of one solution — e.g. a cross product rejected by a ``FILTER``, or a ``COUNT`` —
    is a single uninterruptible call). Two isolation modes bound the caller's wait anyway:

    - ``"process"`` (the default on POSIX): queries run in a worker process that holds its own
      read-only handle; on timeout the worker is killed (its CPU and memory are really freed) and a new
      one is started. Costs ≈ 0.2 ms of pipe round trip per query and ≈ 0.1 s to start a
      worker after each timeout. ``workers`` processes serve concurrent callers (threads);
      with one worker the queries of one store run one at a time.
    - ``"thread"``: queries run in a daemon thread of this process (no subprocess; works where
      ``select`` on pipes does not, e.g. Windows); on timeout the caller gets the error at once,
      but the abandoned query keeps running (burning a core) until it ends on its own. Not
      faster: a thread per query costs about as much as the pipe round trip.

    Args:
        path: The store directory (built by :func:`kbqa_lit.kb.loaders.build_store`).
        timeout: Seconds a query may run before it is given up (``ok=False``, ``error`` says timeout).
        cache_size: Capacity of the in-memory LRU cache (``0`` disables it).
        disk_cache: An optional shared on-disk cache.
        isolation: ``"process"``, ``"thread"`` or ``"auto"`` (process on POSIX, else thread).
        startup_timeout: Seconds allowed for a worker process to open the store.
        workers: Worker processes (``"process"`` isolation) serving concurrent callers.

    Raises:
        StoreError: When the directory is missing or is not an Oxigraph store.

    """

    def __init__(
        self,
        path: str | Path,
        timeout: float = 10.0,
        cache_size: int = 100_000,
        disk_cache: ExecutionCache | None = None,
        isolation: str = "auto",
        startup_timeout: float = 120.0,
        workers: int = 1,
    ) -> None:
        self._args = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        path = Path(path).expanduser()
        if not path.is_dir():
            what = "is not a directory" if path.exists() else "does not exist"
            raise StoreError(
                f"no knowledge-base store at {path}: the directory {what} "
                f"(build one with `kbqa kb build --store {path} FILE...`)"
            )
        if not any(path.iterdir()):
            raise StoreError(f"no knowledge-base store at {path}: the directory is empty")
        if isolation == "auto":
            isolation = "process" if os.name == "posix" else "thread"
        if isolation not in ("process", "thread"):
            raise ValueError(f"isolation must be 'auto', 'process' or 'thread', not {isolation!r}")
        self.path = path.resolve()
        self.timeout = float(timeout)
        self.isolation = isolation
        self._args["path"] = str(self.path)
        self.identity = _store_identity(self.path)
        self._init_cache(cache_size, disk_cache)
        self.build_stats: dict[str, Any] | None = None
        self.workers = max(1, int(workers))
        self._runners: queue.LifoQueue[ProcessRunner | ThreadRunner] = queue.LifoQueue()
        for _ in range(self.workers if isolation == "process" else 1):
            runner = ProcessRunner(self.path, startup_timeout) if isolation == "process" else ThreadRunner(self.path)
            self._runners.put(runner)
        for runner in list(self._runners.queue):
            runner.start()

    @classmethod
    def build(
        cls, out_dir: str | Path, files: list[str | Path], fmt: str, *, overwrite: bool = False, **kwargs: Any
    ) -> OxigraphStore:
        """Build a store from triple files (see :func:`kbqa_lit.kb.loaders.build_store`) and open it.

        Args:
            out_dir: The new store directory.
            files: The input files.
            fmt: ``"nt"``, ``"tsv"``, ``"metaqa"`` or ``"pathquestion"``.
            overwrite: Replace an existing store at ``out_dir``.
            **kwargs: Passed to the constructor (``timeout``, ``cache_size``...).

        Returns:
            The opened store; its ``build_stats`` attribute holds the loader's statistics.

        """
        from kbqa_lit.kb.loaders import build_store

        stats = build_store(out_dir, files, fmt, overwrite=overwrite)
        store = cls(out_dir, **kwargs)
        store.build_stats = stats
        return store

    def _run(self, sparql: str) -> tuple[ExecutionResult, bool]:
        return self._run_many([sparql])[0]

    def _run_many(self, queries: list[str]) -> list[tuple[ExecutionResult, bool]]:
        """Run queries on one worker in one round trip, each under ``timeout``."""
        runner = self._runners.get() if self.isolation == "process" else self._runners.queue[0]
        try:
            replies = runner.run_many(queries, self.timeout)
        finally:
            if self.isolation == "process":
                self._runners.put(runner)
        out = []
        for reply in replies:
            result = ExecutionResult(list(reply.get("answers") or []), bool(reply.get("ok")), reply.get("error"))
            out.append((result, reply.get("kind", "error") in ("syntax", "unsupported")))
        return out

    def close(self) -> None:
        """Stop the worker processes (a later query starts a new one)."""
        for runner in list(self._runners.queue):
            runner.close()

    def __repr__(self) -> str:
        return f"OxigraphStore({str(self.path)!r}, timeout={self.timeout:g}, isolation={self.isolation!r})"


def _http_body(exc: BaseException) -> str:
    """Return the response body that SPARQLWrapper folded into an exception message."""
    text = str(exc)
    _, sep, body = text.partition("Response:\n")
    if not sep:
        return text
    body = body.strip()
    if body[:2] in ("b'", 'b"'):
        try:
            import ast

            body = ast.literal_eval(body).decode("utf-8", "replace")
        except (ValueError, SyntaxError):
            pass
    return " ".join(body.split())[:1000]


class EndpointStore(_CachingStore):
    """A SPARQL 1.1 endpoint over HTTP (Virtuoso, QLever, Fuseki, ``oxigraph serve-read-only``).

    Connection failures, HTTP 5xx and dropped connections are retried ``retries`` times with
    exponential back-off (``backoff``, ``2·backoff``, ...); a read timeout (the query is slow) and
    HTTP 4xx are not retried. ``timeout`` bounds each blocking socket operation (connect, each
    read), so a server that trickles bytes could exceed it. Bound the server's work with its own
    setting (Virtuoso: ``MaxQueryExecutionTime`` in virtuoso.ini, which ``kbqa kb serve-virtuoso``
    sets; it answers HTTP 500 ``S1T00``, reported as a failed query). Do NOT pass Virtuoso's
    ``timeout`` request parameter: it returns partial results with HTTP 200 (only an
    ``X-SQL-State: S1TAT`` header says so), which would be cached as answers. Typed-literal
    answers are put in canonical form (:mod:`kbqa_lit.kb.literals`) so they equal Oxigraph's.

    Args:
        url: The endpoint URL (``http://host:8890/sparql``).
        timeout: Socket timeout in seconds per attempt.
        retries: Extra attempts after a connection failure or a 5xx.
        backoff: Seconds before the first retry; doubled each time.
        disk_cache: An optional shared on-disk cache.
        cache_size: Capacity of the in-memory LRU cache.
        method: ``"POST"`` (form-encoded, no URL-length limit) or ``"GET"``.
        params: Extra request parameters sent with every query.
        agent: The HTTP User-Agent.

    Raises:
        StoreError: When ``url`` is not an http(s) URL.

    """

    def __init__(
        self,
        url: str,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        disk_cache: ExecutionCache | None = None,
        cache_size: int = 100_000,
        method: str = "POST",
        params: dict[str, str] | None = None,
        agent: str = "kbqa_lit",
    ) -> None:
        self._args = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        if not re.match(r"^https?://[^\s/]+", url, re.IGNORECASE):
            raise StoreError(f"not an http(s) SPARQL endpoint URL: {url!r}")
        if method.upper() not in ("GET", "POST"):
            raise ValueError(f"method must be GET or POST, not {method!r}")
        self.url = url
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.method = method.upper()
        self.params = dict(params or {})
        self.agent = agent
        self.identity = f"sparql:{url}"
        self._init_cache(cache_size, disk_cache)

    def _attempt(self, sparql: str) -> tuple[str, Any]:
        """One HTTP request; return ``(outcome, payload)``, outcome in ok/bad/retry/timeout/fail."""
        import http.client
        import urllib.error

        from SPARQLWrapper import GET, JSON, POST, SPARQLWrapper
        from SPARQLWrapper.SPARQLExceptions import (
            EndPointInternalError,
            EndPointNotFound,
            QueryBadFormed,
            SPARQLWrapperException,
        )

        client = SPARQLWrapper(self.url, agent=self.agent)
        client.setReturnFormat(JSON)
        client.setMethod(POST if self.method == "POST" else GET)
        client.timeout = self.timeout  # setTimeout() truncates to int (0.5 → no timeout at all)
        for key, value in self.params.items():
            client.addParameter(key, value)
        client.setQuery(sparql)
        try:
            data = client.query().convert()
        except QueryBadFormed as exc:
            return "bad", f"the endpoint rejected the query (HTTP 400): {_http_body(exc)}"
        except EndPointNotFound as exc:
            return "fail", f"no SPARQL endpoint at {self.url} (HTTP 404): {_http_body(exc)}"
        except EndPointInternalError as exc:
            body = _http_body(exc)
            if re.search(r"time[ -]?out|execution time|timed out", body, re.IGNORECASE):
                return "timeout", f"timeout: the endpoint gave up on the query (HTTP 500): {body}"
            return "retry", f"endpoint error (HTTP 500): {body}"
        except urllib.error.HTTPError as exc:
            outcome = "retry" if exc.code >= 500 else "fail"
            return outcome, f"HTTP {exc.code} {exc.reason} from {self.url}"
        except urllib.error.URLError as exc:
            return "retry", f"cannot connect to {self.url}: {exc.reason}"
        except TimeoutError:
            return "timeout", f"timeout: no answer from {self.url} within {self.timeout:g} s"
        except (ConnectionError, http.client.HTTPException) as exc:
            return "retry", f"connection to {self.url} failed: {type(exc).__name__}: {exc}"
        except SPARQLWrapperException as exc:
            return "fail", f"{type(exc).__name__}: {_http_body(exc)}"
        except ValueError as exc:
            return "fail", f"the endpoint {self.url} did not return SPARQL JSON results: {exc}"
        return "ok", data

    def _request(self, sparql: str) -> tuple[str, Any, int]:
        """Run attempts with back-off; return ``(outcome, payload, attempts)``."""
        attempts = 0
        while True:
            attempts += 1
            outcome, payload = self._attempt(sparql)
            if outcome != "retry" or attempts > self.retries:
                return outcome, payload, attempts
            time.sleep(self.backoff * 2 ** (attempts - 1))

    def _run(self, sparql: str) -> tuple[ExecutionResult, bool]:
        outcome, payload, attempts = self._request(sparql)
        if outcome == "ok":
            try:
                return ExecutionResult(_answers_from_json(payload)), False
            except (KeyError, TypeError, IndexError, AttributeError) as exc:
                msg = f"malformed SPARQL JSON results from {self.url}: {type(exc).__name__}: {exc}"
                return ExecutionResult([], False, msg), False
        if outcome == "retry":
            payload = f"SPARQL endpoint {self.url} is unreachable after {attempts} attempts: {payload}"
        return ExecutionResult([], False, payload), outcome == "bad"

    def ping(self) -> float:
        """Check that the endpoint answers a trivial query (``ASK {}``).

        Returns:
            The round-trip time in seconds.

        Raises:
            EndpointUnreachableError: Naming the URL, when it does not answer after the retries.

        """
        start = time.perf_counter()
        outcome, payload, attempts = self._request("ASK {}")
        if outcome in ("ok", "bad"):
            return time.perf_counter() - start
        raise EndpointUnreachableError(f"SPARQL endpoint {self.url} is unreachable ({attempts} attempt(s)): {payload}")

    def __repr__(self) -> str:
        return f"EndpointStore({self.url!r}, timeout={self.timeout:g})"


def _answers_from_json(data: dict[str, Any]) -> list[str]:
    """Turn SPARQL JSON results into answers of the first projected variable."""
    if "boolean" in data:
        return ["true" if data["boolean"] else "false"]
    variables = data["head"].get("vars") or []
    if not variables:
        return []
    first = variables[0]
    if variables == ["__ASK_RETVAL"]:  # Virtuoso answers ASK as a one-column SELECT
        return ["true" if data["results"]["bindings"] else "false"]
    seen: dict[str, None] = {}
    for binding in data["results"]["bindings"]:
        term = binding.get(first)
        if term is None:
            continue
        kind, value = term["type"], term["value"]
        if kind == "uri":
            value = local_id(value)
        elif kind == "bnode":
            value = "_:" + value
        elif kind in ("literal", "typed-literal"):
            value = canonical_literal(value, term.get("datatype"))
        seen.setdefault(value, None)
    return list(seen)


def is_endpoint(spec: str | Path) -> bool:
    """Whether a store spec names a SPARQL endpoint (an ``http(s)://`` URL) rather than a store directory.

    The one rule every part of kbqa_lit uses to tell the two apart.
    """
    return re.match(r"^https?://", str(spec), re.IGNORECASE) is not None


def open_store(spec: str | Path, **kwargs: Any) -> OxigraphStore | EndpointStore:
    """Open a knowledge base from a directory (Oxigraph) or an http(s) URL (SPARQL endpoint).

    Args:
        spec: A store directory or an endpoint URL.
        **kwargs: Passed to the store's constructor (``timeout``, ``cache_size``, ``disk_cache``...).

    Returns:
        The opened store.

    Raises:
        StoreError: When the directory does not exist or is not a store.

    """
    text = str(spec)
    if is_endpoint(text):
        return EndpointStore(text, **kwargs)
    if re.match(r"^[a-z][a-z0-9+.-]*://", text, re.IGNORECASE):
        raise StoreError(f"unsupported store URL {text!r}: use an http(s):// SPARQL endpoint or a directory")
    return OxigraphStore(text, **kwargs)
