"""``StoreSpec``: which knowledge base, how to build it when it is missing, and how to open it.

One value says everything a caller needs: a store folder (the embedded Oxigraph store) or an
``http(s)://`` SPARQL endpoint, the triple files that build a missing folder (``kbqa kb build``),
the per-query timeout, the worker processes of the embedded store and an optional disk cache
shared between runs. :meth:`StoreSpec.open` builds (once, under a file lock) and opens it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kbqa_lit.kb.store.base import is_endpoint
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.store.endpoint import EndpointStore
from kbqa_lit.kb.store.loaders import ensure_store
from kbqa_lit.kb.store.oxigraph import OxigraphStore, open_store


@dataclass(frozen=True)
class StoreSpec:
    """Which knowledge base and how to open it.

    Attributes:
        store: A store folder or an ``http(s)://`` SPARQL endpoint URL.
        build_from: Triple files to build a missing store folder from (ignored for an endpoint).
        build_format: Their format (``nt``, ``tsv``, ``metaqa``, ``pathquestion``).
        timeout: Seconds a query may run (``None``: the store's own default).
        workers: Worker processes of the embedded store (queries in flight); endpoints ignore it.
        disk_cache: A SQLite file caching results by query text across runs and processes.
    """

    store: str
    build_from: Sequence[str] = field(default_factory=tuple)
    build_format: str = "nt"
    timeout: float | None = None
    workers: int = 1
    disk_cache: str | None = None

    def open(self) -> OxigraphStore | EndpointStore:
        """Build the store folder when it is missing (and ``build_from`` names files), then open it."""
        if self.build_from:
            ensure_store(self.store, list(self.build_from), self.build_format)
        disk = ExecutionCache(self.disk_cache) if self.disk_cache else None
        kwargs: dict[str, object] = {"disk_cache": disk}
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        if not is_endpoint(self.store):
            kwargs["workers"] = self.workers  # Oxigraph: one worker process per query in flight
        return open_store(self.store, **kwargs)


__all__ = ["StoreSpec"]
