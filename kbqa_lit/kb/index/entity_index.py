"""Entity linking by surface names: candidate entities of a question, top-l (CoQ step 2a).

:class:`EntityIndex` is built from a store's ``type.object.name`` and ``common.topic.alias``
triples, with each entity's popularity (its degree: the fact triples it is subject or object of,
names/types/aliases not counted). Three kinds of match over the question's word n-grams:

- **exact**: the n-gram (outer punctuation stripped) is a name (score 1.0) or an alias (0.97);
- **normalised**: equal after :func:`normalize_surface` — casefold, accents and punctuation
  dropped, ``_`` as a space, articles (``a an the``) removed — name 0.93, alias 0.90;
- **fuzzy**: a character-trigram index proposes surfaces sharing at least half of the n-gram's
  trigrams; :func:`~kbqa_lit.kb.lf.denormalize.label_similarity` (difflib) scores them, and a
  similarity ``s >= fuzzy_threshold`` gives ``0.85 * s``.

N-grams are tried longest first; the words of an exact or normalised match are not matched again
by shorter n-grams (so ``Midnight Fever`` does not also propose ``Fever``). Text in square
brackets (MetaQA marks its topic entity so: ``what movies did [Temuera Morrison] act in``) is a
hinted mention: its matches get +0.05. Candidates are ranked by score, then mention length
(words), then popularity (degree), and the best match of each entity is kept.

The index is persisted next to the store (``<store>.entities.json``, keyed by the store's build
id) so it is built once; :meth:`EntityIndex.for_store` loads or builds it, or, for a large KB, the
on-disk form (:class:`~kbqa_lit.kb.index.entity_db.DiskEntityIndex`, ``<store>.entities.sqlite``,
same answers). The matching rules live in :class:`~kbqa_lit.kb.index.surface_search.SurfaceSearch`,
which both forms share. 1-hop relations of
candidates (either direction) come from one batched ``VALUES`` query per 100 entities and are
cached in memory (:meth:`EntityIndex.relations_of`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.index.edges import read_names, relation_edges
from kbqa_lit.kb.index.entity_db import DiskEntityIndex, disk_index_path
from kbqa_lit.kb.index.surface_search import (
    EntityCandidate,
    SurfaceSearch,
    common_posting,
    ngram_limit,
    normalize_surface,
    trigrams,
)

log = logging.getLogger(__name__)

_INDEX_FORMAT = 1


class EntityIndex(SurfaceSearch):
    """Surface names → entities, with exact, normalised and fuzzy lookup over question n-grams.

    Args:
        entities: ``{id: (name, degree)}`` of every named entity.
        aliases: ``(id, alias)`` pairs (ids without a name are ignored).
        store: The store that 1-hop relations are read from (optional; :meth:`relations_of` needs it).
        source: Where the index came from (a store identity), for reports.
        max_ngram: Longest question n-gram tried (words); default the longest surface, at most 12.
    """

    def __init__(
        self,
        entities: Mapping[str, tuple[str, int]],
        aliases: Iterable[tuple[str, str]] = (),
        store: Any = None,
        source: str = "",
        max_ngram: int | None = None,
    ) -> None:
        super().__init__()
        self.entities: dict[str, tuple[str, int]] = {e: (str(n), int(d)) for e, (n, d) in entities.items()}
        self.aliases: list[tuple[str, str]] = [(e, a) for e, a in aliases if e in self.entities and a]
        self.store = store
        self.source = source
        self.build_seconds = 0.0
        self._exact: dict[str, dict[str, str]] = defaultdict(dict)  # surface → {id: kind}
        self._normed: dict[str, dict[str, str]] = defaultdict(dict)
        for eid, (name, _) in self.entities.items():
            self._add(eid, name, "name")
        for eid, alias in self.aliases:
            self._add(eid, alias, "alias")
        self._keys = list(self._normed)
        grams: dict[str, array[int]] = defaultdict(lambda: array("I"))
        for i, key in enumerate(self._keys):
            for g in trigrams(key):
                grams[g].append(i)
        self._grams: dict[str, array[int]] = dict(grams)
        longest = max((len(k.split()) for k in self._exact), default=1)
        self.max_ngram = int(max_ngram or ngram_limit(longest))
        self._common = common_posting(len(self._keys))  # trigrams in more surfaces than this say little

    def _add(self, eid: str, surface: str, kind: str) -> None:
        surface = " ".join(surface.split())
        if not surface:
            return
        exact = self._exact[surface]
        if exact.get(eid) != "name":
            exact[eid] = kind
        norm = normalize_surface(surface)
        if norm and self._normed[norm].get(eid) != "name":
            self._normed[norm][eid] = kind

    def __len__(self) -> int:
        return len(self.entities)

    def label(self, eid: str) -> str | None:
        """The name of an entity (``None`` when it is not indexed)."""
        item = self.entities.get(eid)
        return item[0] if item else None

    def degree(self, eid: str) -> int:
        """The popularity (degree) of an entity, 0 when unknown."""
        item = self.entities.get(eid)
        return item[1] if item else 0

    def _exact_kinds(self, surface: str) -> Mapping[str, str]:
        return self._exact.get(surface, {})

    def _normed_kinds(self, norm: str) -> Mapping[str, str]:
        return self._normed.get(norm, {})

    def _posting(self, gram: str) -> Sequence[int] | None:
        posting = self._grams.get(gram)
        return posting if posting is not None and len(posting) <= self._common else None

    def _key(self, key_id: int) -> str:
        return self._keys[key_id]

    @property
    def stats(self) -> dict[str, Any]:
        """Counts and build time, for reports."""
        return {
            "entities": len(self.entities),
            "aliases": len(self.aliases),
            "surfaces": len(self._exact),
            "normalized_surfaces": len(self._keys),
            "build_seconds": round(self.build_seconds, 3),
        }

    # ------------------------------------------------------------------ building and persistence

    @classmethod
    def build(cls, store: Any) -> EntityIndex:
        """Read names, aliases and degrees from a store (three queries).

        Raises:
            StoreError: When a query fails (e.g. times out: open the store with a longer timeout).
        """
        t0 = time.perf_counter()
        names, aliases, degrees = read_names(store)
        entities: dict[str, tuple[str, int]] = {}
        for eid, name in names:
            entities.setdefault(eid, (name, degrees.get(eid, 0)))
        index = cls(entities, aliases, store=store, source=str(getattr(store, "identity", "") or repr(store)))
        index.build_seconds = time.perf_counter() - t0
        return index

    def save(self, path: str | Path) -> None:
        """Write the index as JSON (atomically)."""
        path = Path(path)
        payload = {
            "format": _INDEX_FORMAT,
            "store": self.source,
            "build_seconds": self.build_seconds,
            "entities": [[e, n, d] for e, (n, d) in self.entities.items()],
            "aliases": [list(p) for p in self.aliases],
        }
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: str | Path, store: Any = None) -> EntityIndex:
        """Read an index written by :meth:`save`.

        Raises:
            UserInputError: When the file does not exist.
            DataFormatError: When it is not an entity index.
        """
        path = Path(path)
        if not path.is_file():
            raise UserInputError(f"no entity index file: {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            entities = {e: (n, int(d)) for e, n, d in data["entities"]}
            aliases = [(e, a) for e, a in data.get("aliases", [])]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataFormatError(path, None, f"not an entity index ({exc})") from None
        index = cls(entities, aliases, store=store, source=str(data.get("store", "")))
        index.build_seconds = float(data.get("build_seconds", 0.0))
        return index

    @classmethod
    def for_store(
        cls, store: Any, path: str | Path | None = None, refresh: bool = False, backend: str | None = None
    ) -> EntityIndex | DiskEntityIndex:
        """Load the index persisted next to the store, or build and persist it (once per store build).

        Args:
            store: An opened store.
            path: The index file; default ``<store dir>.entities.json`` (in memory) or
                ``<store dir>.entities.sqlite`` (on disk) for an Oxigraph store (an endpoint store is
                indexed in memory only unless ``path`` is given).
            refresh: Rebuild even when the file exists.
            backend: ``memory`` (:class:`EntityIndex`), ``disk``
                (:class:`~kbqa_lit.kb.index.entity_db.DiskEntityIndex`: names stay in an SQLite file)
                or ``auto``: a given ``path`` decides by its suffix (``.sqlite``: disk); else disk when
                an up-to-date on-disk index exists next to the store or the store holds at least
                :data:`DISK_INDEX_TRIPLES` triples, else memory. Default: the ``KBQA_ENTITY_INDEX``
                environment variable, else ``auto``.

        Raises:
            UserInputError: When ``backend`` is none of the three.
        """
        backend = backend or os.environ.get("KBQA_ENTITY_INDEX") or "auto"
        if backend not in ("auto", "memory", "disk"):
            raise UserInputError(f"entity index backend {backend!r}: expected auto, memory or disk")
        identity = str(getattr(store, "identity", "") or repr(store))
        store_dir = getattr(store, "path", None)
        disk_file = Path(path) if path is not None else disk_index_path(store_dir) if store_dir is not None else None
        fresh, checked = None, False
        if backend == "auto" and path is not None:  # a given file decides by its suffix
            backend = "disk" if Path(path).suffix == ".sqlite" else "memory"
        elif backend == "auto":  # an up-to-date on-disk index beside the store, else the store's size
            fresh = _fresh_disk_index(disk_file, store, identity) if disk_file is not None else None
            checked = True
            backend = "disk" if fresh is not None or _store_triples(store_dir) >= DISK_INDEX_TRIPLES else "memory"
        if backend == "disk":
            if disk_file is None:
                raise UserInputError("an on-disk entity index of an endpoint store needs a file: pass path=*.sqlite")
            if not checked:
                fresh = _fresh_disk_index(disk_file, store, identity)
            if fresh is not None and not refresh:
                return fresh
            if fresh is not None:
                fresh.close()
            return DiskEntityIndex.build(store, disk_file)
        if path is None and store_dir is not None:
            path = index_cache_path(store_dir)
        if path is not None and Path(path).is_file() and not refresh:
            try:
                index = cls.load(path, store=store)
                if index.source == identity:
                    return index
            except DataFormatError as exc:
                log.warning("rebuilding the entity index: %s", exc)
        index = cls.build(store)
        if path is not None:
            try:
                index.save(path)
            except OSError as exc:
                log.warning("could not persist the entity index in %s: %s", path, exc)
        return index


#: ``backend="auto"`` keeps the entity index on disk from this many triples in the store (its manifest's count).
DISK_INDEX_TRIPLES = 5_000_000


def _store_triples(store_dir: str | Path | None) -> int:
    """The triple count in a store directory's manifest (``kbqa_store.json``); 0 when unknown."""
    if store_dir is None:
        return 0
    try:
        return int(json.loads((Path(store_dir) / "kbqa_store.json").read_text(encoding="utf-8")).get("triples", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def _fresh_disk_index(path: Path, store: Any, identity: str) -> DiskEntityIndex | None:
    """The on-disk index at ``path`` when it was built from this store; ``None`` when absent, stale or damaged."""
    if not path.is_file():
        return None
    try:
        index = DiskEntityIndex(path, store=store)
    except DataFormatError as exc:
        log.warning("not using the on-disk entity index: %s", exc)
        return None
    if index.source == identity:
        return index
    index.close()
    return None


def index_cache_path(store_path: str | Path) -> Path:
    """The file next to a store directory that persists its entity index: ``<store>.entities.json``."""
    p = Path(store_path)
    return p.with_name(p.name + ".entities.json")


__all__ = [
    "DISK_INDEX_TRIPLES",
    "DiskEntityIndex",
    "EntityCandidate",
    "EntityIndex",
    "index_cache_path",
    "normalize_surface",
    "relation_edges",
    "trigrams",
]
