"""Turn triple files into N-Triples and bulk-load them into a new on-disk Oxigraph store.

Formats (``fmt``):

- ``nt``: N-Triples, loaded as is.
- ``tsv``: GrailQA's mini-KB, ``subject<TAB>relation<TAB>object``. Subjects are ``m.*``/``g.*``
  entities; an object is a class id when the relation is ``type.object.type``, an English name
  (``"..."@en``) when it is ``type.object.name``, a typed literal when written
  ``value^^<datatype IRI>`` (angle brackets optional), an entity when it is an ``m.*``/``g.*``
  id, a literal when written ``"text"@lang``, and otherwise a plain string literal.
- ``metaqa``: ``head|relation|tail`` (MetaQA's ``kb.txt``).
- ``pathquestion``: ``subject<TAB>relation<TAB>object`` (PathQuestion's ``2H-kb.txt``/``3H-kb.txt``).

For ``metaqa`` and ``pathquestion`` every head and tail becomes an entity
``entity_id_for_name(name, dataset)`` with a ``type.object.name`` triple (``display_name``,
``@en``), and the relation becomes ``relation_id_for(rel, dataset)``. Every IRI is under
``http://rdf.freebase.com/ns/``. Lines are streamed from the files straight into Oxigraph's bulk
loader; a malformed line raises :class:`~kbqa_lit.errors.DataFormatError` naming file and line
(blank lines are skipped). The store is built in a temporary sibling directory and renamed into
place at the end, so a failed build leaves nothing behind.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, StoreError, UserInputError, check_choice
from kbqa_lit.kb.lf.iri import (
    NAME_RELATION,
    TYPE_RELATION,
    display_name,
    entity_id_for_name,
    is_entity_id,
    relation_id_for,
)
from kbqa_lit.kb.lf.terms import fb_iri, literal_nt
from kbqa_lit.kb.store.oxigraph_runner import STORE_MARKER

FORMATS = ("nt", "tsv", "metaqa", "pathquestion")

_ABS_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20<>\"{}|^`\\]+$")
_LANG_LITERAL = re.compile(r'^"(.*)"@([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*)$', re.DOTALL)


def _split(line: str, sep: str, path: Path, lineno: int) -> tuple[str, str, str]:
    parts = line.split(sep)
    if len(parts) != 3:
        shown = "TAB" if sep == "\t" else repr(sep)
        raise DataFormatError(path, lineno, f"expected 3 fields separated by {shown}, got {len(parts)}")
    if not all(parts):
        raise DataFormatError(path, lineno, "empty field")
    return parts[0], parts[1], parts[2]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text without the line terminator)`` of non-blank lines."""
    with path.open(encoding="utf-8", newline="") as fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline()
            except UnicodeDecodeError as exc:
                raise DataFormatError(path, lineno + 1, f"not UTF-8 ({exc.reason})") from None
            if not raw:
                return
            lineno += 1
            line = raw.rstrip("\r\n")
            if line.strip():
                yield lineno, line


def _tsv_object(rel: str, obj: str) -> str:
    if rel == NAME_RELATION:
        m = _LANG_LITERAL.match(obj)
        return literal_nt(m.group(1), lang=m.group(2)) if m else literal_nt(obj, lang="en")
    if rel == TYPE_RELATION:
        return fb_iri(obj)
    value, sep, dtype = obj.rpartition("^^")
    if sep:
        dtype = dtype[1:-1] if dtype.startswith("<") and dtype.endswith(">") else dtype
        if _ABS_IRI.match(dtype):
            return literal_nt(value, datatype=dtype)
    if is_entity_id(obj):
        return fb_iri(obj)
    m = _LANG_LITERAL.match(obj)
    if m:
        return literal_nt(m.group(1), lang=m.group(2))
    return literal_nt(obj)


def _tsv_lines(path: Path) -> Iterator[str]:
    for lineno, line in _lines(path):
        subj, rel, obj = _split(line, "\t", path, lineno)
        if not is_entity_id(subj):
            raise DataFormatError(path, lineno, f"subject {subj!r} is not an m.*/g.* entity id")
        try:
            yield f"{fb_iri(subj)} {fb_iri(rel)} {_tsv_object(rel, obj)} .\n"
        except ValueError as exc:
            raise DataFormatError(path, lineno, str(exc)) from None


