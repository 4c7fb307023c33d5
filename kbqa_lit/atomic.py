"""Atomic file writes: a temporary file in the target's folder, renamed over the target when complete.

A reader never sees a half-written file: a crash or an error leaves the old file (or none) and
removes the temporary one. A write the operating system refuses (a full disk, a quota, a file-size
limit) raises :class:`~kbqa_lit.errors.FileWriteError` naming the target, which the ``kbqa`` command
prints in one line. Importable from every floor, like :mod:`kbqa_lit.errors`.

- :func:`atomic_writer` (text), :func:`atomic_binary_writer` — context managers that yield the open temporary file;
- :func:`write_text_atomic`, :func:`write_json_atomic`, :func:`write_jsonl_atomic` — one call each.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from kbqa_lit.errors import FileWriteError

#: What a failed atomic write leaves, for the message.
KEPT = "nothing was written to it; a previous version, if any, is as it was"


class _TargetFile(io.FileIO):
    """The temporary file's raw stream, whose failed writes name the target file (not the temporary one)."""

    def __init__(self, fd: int, target: Path) -> None:
        super().__init__(fd, "w")
        self.target = target

    def write(self, data: Any) -> int | None:
        """Write bytes; an :class:`OSError` (``ENOSPC``, ``EFBIG``, ``EDQUOT``...) becomes a :class:`FileWriteError`."""
        try:
            return super().write(data)
        except FileWriteError:
            raise
        except OSError as exc:
            raise FileWriteError(self.target, exc, KEPT) from exc


def _umask() -> int:
    """The process's umask (read from ``/proc`` where it can be, so no thread sees it changed)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_binary_writer(path: str | Path) -> Iterator[IO[bytes]]:
    """Yield a binary file that replaces ``path`` when the ``with`` block ends without an error.

    The parent folder is created. The temporary file (``.<name>.<random>.tmp`` beside ``path``, so
    the rename never crosses file systems) is removed when the block raises; ``path`` is then left
    as it was. The file gets the permissions ``open()`` would give it (``0o666`` less the umask).

    Raises:
        FileWriteError: When the folder, the temporary file or a write to it is refused (disk full,
            quota, file-size limit, read-only folder), or the rename fails; the message names ``path``.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise FileWriteError(target, exc, KEPT) from exc
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # what open() gives (mkstemp's file is private to its owner)
    except OSError:
        pass
    try:
        with io.BufferedWriter(_TargetFile(fd, target)) as handle:
            yield handle
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise FileWriteError(target, exc, KEPT) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_writer(path: str | Path) -> Iterator[IO[str]]:
    """Yield a UTF-8 text file that replaces ``path`` when the ``with`` block ends without an error.

    The text form of :func:`atomic_binary_writer` (same folder, temporary file and errors).

    Raises:
        FileWriteError: When a write or the rename is refused; the message names ``path``.
    """
    with atomic_binary_writer(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as handle:
        yield handle


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


__all__ = [
    "KEPT",
    "atomic_binary_writer",
    "atomic_writer",
    "write_json_atomic",
    "write_jsonl_atomic",
    "write_text_atomic",
]
