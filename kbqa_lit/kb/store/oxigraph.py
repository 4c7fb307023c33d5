"""Knowledge-base stores: execute SPARQL and return answers, never raising for a bad or slow query.

Two stores share one contract (:class:`KnowledgeBase`): :class:`OxigraphStore`, an embedded
on-disk Oxigraph store opened read-only, and :class:`EndpointStore`, any SPARQL 1.1 endpoint
(Virtuoso, QLever, Fuseki) over HTTP through SPARQLWrapper. Both

- return an :class:`ExecutionResult` (answers, ok, error, elapsed, cached): a parse error, a
  timeout, an unreachable endpoint are ``ok=False`` with the error text, never an exception;
- enforce a per-query timeout;
- are read-only: SPARQL updates (``INSERT``/``DELETE``/``LOAD``/``CLEAR``/``DROP``...) are refused;
- cache results by query text in memory (LRU) and, optionally, on disk
  (:class:`~kbqa_lit.kb.store.cache.ExecutionCache`, shared between processes).

Answers are the values of the FIRST projected variable of each solution, deduplicated in order:
IRIs under the Freebase namespace become bare ids (``m.0abc``), other IRIs stay whole, literals
give their lexical value (as the store returns it: Oxigraph canonicalises typed literals, e.g.
``"1e+12"^^xsd:float`` comes back as ``1000000000000`` and ``"09"^^xsd:integer`` as ``9``).
``ASK`` gives ``["true"]`` or ``["false"]``.

The shared parts (result, protocols, update refusal, caches) are in :mod:`kbqa_lit.kb.store.base`,
the endpoint in :mod:`kbqa_lit.kb.store.endpoint`; everything is importable from :mod:`kbqa_lit.kb.store`.
"""

from __future__ import annotations

import json
import os
import queue
import re
from pathlib import Path
from typing import Any

from kbqa_lit.errors import StoreError, check_choice
from kbqa_lit.kb.store.base import (
    ExecutionResult,
    _CachingStore,
    is_endpoint,
)
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.store.endpoint import EndpointStore
from kbqa_lit.kb.store.oxigraph_runner import STORE_MARKER, ProcessRunner, ThreadRunner


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
        path: The store directory (built by :func:`kbqa_lit.kb.store.loaders.build_store`).
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
        check_choice("isolation", isolation, ("auto", "process", "thread"))
        if isolation == "auto":
            isolation = "process" if os.name == "posix" else "thread"
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
        """Build a store from triple files (see :func:`kbqa_lit.kb.store.loaders.build_store`) and open it.

        Args:
            out_dir: The new store directory.
            files: The input files.
            fmt: ``"nt"``, ``"tsv"``, ``"metaqa"`` or ``"pathquestion"``.
            overwrite: Replace an existing store at ``out_dir``.
            **kwargs: Passed to the constructor (``timeout``, ``cache_size``...).

        Returns:
            The opened store; its ``build_stats`` attribute holds the loader's statistics.

        """
        from kbqa_lit.kb.store.loaders import build_store

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


__all__ = ["OxigraphStore", "open_store"]
