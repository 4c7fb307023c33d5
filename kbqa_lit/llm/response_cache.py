"""On-disk cache of raw model outputs for decomposition (sqlite3 in WAL mode).

The key is (backend identity, prompt text): the identity (see
:attr:`~kbqa_lit.llm.backends.DecompositionBackend.identity`) names the backend kind, the
model and every generation setting, so changing any of them misses the cache, while the same
prompt to the same model with the same settings is computed once — across runs, datasets and
variants (``full`` and ``placeholders`` share outputs). Only successful outputs are stored; failed
requests are retried by the next run. Several processes may read and write one cache file.

A damaged file is never read as valid: each row keeps the SHA-256 of its output (a row whose output
no longer matches is a miss: the prompt is sent again and the row rewritten, with one warning), and
a file SQLite finds malformed is refused with a one-line :class:`~kbqa_lit.errors.UserInputError`.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kbqa_lit.errors import UserInputError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outputs (
    backend TEXT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    prompt TEXT NOT NULL,
    output TEXT NOT NULL,
    created REAL NOT NULL,
    output_sha256 TEXT,
    PRIMARY KEY (backend, prompt_sha256)
)
"""
log = logging.getLogger(__name__)

_CHUNK = 500  # keys per SELECT (below SQLite's variable limit)


def prompt_key(prompt: str) -> str:
    """SHA-256 hex digest of a prompt (the stored key; the prompt text is kept next to it)."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


class DecompositionCache:
    """sqlite3 cache of ``(backend identity, prompt) → raw model output``.

    Args:
        path: The database file (created with its folder when missing).
        timeout: Seconds to wait for another process's write lock.

    Attributes:
        hits: Prompts answered from the cache by :meth:`get_many` since opening.
        misses: Prompts not found by :meth:`get_many` since opening.
    """

    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=timeout, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._add_checksums()
            self._conn.commit()
        except (OSError, sqlite3.Error) as exc:
            raise UserInputError(f"cannot open the decomposition cache {self.path}: {exc}") from None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._bad_rows = 0

    def _add_checksums(self) -> None:
        """Give a cache written before rows had checksums its column, filled from the outputs as they are."""
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(outputs)")}
        if "output_sha256" in columns:
            return
        self._conn.create_function("kbqa_sha256", 1, prompt_key, deterministic=True)
        try:
            self._conn.execute("ALTER TABLE outputs ADD COLUMN output_sha256 TEXT")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):  # another process added it first
                raise
        self._conn.execute("UPDATE outputs SET output_sha256 = kbqa_sha256(output) WHERE output_sha256 IS NULL")

    def _damaged(self, exc: sqlite3.DatabaseError) -> UserInputError:
        """The one-line error of a file SQLite found malformed."""
        return UserInputError(f"the decomposition cache {self.path} is damaged ({exc}); delete it to start anew")

    def get_many(self, backend: str, prompts: Sequence[str]) -> dict[str, str]:
        """Return ``{prompt: output}`` for the prompts found under ``backend`` (counts hits and misses).

        Raises:
            UserInputError: When SQLite finds the file malformed (one line naming it).
        """
        keys = {prompt_key(p): p for p in prompts}
        found: dict[str, str] = {}
        key_list = list(keys)
        with self._lock:
            for i in range(0, len(key_list), _CHUNK):
                chunk = key_list[i : i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                try:
                    rows = self._conn.execute(
                        f"SELECT prompt_sha256, output, output_sha256 FROM outputs "
                        f"WHERE backend = ? AND prompt_sha256 IN ({marks})",
                        (backend, *chunk),
                    ).fetchall()
                except sqlite3.DatabaseError as exc:
                    if isinstance(exc, sqlite3.OperationalError):
                        raise
                    raise self._damaged(exc) from None
                for key, output, digest in rows:
                    if digest != prompt_key(output):
                        if self._bad_rows == 0:
                            log.warning("decomposition cache %s: an output failed its checksum; asked again", self.path)
                        self._bad_rows += 1
                        continue
                    found[keys[key]] = output
        hit_count = sum(1 for p in prompts if p in found)
        self.hits += hit_count
        self.misses += len(prompts) - hit_count
        return found

    def get(self, backend: str, prompt: str) -> str | None:
        """The cached output of one prompt, or ``None``."""
        return self.get_many(backend, [prompt]).get(prompt)

    def put_many(self, backend: str, outputs: Mapping[str, str] | Iterable[tuple[str, str]]) -> int:
        """Store ``prompt → output`` pairs under ``backend`` in one transaction; return how many."""
        items = list(outputs.items() if isinstance(outputs, Mapping) else outputs)
        now = time.time()
        rows = [(backend, prompt_key(p), p, out, now, prompt_key(out)) for p, out in items]
        try:
            with self._lock, self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO outputs (backend, prompt_sha256, prompt, output, created, output_sha256) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise
            raise self._damaged(exc) from None
        return len(rows)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM outputs").fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> DecompositionCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DecompositionCache", "prompt_key"]
