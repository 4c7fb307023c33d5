"""Caches of query execution results: an in-process LRU and a shared on-disk SQLite cache.

Stores (:mod:`kbqa_lit.kb.store`) look a query up in the in-memory :class:`LRUCache` first,
then in the optional :class:`ExecutionCache` on disk, and execute it only when both miss. The
disk cache is meant to be shared by every process of a run (DDP ranks, dataloader workers,
evaluation jobs) that queries the same knowledge base, so it is SQLite in WAL mode with a busy
timeout and a retry loop on ``database is locked``.

What is cached: successful results and *definitive* errors (the query does not parse, the query
form is unsupported) — executing them again would give the same answer. Timeouts and
unreachable-endpoint errors are never cached: they depend on the moment, not on the query.

A damaged file is never read as valid: each row carries a checksum of its key and content (a row
that fails it, or predates it, is a miss and is run again); a file SQLite reports as malformed
is refused when opened (:class:`~kbqa_lit.errors.StoreError`) or, when the damage shows later,
left alone for the rest of the run; both are reported in one line naming the file.

A full disk (SQLite's ``database or disk is full``) is not damage: the transaction is rolled back,
one warning names the file, and this object stores nothing more for the rest of the run while its
lookups go on; the rows already stored stay valid, and a later run with room stores again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kbqa_lit.errors import StoreError

if TYPE_CHECKING:
    from kbqa_lit.kb.store.result import ExecutionResult

T = TypeVar("T")

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key BLOB NOT NULL UNIQUE,
    store TEXT NOT NULL,
    answers TEXT NOT NULL,
    ok INTEGER NOT NULL,
    error TEXT,
    created REAL NOT NULL,
    digest BLOB
)
"""


#: Free space under which a cache that cannot be opened is reported as short of room.
_LOW_ROOM = 1 << 20


def _free_bytes(folder: Path) -> int | None:
    """Bytes an unprivileged process may still write under ``folder``, or ``None`` when unknown."""
    try:
        stats = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return stats.f_bavail * stats.f_frsize


