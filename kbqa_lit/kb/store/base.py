"""What every knowledge-base store shares: the result type, the protocols, update refusal, caching.

- :class:`ExecutionResult`: answers, ok, error, elapsed, cached; never an exception for a bad or
  slow query;
- :class:`KnowledgeBase` / :class:`BatchKnowledgeBase`: the contract of a store;
- :func:`update_keyword`: SPARQL Update requests are refused by every store;
- :class:`_CachingStore`: the in-memory LRU and optional on-disk cache
  (:class:`~kbqa_lit.kb.store.cache.ExecutionCache`), counters, and the never-raising ``execute``;
- :func:`is_endpoint`: whether a store spec is an endpoint URL or a store directory.

:class:`ExecutionResult` lives in :mod:`kbqa_lit.kb.store.result` and the batch rules in
:mod:`kbqa_lit.kb.store.batch` (both import nothing of the stores, so there is no import circle).

The stores themselves are :class:`~kbqa_lit.kb.store.OxigraphStore` and
:class:`~kbqa_lit.kb.store.endpoint.EndpointStore`; import all of these from :mod:`kbqa_lit.kb.store`.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kbqa_lit.kb.store.batch import cached_execute_many
from kbqa_lit.kb.store.cache import ExecutionCache, LRUCache
from kbqa_lit.kb.store.result import ExecutionResult

log = logging.getLogger("kbqa_lit.kb.store")

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


@runtime_checkable
class KnowledgeBase(Protocol):
    """Anything that executes SPARQL and returns an :class:`ExecutionResult` without raising."""

    def execute(self, sparql: str) -> ExecutionResult:
        """Execute one SPARQL query."""
        ...


@runtime_checkable
class BatchKnowledgeBase(KnowledgeBase, Protocol):
    """A knowledge base that also executes several queries at once (both stores here).

    For any other :class:`KnowledgeBase`, :func:`kbqa_lit.kb.store.execute.execute_many` falls back to
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
        """The failed result of a request that must not run (not a string, not Unicode, an update), else ``None``."""
        if not isinstance(sparql, str):
            return ExecutionResult([], False, f"query must be a string, got {type(sparql).__name__}")
        try:
            sparql.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (e.g. from JSON "\ud800"): no store can be sent it
            return ExecutionResult(
                [], False, f"refused: the query is not valid Unicode text ({exc.reason} at offset {exc.start})"
            )
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


def is_endpoint(spec: str | Path) -> bool:
    """Whether a store spec names a SPARQL endpoint (an ``http(s)://`` URL) rather than a store directory.

    The one rule every part of kbqa_lit uses to tell the two apart.
    """
    return re.match(r"^https?://", str(spec), re.IGNORECASE) is not None
