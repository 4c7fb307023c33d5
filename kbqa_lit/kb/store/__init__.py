"""Knowledge-base stores, the public face: ``from kbqa_lit.kb.store import open_store, OxigraphStore, ...``.

A store executes SPARQL and returns an :class:`ExecutionResult` (answers, ok, error, elapsed, cached),
never raising for a bad or slow query; it enforces a timeout, is read-only and caches by query text.

=====================  ================================================================
``result.py``          :class:`ExecutionResult`
``base.py``            the protocols, update refusal, the caching store base, :func:`is_endpoint`
``batch.py``           ``execute_many``'s rules (caches first, one batch of misses)
``cache.py``           the in-memory LRU and the on-disk (SQLite) execution cache
``oxigraph.py``        :class:`OxigraphStore` (embedded, on disk) and :func:`open_store`
``oxigraph_runner.py`` the worker that runs Oxigraph queries under a timeout
``endpoint.py``        :class:`EndpointStore` (any SPARQL 1.1 endpoint over HTTP)
``loaders.py``         building a store from triple files (``kbqa kb build``)
``execute.py``         S-expressions executed on a store
``spec.py``            :class:`StoreSpec`: which knowledge base, how to build and open it
=====================  ================================================================
"""

from kbqa_lit.kb.store.base import (
    UPDATE_KEYWORDS,
    BatchKnowledgeBase,
    KnowledgeBase,
    is_endpoint,
    update_keyword,
)
from kbqa_lit.kb.store.endpoint import EndpointStore
from kbqa_lit.kb.store.oxigraph import OxigraphStore, open_store
from kbqa_lit.kb.store.result import ExecutionResult
from kbqa_lit.kb.store.spec import StoreSpec

__all__ = [
    "UPDATE_KEYWORDS",
    "BatchKnowledgeBase",
    "EndpointStore",
    "ExecutionResult",
    "KnowledgeBase",
    "OxigraphStore",
    "StoreSpec",
    "is_endpoint",
    "open_store",
    "update_keyword",
]