class LRUCache:
    """A thread-safe least-recently-used map with a fixed capacity and hit/miss counters.

    Args:
        capacity: Maximum number of entries; ``0`` disables the cache (every lookup misses).

    Attributes:
        hits: Lookups that found an entry.
        misses: Lookups that did not.

    """

    def __init__(self, capacity: int = 100_000) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> object | None:
        """Return the entry of ``key`` (marking it recently used), or ``None``."""
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: str, value: object) -> None:
        """Insert or refresh ``key``, evicting the least recently used entry when full."""
        if self.capacity == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (the counters are kept)."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class ExecutionCache:
    """A persistent, multi-process-safe cache of execution results in one SQLite file.

    Entries are keyed by ``(store identity, query text)``, so one file can serve several
    knowledge bases. The file is in WAL mode (readers never block the writer); a busy timeout
    and a bounded retry loop absorb lock contention between processes. When the table grows
    past ``max_entries``, the oldest entries (by insertion) are deleted; the check runs every
    ``max(1, min(1000, max_entries // 100))`` writes of a process, so the table may exceed the
    bound by that many rows per writer in between.

    The object may be used from several threads (one connection behind a lock) and survives a
    ``fork`` (a child opens its own connection).

    Args:
        path: The SQLite file; its parent directory is created when missing.
        max_entries: Size bound of the table.
        busy_timeout: Seconds SQLite waits for a lock before reporting ``database is locked``.
        retries: Extra attempts (with exponential back-off) after a locked/busy error.

    Attributes:
        hits: Lookups of this object that found an entry.
        misses: Lookups of this object that did not.
        broken: Why the file is no longer used (SQLite found it malformed during the run), else ``None``.
        full: Why nothing more is stored (the disk was full during the run), else ``None``.

    Raises:
        StoreError: When the file cannot be opened, is not a cache database or is malformed.

    """

    def __init__(
        self,
        path: str | Path,
        max_entries: int = 1_000_000,
        busy_timeout: float = 30.0,
        retries: int = 8,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.path = Path(path)
        self.max_entries = max_entries
        self.busy_timeout = busy_timeout
        self.retries = retries
        self.hits = 0
        self.misses = 0
        self._evict_every = max(1, min(1000, max_entries // 100))
        self._writes = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self.broken: str | None = None
        self.full: str | None = None
        self._bad_rows = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._with_retry(lambda conn: None)
        except (sqlite3.Error, OSError) as exc:
            hint = "" if isinstance(exc, sqlite3.OperationalError) else " (delete it to start an empty cache)"
            free = _free_bytes(self.path.parent)
            if free is not None and free < _LOW_ROOM:  # SQLite says "disk I/O error" when it cannot map its -shm file
                hint = f" (the disk holding it has {free // 1024} KiB free)"
            raise StoreError(f"cannot open execution cache {self.path}: {exc}{hint}") from None

    # -- connection handling -------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"could not switch to WAL mode (got {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
            if "digest" not in columns:  # a cache written before rows had checksums: its rows miss
                try:
                    conn.execute("ALTER TABLE results ADD COLUMN digest BLOB")
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc):  # another process added it first
                        raise
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _with_retry(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        delay = 0.01
        for attempt in range(self.retries + 1):
            try:
                with self._lock:
                    return fn(self._connect())
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if attempt == self.retries or ("locked" not in text and "busy" not in text):
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _key(store: str, query: str) -> bytes:
        return hashlib.blake2b(f"{store}\x00{query}".encode(), digest_size=20).digest()

    @staticmethod
    def _digest(key: bytes, answers: str, ok: int, error: str | None) -> bytes:
        """Checksum of a row: its key and everything a lookup returns."""
        text = json.dumps([answers, ok, error], ensure_ascii=False)
        return hashlib.blake2b(key + text.encode("utf-8"), digest_size=16).digest()

    def _out_of_room(self, exc: sqlite3.DatabaseError) -> bool:
        """Whether ``exc`` is SQLite's full-disk error; if so, stop storing for the rest of the run (one warning)."""
        if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_FULL and "disk is full" not in str(exc):
            return False
        if self.full is None:
            self.full = f"execution cache {self.path} cannot grow ({exc})"
            log.warning("%s; results are no longer stored in this run (stored ones are still used)", self.full)
        return True

    def _damaged(self, exc: sqlite3.DatabaseError) -> None:
        """Stop using a file SQLite found malformed (lock errors are not damage: they are raised)."""
        if isinstance(exc, sqlite3.OperationalError):
            raise exc
        if self.broken is None:
            self.broken = f"execution cache {self.path} is damaged ({exc}); not used for the rest of this run"
            log.warning("%s (delete it to start an empty cache)", self.broken)

    # -- public API ------------------------------------------------------------------------
    def get(self, store: str, query: str) -> tuple[list[str], bool, str | None] | None:
        """Look up a query.

        Args:
            store: Identity string of the knowledge base (see ``identity`` on the stores).
            query: The exact SPARQL text.

        Returns:
            ``(answers, ok, error)`` when cached, else ``None``.

        """
        key = self._key(store, query)
        row = None
        if self.broken is None:
            try:
                row = self._with_retry(
                    lambda conn: conn.execute(
                        "SELECT answers, ok, error, digest FROM results WHERE key = ?", (key,)
                    ).fetchone()
                )
            except sqlite3.DatabaseError as exc:
                self._damaged(exc)
        if row is not None and row[3] != self._digest(key, row[0], row[1], row[2]):
            if row[3] is not None and self._bad_rows == 0:
                log.warning("execution cache %s: an entry failed its checksum; its query is run again", self.path)
            self._bad_rows += row[3] is not None
            row = None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return list(json.loads(row[0])), bool(row[1]), row[2]

    def put(self, store: str, query: str, result: ExecutionResult, *, definitive: bool = False) -> bool:
        """Remember a result when it is worth remembering.

        Args:
            store: Identity string of the knowledge base.
            query: The exact SPARQL text.
            result: The result to store.
            definitive: For a failed result, whether the failure is a property of the query
                (a syntax error) rather than of the moment (timeout, unreachable endpoint).

        Returns:
            Whether the result was written (ok results and definitive errors, while the file is usable
            and has room).

        """
        if (not result.ok and not definitive) or self.broken is not None or self.full is not None:
            return False
        key = self._key(store, query)
        payload = json.dumps(result.answers, ensure_ascii=False)
        digest = self._digest(key, payload, int(result.ok), result.error)
        row = (key, store, payload, int(result.ok), result.error, time.time(), digest)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO results (key, store, answers, ok, error, created, digest) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                row,
            )

        try:
            self._with_retry(write)
        except sqlite3.DatabaseError as exc:
            if not self._out_of_room(exc):
                self._damaged(exc)
            return False
        self._writes += 1
        if self._writes % self._evict_every == 0:
            try:
                self.evict()
            except sqlite3.DatabaseError as exc:
                if not self._out_of_room(exc):
                    raise
        return True

    def evict(self) -> int:
        """Delete the oldest entries beyond ``max_entries``; return how many were deleted."""

        def run(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "DELETE FROM results WHERE id IN (SELECT id FROM results ORDER BY id LIMIT "
                "max(0, (SELECT count(*) FROM results) - ?))",
                (self.max_entries,),
            )
            return cur.rowcount

        return int(self._with_retry(run))

    def __len__(self) -> int:
        return int(self._with_retry(lambda conn: conn.execute("SELECT count(*) FROM results").fetchone()[0]))

    def clear(self, store: str | None = None) -> None:
        """Delete every entry, or only those of one store identity."""
        if store is None:
            self._with_retry(lambda conn: conn.execute("DELETE FROM results"))
        else:
            self._with_retry(lambda conn: conn.execute("DELETE FROM results WHERE store = ?", (store,)))

    def close(self) -> None:
        """Close this process's connection (it is reopened on the next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state["_conn"], state["_pid"], state["_lock"] = None, -1, None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ExecutionCache({str(self.path)!r}, max_entries={self.max_entries})"