def _named_lines(path: Path, dataset: str, sep: str, seen: set[str]) -> Iterator[str]:
    """Lines of a bare-name KB (MetaQA, PathQuestion); ``seen`` holds entities already named."""
    name_iri = fb_iri(NAME_RELATION)
    for lineno, line in _lines(path):
        head, rel, tail = _split(line, sep, path, lineno)
        try:
            rel_iri = fb_iri(relation_id_for(rel, dataset))
        except ValueError as exc:
            raise DataFormatError(path, lineno, f"bad relation {rel!r}: {exc}") from None
        ends = []
        for name in (head, tail):
            ent = entity_id_for_name(name, dataset)
            ends.append(fb_iri(ent))
            if ent not in seen:
                seen.add(ent)
                yield f"{ends[-1]} {name_iri} {literal_nt(display_name(name, dataset), lang='en')} .\n"
        yield f"{ends[0]} {rel_iri} {ends[1]} .\n"


def iter_ntriples(files: Sequence[str | Path], fmt: str) -> Iterator[str]:
    """Yield the N-Triples lines (with newline) of triple files in a supported format.

    Args:
        files: Input files, read in order.
        fmt: One of :data:`FORMATS`.

    Yields:
        One N-Triples statement per line; name triples of a bare-name KB are emitted once.

    Raises:
        DataFormatError: For a malformed line (naming file and line).
        UserInputError: For an unknown format or a missing file.

    """
    check_choice("triple format", fmt, FORMATS)
    seen: set[str] = set()
    for name in files:
        path = Path(name)
        if not path.is_file():
            raise UserInputError(f"no such file: {path}")
        if fmt == "nt":
            for _, line in _lines(path):
                yield line + "\n"
        elif fmt == "tsv":
            yield from _tsv_lines(path)
        else:
            yield from _named_lines(path, fmt, "|" if fmt == "metaqa" else "\t", seen)


def write_ntriples(files: Sequence[str | Path], fmt: str, out: str | Path) -> int:
    """Write the N-Triples of ``files`` to ``out``; return the number of lines written."""
    n = 0
    with Path(out).open("w", encoding="utf-8") as fh:
        for line in iter_ntriples(files, fmt):
            fh.write(line)
            n += 1
    return n


