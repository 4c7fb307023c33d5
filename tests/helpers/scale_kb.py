"""A Freebase-shaped KB of 10^5 triples on a real Oxigraph store, and a store that records its queries.

``build_scale_store(root)`` writes the KB with :func:`~kbqa_lit.data.synthetic.fb_kb.write_scale_kb`
(seed 0; its largest hub has a few thousand edges) and loads it; ``RecordingStore`` passes every
query to the real store and keeps the query texts and the number of rows each returned, for tests
that check a step's queries are bounded (a ``LIMIT``, a count of queries), never its speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbqa_lit.data.synthetic.fb_kb import write_scale_kb
from kbqa_lit.kb.store import OxigraphStore


def build_scale_store(root: Path, triples: int = 100_000) -> tuple[OxigraphStore, dict[str, Any]]:
    """Write and load the scale KB under ``root``; return the opened store and the generator's summary."""
    summary = write_scale_kb(root / "kb", triples=triples, seed=0, questions=40)
    store = OxigraphStore.build(root / "store", [root / "kb" / "kb.nt"], "nt", timeout=120, cache_size=0)
    assert json.loads((root / "kb" / "summary.json").read_text())["triples"] == summary["triples"]
    return store, summary


class RecordingStore:
    """A real store whose queries (``execute`` and ``execute_many``) are recorded with their row counts."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.identity = store.identity
        self.path = getattr(store, "path", None)
        self.queries: list[str] = []
        self.rows: list[int] = []

    def execute(self, sparql: str) -> Any:
        result = self.store.execute(sparql)
        self.queries.append(sparql)
        self.rows.append(len(result.answers))
        return result

    def execute_many(self, queries: list[str]) -> list[Any]:
        results = self.store.execute_many(queries)
        self.queries.extend(queries)
        self.rows.extend(len(r.answers) for r in results)
        return results
