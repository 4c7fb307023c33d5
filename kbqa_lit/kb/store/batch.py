"""Batch execution for the caching stores: the caches first, one batch of misses, results in order.

:meth:`kbqa_lit.kb.store.OxigraphStore.execute_many` (and the endpoint store's) lands here. The
rules equal those of ``execute`` called on each query in turn:

- a refused request (not a string, a SPARQL update) fails without running;
- a query found in the memory or disk cache is answered from it (``cached=True``, a hit);
- the distinct misses are run in one call of the store's ``_run_many`` (the Oxigraph store:
  one round trip to its worker process, each query under its own timeout), counted as misses,
  and cached when ok or definitively failed;
- a query repeated within the batch is run once; its later copies count as cache hits when the
  result is cacheable (as ``execute`` would have found it in the cache), else as misses.

Nothing raises: an unexpected error fills the unanswered slots with ``internal error`` results.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from kbqa_lit.kb.store.result import ExecutionResult

log = logging.getLogger(__name__)


def cached_execute_many(store: Any, queries: Sequence[str]) -> list[ExecutionResult]:
    """Execute ``queries`` on a caching store (see the module docstring).

    Args:
        store: The store: a :class:`~kbqa_lit.kb.store.base._CachingStore` (an
            :class:`~kbqa_lit.kb.store.OxigraphStore` or :class:`~kbqa_lit.kb.store.EndpointStore`;
            not imported here, which would close an import circle).
        queries: The query texts.

    Returns:
        One result per query, in order. ``elapsed`` is the lookup time of a cached or refused
        query and, for a query that was run, the batch's run time divided by the queries run.

    """
    queries = list(queries)
    results: list[ExecutionResult | None] = [None] * len(queries)
    try:
        pending: dict[str, list[int]] = {}
        for i, sparql in enumerate(queries):
            start = time.perf_counter()
            found = store._refusal(sparql)
            if found is None:
                if sparql in pending:
                    pending[sparql].append(i)
                    continue
                found = store._lookup(sparql)
            if found is None:
                pending[sparql] = [i]
                continue
            found.elapsed = time.perf_counter() - start
            results[i] = found
        if pending:
            _run_pending(store, pending, results)
    except Exception as exc:  # the last line of defence of the never-raise contract
        log.exception("unexpected error while executing a batch of queries on %s", store.identity)
        for i, result in enumerate(results):
            if result is None:
                results[i] = ExecutionResult([], False, f"internal error: {type(exc).__name__}: {exc}")
    return [r for r in results if r is not None]


def _run_pending(store: Any, pending: dict[str, list[int]], results: list[ExecutionResult | None]) -> None:
    """Run the distinct misses in one batch and put each result (and its in-batch copies) in place."""
    texts = list(pending)
    store.misses += len(texts)
    start = time.perf_counter()
    ran = store._run_many(texts)
    if len(ran) != len(texts):
        raise RuntimeError(f"the store ran {len(ran)} of {len(texts)} queries")
    share = (time.perf_counter() - start) / len(texts)
    for sparql, (result, definitive) in zip(texts, ran, strict=True):
        store._remember(sparql, result, definitive)
        first, *copies = pending[sparql]
        result.elapsed = share
        results[first] = result
        cacheable = result.ok or definitive
        for j in copies:
            if cacheable:
                store.hits += 1
            else:
                store.misses += 1
            results[j] = ExecutionResult(
                list(result.answers), result.ok, result.error, cached=cacheable, unreachable=result.unreachable
            )
