"""The entity index in an SQLite file, for knowledge bases whose names outgrow RAM.

:class:`DiskEntityIndex` answers exactly as the in-memory
:class:`~kbqa_lit.kb.index.entity_index.EntityIndex` (same matching code,
:class:`~kbqa_lit.kb.index.surface_search.SurfaceSearch`; same candidates for the same names), but keeps
names, surfaces and trigram postings in ``<store>.entities.sqlite``: a process holds SQLite's page
cache and a bounded label/degree cache, not the KB's names (at 10^7 triples the in-memory index held
697 MB). Building it is bounded too:

- names, aliases and degrees are streamed into the file in batches. From an Oxigraph store they are
  read in this process through a read-only handle (``quads_for_pattern``), degrees counted per
  batch of triples: no ``GROUP BY`` over every edge (at 10^7 triples that query ran past a 120 s
  timeout); from a SPARQL endpoint, the three queries of :meth:`EntityIndex.build`;
- surfaces and normalised surfaces are deduplicated by SQLite (``GROUP BY``), not in a dict;
- trigram postings are collected for a bounded number of surfaces at a time and merged in the file;
  postings longer than :func:`~kbqa_lit.kb.index.surface_search.common_posting` are not stored (the
  fuzzy match never reads them).

The file is written under a temporary name and renamed when complete; a file whose format or store
differs is rebuilt by :meth:`EntityIndex.for_store`.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sqlite3
import threading
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.index.edges import read_names
from kbqa_lit.kb.index.relation_inventory import EXCLUDED_RELATIONS
from kbqa_lit.kb.index.surface_search import SurfaceSearch, common_posting, ngram_limit, normalize_surface, trigrams
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, iri, local_id

log = logging.getLogger(__name__)

DB_FORMAT = 1
_BATCH = 50_000  # rows per executemany
_POSTINGS_PER_FLUSH = 4_000_000  # posting entries held in memory while building
_DEGREE_KEYS_PER_FLUSH = 1_000_000  # distinct nodes counted in memory before their counts go to the file
_CACHE = 200_000  # label/degree entries kept in memory

_SCHEMA = """
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE entity(id TEXT NOT NULL UNIQUE, name TEXT NOT NULL, degree INTEGER NOT NULL DEFAULT 0);
CREATE TEMP TABLE alias_in(id TEXT NOT NULL, alias TEXT NOT NULL);
CREATE TEMP TABLE surf_in(text TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL);
CREATE TEMP TABLE norm_in(seq INTEGER PRIMARY KEY, norm TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL);
CREATE TEMP TABLE gram_part(g TEXT NOT NULL, ids BLOB NOT NULL);
"""

_FINISH = """
CREATE TABLE surface(text TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL);
INSERT INTO surface SELECT text, id, MAX(kind) FROM surf_in GROUP BY text, id;
CREATE INDEX surface_text ON surface(text);
CREATE TABLE normkey(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
INSERT INTO normkey(key) SELECT norm FROM norm_in GROUP BY norm ORDER BY MIN(seq);
CREATE TABLE norm(key_id INTEGER NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL);
INSERT INTO norm SELECT k.id, n.id, MAX(n.kind) FROM norm_in n JOIN normkey k ON k.key = n.norm GROUP BY k.id, n.id;
CREATE INDEX norm_key ON norm(key_id);
CREATE TABLE gram(g TEXT PRIMARY KEY, n INTEGER NOT NULL, ids BLOB) WITHOUT ROWID;
"""


def disk_index_path(store_path: str | Path) -> Path:
    """The file next to a store directory that holds its on-disk entity index: ``<store>.entities.sqlite``."""
    p = Path(store_path)
    return p.with_name(p.name + ".entities.sqlite")


class _Writer:
    """Streams names, aliases and degrees into a new index file, then derives surfaces and postings."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self.tmp.unlink(missing_ok=True)
        self.conn = sqlite3.connect(self.tmp)
        self.conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;" + _SCHEMA)

    def names(self, rows: Iterable[tuple[str, str, int]]) -> None:
        """``(id, name, degree)`` rows; an entity keeps its first name (later ones are ignored)."""
        for batch in _batches(rows):
            self.conn.executemany("INSERT OR IGNORE INTO entity(id, name, degree) VALUES (?, ?, ?)", batch)

    def aliases(self, rows: Iterable[tuple[str, str]]) -> None:
        """``(id, alias)`` rows (aliases of entities without a name are dropped at the end)."""
        for batch in _batches(rows):
            self.conn.executemany("INSERT INTO alias_in(id, alias) VALUES (?, ?)", batch)

    def add_degrees(self, counts: Mapping[str, int]) -> None:
        """Add edge counts to the named entities (others are ignored)."""
        for batch in _batches(counts.items()):
            self.conn.executemany("UPDATE entity SET degree = degree + ? WHERE id = ?", [(n, e) for e, n in batch])

    def finish(self, source: str, build_seconds: float) -> Path:
        """Derive surfaces, normalised surfaces and postings; write the meta row; rename into place."""
        conn = self.conn
        longest = 1
        names = conn.execute("SELECT id, name, 'name' FROM entity ORDER BY rowid")
        alias_rows = self.conn.cursor().execute(
            "SELECT a.id, a.alias, 'alias' FROM alias_in a JOIN entity e ON e.id = a.id"
            " WHERE a.alias != '' ORDER BY a.rowid"
        )
        rows = itertools.chain(names, alias_rows)
        aliases = 0
        write = conn.cursor()
        for batch in _batches(rows):
            surfs, norms = [], []
            for eid, surface, kind in batch:
                aliases += kind == "alias"
                surface = " ".join(str(surface).split())
                if not surface:
                    continue
                longest = max(longest, len(surface.split()))
                surfs.append((surface, eid, kind))
                norm = normalize_surface(surface)
                if norm:
                    norms.append((norm, eid, kind))
            write.executemany("INSERT INTO surf_in VALUES (?, ?, ?)", surfs)
            write.executemany("INSERT INTO norm_in(norm, id, kind) VALUES (?, ?, ?)", norms)
        conn.executescript(_FINISH)
        keys = conn.execute("SELECT COUNT(*) FROM normkey").fetchone()[0]
        common = common_posting(keys)
        self._postings(common)
        meta = {
            "format": DB_FORMAT,
            "store": source,
            "build_seconds": build_seconds,
            "max_ngram": ngram_limit(longest),
            "common": common,
            "entities": conn.execute("SELECT COUNT(*) FROM entity").fetchone()[0],
            "aliases": aliases,
            "surfaces": conn.execute("SELECT COUNT(DISTINCT text) FROM surface").fetchone()[0],
            "normalized_surfaces": keys,
        }
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
        conn.commit()
        conn.close()
        self.tmp.replace(self.path)
        return self.path

    def _postings(self, common: int) -> None:
        """Trigram → ascending surface ids, collected a bounded number of entries at a time."""
        conn = self.conn
        chunk: dict[str, array] = {}
        held = 0

        def flush() -> None:
            conn.executemany("INSERT INTO gram_part VALUES (?, ?)", ((g, a.tobytes()) for g, a in chunk.items()))
            chunk.clear()

        for key_id, key in conn.execute("SELECT id, key FROM normkey ORDER BY id"):
            for g in trigrams(key):
                chunk.setdefault(g, array("I")).append(key_id)
                held += 1
            if held >= _POSTINGS_PER_FLUSH:
                flush()
                held = 0
        if chunk:
            flush()
        merged: list[tuple[str, int, bytes | None]] = []
        current, parts = None, []
        for g, ids in conn.execute("SELECT g, ids FROM gram_part ORDER BY g, rowid"):
            if g != current and current is not None:
                merged.append(_posting_row(current, parts, common))
                parts = []
            current = g
            parts.append(ids)
            if len(merged) >= _BATCH:
                conn.executemany("INSERT INTO gram VALUES (?, ?, ?)", merged)
                merged = []
        if current is not None:
            merged.append(_posting_row(current, parts, common))
        conn.executemany("INSERT INTO gram VALUES (?, ?, ?)", merged)
        conn.execute("DELETE FROM gram_part")

    def abort(self) -> None:
        """Drop the unfinished file."""
        try:
            self.conn.close()
        finally:
            self.tmp.unlink(missing_ok=True)


def _posting_row(g: str, parts: list[bytes], common: int) -> tuple[str, int, bytes | None]:
    n = sum(len(p) for p in parts) // array("I").itemsize
    return g, n, (b"".join(parts) if n <= common else None)  # a posting the fuzzy match never reads is not kept


def _batches(rows: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


class DiskEntityIndex(SurfaceSearch):
    """An entity index in an SQLite file (see the module docstring); read-only once built.

    Args:
        path: The index file (``<store>.entities.sqlite``, from :meth:`build` or :meth:`create`).
        store: The store that 1-hop relations are read from (optional; :meth:`relations_of` needs it).

    Raises:
        UserInputError: When the file does not exist.
        DataFormatError: When it is not an entity index of this format.
    """

    def __init__(self, path: str | Path, store: Any = None) -> None:
        super().__init__()
        self.path = Path(path)
        if not self.path.is_file():
            raise UserInputError(f"no entity index file: {self.path}")
        try:
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            meta = {k: json.loads(v) for k, v in self._conn.execute("SELECT k, v FROM meta")}
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise DataFormatError(self.path, None, f"not an entity index ({exc})") from None
        if meta.get("format") != DB_FORMAT:
            raise DataFormatError(self.path, None, f"entity index format {meta.get('format')!r}, expected {DB_FORMAT}")
        self.meta = meta
        self.store = store
        self.source = str(meta.get("store", ""))
        self.build_seconds = float(meta.get("build_seconds", 0.0))
        self.max_ngram = int(meta["max_ngram"])
        self._common = int(meta["common"])
        self._lock = threading.Lock()
        self._entities: dict[str, tuple[str, int] | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        """A pickled copy (a spawned worker's) keeps the file's path and reopens it (no connection, no caches)."""
        return {"path": str(self.path), "store": self.store}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], store=state["store"])  # type: ignore[misc]

    def _rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def _entity(self, eid: str) -> tuple[str, int] | None:
        if eid not in self._entities:
            if len(self._entities) >= _CACHE:
                self._entities.clear()
            row = self._rows("SELECT name, degree FROM entity WHERE id = ?", (eid,))
            self._entities[eid] = (row[0][0], int(row[0][1])) if row else None
        return self._entities[eid]

    def __len__(self) -> int:
        return int(self.meta["entities"])

    def label(self, eid: str) -> str | None:
        """The name of an entity (``None`` when it is not indexed)."""
        item = self._entity(eid)
        return item[0] if item else None

    def degree(self, eid: str) -> int:
        """The popularity (degree) of an entity, 0 when unknown."""
        item = self._entity(eid)
        return item[1] if item else 0

    def _exact_kinds(self, surface: str) -> Mapping[str, str]:
        return dict(self._rows("SELECT id, kind FROM surface WHERE text = ?", (surface,)))

    def _normed_kinds(self, norm: str) -> Mapping[str, str]:
        sql = "SELECT n.id, n.kind FROM normkey k JOIN norm n ON n.key_id = k.id WHERE k.key = ?"
        return dict(self._rows(sql, (norm,)))

    def _posting(self, gram: str) -> Sequence[int] | None:
        row = self._rows("SELECT ids FROM gram WHERE g = ?", (gram,))
        if not row or row[0][0] is None:
            return None
        ids = array("I")
        ids.frombytes(row[0][0])
        return ids

    def _key(self, key_id: int) -> str:
        return self._rows("SELECT key FROM normkey WHERE id = ?", (key_id,))[0][0]

    @property
    def stats(self) -> dict[str, Any]:
        """Counts and build time, for reports."""
        keys = ("entities", "aliases", "surfaces", "normalized_surfaces")
        out: dict[str, Any] = {k: int(self.meta[k]) for k in keys}
        out["build_seconds"] = round(self.build_seconds, 3)
        out["file_mb"] = round(self.path.stat().st_size / 2**20, 1)
        return out

    def close(self) -> None:
        """Close the file (the index answers nothing afterwards)."""
        self._conn.close()

    # ------------------------------------------------------------------ building

    @classmethod
    def create(
        cls,
        path: str | Path,
        entities: Iterable[tuple[str, str, int]],
        aliases: Iterable[tuple[str, str]] = (),
        store: Any = None,
        source: str = "",
    ) -> DiskEntityIndex:
        """Write an index from ``(id, name, degree)`` and ``(id, alias)`` rows and open it."""
        t0 = time.perf_counter()
        writer = _Writer(Path(path))
        try:
            writer.names(entities)
            writer.aliases(aliases)
            writer.finish(source, time.perf_counter() - t0)
        except BaseException:
            writer.abort()
            raise
        return cls(path, store=store)

    @classmethod
    def build(cls, store: Any, path: str | Path) -> DiskEntityIndex:
        """Read names, aliases and degrees from a store into a new index file (see the module docstring).

        Raises:
            StoreError: When a query of an endpoint store fails.
        """
        t0 = time.perf_counter()
        source = str(getattr(store, "identity", "") or repr(store))
        writer = _Writer(Path(path))
        try:
            if (store_dir := _oxigraph_dir(store)) is not None:
                _stream_oxigraph(store_dir, writer)
            else:
                _query_endpoint(store, writer)
            writer.finish(source, time.perf_counter() - t0)
        except BaseException:
            writer.abort()
            raise
        return cls(path, store=store)


def _oxigraph_dir(store: Any) -> Path | None:
    path = getattr(store, "path", None)
    return Path(path) if path is not None and Path(path).is_dir() else None


def _stream_oxigraph(path: Path, writer: _Writer) -> None:
    """Names, aliases and per-entity edge counts from a read-only handle, in batches."""
    import pyoxigraph as ox

    handle = ox.Store.read_only(str(path))
    graph = ox.DefaultGraph()

    def labelled(relation: str) -> Iterator[tuple[str, str]]:
        for q in handle.quads_for_pattern(None, ox.NamedNode(iri(relation)), None, graph):
            if isinstance(q.subject, ox.NamedNode):
                yield local_id(q.subject.value), q.object.value

    writer.names((e, n, 0) for e, n in labelled(NAME_RELATION))
    writer.aliases(labelled(ALIAS_RELATION))
    skip = {iri(r) for r in EXCLUDED_RELATIONS}
    counts: Counter[str] = Counter()
    for q in handle.quads_for_pattern(None, None, None, graph):
        if q.predicate.value in skip:
            continue
        if isinstance(q.subject, ox.NamedNode):
            counts[q.subject.value] += 1
        if isinstance(q.object, ox.NamedNode):
            counts[q.object.value] += 1
        if len(counts) >= _DEGREE_KEYS_PER_FLUSH:
            writer.add_degrees({local_id(k): n for k, n in counts.items()})
            counts.clear()
    writer.add_degrees({local_id(k): n for k, n in counts.items()})


def _query_endpoint(store: Any, writer: _Writer) -> None:
    """The three queries of :meth:`EntityIndex.build` (:func:`~kbqa_lit.kb.index.edges.read_names`), into the file."""
    names, aliases, degrees = read_names(store)
    writer.names((e, n, 0) for e, n in names)
    writer.aliases(aliases)
    writer.add_degrees(degrees)


__all__ = ["DB_FORMAT", "DiskEntityIndex", "disk_index_path"]