class _LineStream(io.RawIOBase):
    """A binary file over an iterator of text lines (what pyoxigraph's bulk loader reads)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(lines)
        self._pending = b""
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        while len(self._pending) < size:
            chunk = [line.encode("utf-8") for line in _take(self._lines, 512)]
            if not chunk:
                break
            self.count += len(chunk)
            self._pending += b"".join(chunk)
        data, self._pending = self._pending[:size], self._pending[size:]
        buffer[: len(data)] = data
        return len(data)


def _take(it: Iterator[str], n: int) -> list[str]:
    out = []
    for line in it:
        out.append(line)
        if len(out) >= n:
            break
    return out


def _looks_like_store(path: Path) -> bool:
    return (path / STORE_MARKER).is_file() or (path / "CURRENT").is_file()


def build_lock_path(out: str | Path) -> Path:
    """The lock file that one build of the store ``out`` holds (``kbqa kb build``, and building on first use)."""
    out = Path(out).expanduser()
    return out.parent / f".{out.name}.build.lock"


def exclusive_build(out: str | Path) -> AbstractContextManager[Any]:
    """Hold the build lock of ``out`` for a ``with`` block, or fail at once when another build holds it.

    Raises:
        StoreError: When another process is building the same store (naming the store and the lock).
    """
    from filelock import FileLock, Timeout

    lock_path = build_lock_path(out)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return FileLock(str(lock_path)).acquire(timeout=0)  # released when the ``with`` block ends
    except Timeout:
        raise StoreError(
            f"another build of {out} is running (it holds {lock_path}); wait for it to finish, or build another store"
        ) from None


def build_store(
    out_dir: str | Path, files: Sequence[str | Path], fmt: str, *, overwrite: bool = False
) -> dict[str, Any]:
    """Build a new on-disk Oxigraph store from triple files.

    Args:
        out_dir: The store directory to create.
        files: The input files (all in one format).
        fmt: ``"nt"``, ``"tsv"``, ``"metaqa"`` or ``"pathquestion"``.
        overwrite: Replace an existing store at ``out_dir`` (only a directory that holds an
            Oxigraph store, or an empty one, is ever replaced).

    Returns:
        Statistics: ``store`` (path), ``format``, ``files``, ``statements`` (N-Triples lines
        loaded), ``triples`` (distinct triples in the store), ``seconds``, ``build_id``.

    Raises:
        StoreError: When ``out_dir`` exists and may not be replaced.
        DataFormatError: For a malformed input line.
        UserInputError: For an unknown format, no input files or a missing file.

    """
    import pyoxigraph

    start = time.perf_counter()
    out = Path(out_dir).expanduser()
    check_choice("triple format", fmt, FORMATS)
    if not files:
        raise UserInputError("no input files")
    for name in files:
        if not Path(name).is_file():
            raise UserInputError(f"no such file: {name}")
    if out.exists():
        if not out.is_dir():
            raise StoreError(f"{out} exists and is not a directory")
        if any(out.iterdir()):
            if not overwrite:
                raise StoreError(f"{out} exists and is not empty; pass overwrite=True (--overwrite) to replace it")
            if not _looks_like_store(out):
                raise StoreError(f"refusing to overwrite {out}: it is not empty and does not hold an Oxigraph store")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.building-{uuid.uuid4().hex[:8]}")
    store = None
    try:
        store = pyoxigraph.Store(str(tmp))
        if fmt == "nt":
            statements = 0
            for name in files:
                try:
                    store.bulk_load(path=str(name), format=pyoxigraph.RdfFormat.N_TRIPLES)
                except SyntaxError as exc:
                    m = re.search(r"at line (\d+)", str(exc))
                    where = int(m.group(1)) if m else None
                    raise DataFormatError(name, where, f"invalid N-Triples: {exc}") from None
                with open(name, "rb") as fh:
                    statements += sum(1 for line in fh if line.strip() and not line.lstrip().startswith(b"#"))
        else:
            stream = _LineStream(iter_ntriples(files, fmt))
            try:
                store.bulk_load(input=stream, format=pyoxigraph.RdfFormat.N_TRIPLES)
            except SyntaxError as exc:  # a converter bug, not the user's file
                raise StoreError(f"internal error: generated N-Triples do not parse: {exc}") from None
            statements = stream.count
        store.flush()
        triples = len(store)
        store = None  # closes the RocksDB handle before the directory is renamed
        stats: dict[str, Any] = {
            "store": str(out),
            "format": fmt,
            "files": [str(f) for f in files],
            "statements": statements,
            "triples": triples,
            "build_id": uuid.uuid4().hex,
        }
        stats["seconds"] = round(time.perf_counter() - start, 3)
        (tmp / STORE_MARKER).write_text(json.dumps(stats, indent=1), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        store = None
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return stats


def ensure_store(spec: str | Path, files: Sequence[str | Path], fmt: str = "nt") -> bool:
    """Build the embedded store ``spec`` from ``files`` unless it already holds one.

    Safe when several processes (DDP ranks, parallel ``kbqa`` runs) ask at once: the first one
    builds under a file lock beside the store, the others wait and find the store built. An
    endpoint URL (see :func:`~kbqa_lit.kb.store.is_endpoint`) is left alone.

    Args:
        spec: The store directory (or an endpoint URL: nothing to do).
        files: Triple files to build it from.
        fmt: Their format (see :func:`build_store`).

    Returns:
        Whether this call built the store.

    Raises:
        UserInputError: When the store is missing and a file to build it from is missing.

    """
    from filelock import FileLock

    from kbqa_lit.kb.store.base import is_endpoint

    if is_endpoint(spec):
        return False
    out = Path(spec).expanduser()
    if _looks_like_store(out):
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(build_lock_path(out))):
        if _looks_like_store(out):
            return False
        build_store(out, files, fmt, overwrite=True)
    return True
