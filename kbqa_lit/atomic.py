"""Atomic file writes: a temporary file in the target's folder, renamed over the target when complete.

A reader never sees a half-written file: a crash or an error leaves the old file (or none) and
removes the temporary one. Importable from every floor, like :mod:`kbqa_lit.errors`.

- :func:`atomic_writer` — a context manager that yields the open temporary file;
- :func:`write_text_atomic`, :func:`write_json_atomic`, :func:`write_jsonl_atomic` — one call each.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_writer(path: str | Path) -> Iterator[IO[str]]:
    """Yield a text file that replaces ``path`` when the ``with`` block ends without an error.

    The parent folder is created. The temporary file (``.<name>.<random>.tmp`` beside ``path``) is
    removed when the block raises; ``path`` is then left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; return the path."""
    with atomic_writer(path) as handle:
        handle.write(text)
    return Path(path)


def write_json_atomic(path: str | Path, payload: Any, indent: int | None = 2) -> Path:
    """Write ``payload`` as one JSON document (values JSON lacks as ``str``) to ``path`` atomically."""
    with atomic_writer(path) as handle:
        json.dump(payload, handle, ensure_ascii=False, indent=indent, default=str)
        handle.write("\n")
    return Path(path)


def write_jsonl_atomic(rows: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write ``rows`` as JSON lines to ``path`` atomically; return how many."""
    n = 0
    with atomic_writer(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


__all__ = ["atomic_writer", "write_json_atomic", "write_jsonl_atomic", "write_text_atomic"]
