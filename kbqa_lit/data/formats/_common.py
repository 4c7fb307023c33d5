"""Helpers shared by the dataset readers: locating input files, loading JSON records, checking fields.

Every reader reports a bad record as :class:`~kbqa_lit.errors.DataFormatError` naming the file and
where the record is: a 1-based line number for line-oriented files (JSON lines, text) and
``"record N"`` (0-based index) for records inside one JSON document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import DataFormatError, UserInputError

#: Where a record sits in its file: a 1-based line number or ``"record N"``.
Where = int | str

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}


def existing_file(path: str | Path, what: str = "input file") -> Path:
    """Return ``path`` as a :class:`Path` after checking that it is a file.

    Raises:
        UserInputError: When ``path`` does not exist or is not a file.

    """
    p = Path(path)
    if not p.exists():
        raise UserInputError(f"no such {what}: {p}")
    if not p.is_file():
        raise UserInputError(f"the {what} must be a file, got a directory: {p}")
    return p


def _type_name(types: type | tuple[type, ...]) -> str:
    seq = types if isinstance(types, tuple) else (types,)
    return " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in seq)


def get_field(
    record: Mapping[str, Any],
    key: str,
    types: type | tuple[type, ...],
    path: Path,
    where: Where,
    *,
    required: bool = True,
    default: Any = None,
) -> Any:
    """Return ``record[key]`` after checking its type.

    A missing key, or a ``null`` value, is an error when ``required`` and gives ``default``
    otherwise. Booleans never pass as integers.

    Raises:
        DataFormatError: Naming ``path`` and ``where`` when the field is missing or mistyped.

    """
    value = record.get(key)
    if value is None:
        if required:
            raise DataFormatError(path, where, f"missing required field {key!r}")
        return default
    seq = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in seq or not isinstance(value, seq):
        raise DataFormatError(path, where, f"field {key!r} must be {_type_name(types)}, got {type(value).__name__}")
    return value


def require_object(record: Any, path: Path, where: Where) -> Mapping[str, Any]:
    """Return ``record`` when it is a JSON object.

    Raises:
        DataFormatError: When it is not.

    """
    if not isinstance(record, Mapping):
        raise DataFormatError(path, where, f"a record must be a JSON object, got {type(record).__name__}")
    return record


def null_to_none(value: str | None) -> str | None:
    """Map the string ``"null"`` and the empty string (used for a missing S-expression) to ``None``."""
    if value is None or value.strip() in ("", "null"):
        return None
    return value


def dedupe_answers(answers: Sequence[Answer]) -> list[Answer]:
    """Drop repeated answers (same ``id`` and ``kind``), keeping the first of each in order."""
    seen: set[tuple[str, str]] = set()
    out: list[Answer] = []
    for ans in answers:
        key = (ans.id, ans.kind)
        if key not in seen:
            seen.add(key)
            out.append(ans)
    return out


def _load_document(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, f"not UTF-8 text ({exc.reason})") from None


def _first_char(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as fh:
        while chunk := fh.read(4096):
            stripped = chunk.lstrip()
            if stripped:
                return stripped[0]
    return ""


def iter_json_records(path: Path, container_key: str | None = None) -> Iterator[tuple[Where, Any]]:
    """Yield ``(where, record)`` for each record of a JSON list, JSON-lines file or wrapped document.

    Accepted layouts: a JSON list of records (``where`` is ``"record N"``); a JSON object holding
    the list under ``container_key`` (e.g. WebQSP's ``{"Questions": [...]}``, ``where`` is
    ``"record N"``); JSON lines, one record per line (``where`` is the 1-based line number),
    streamed without loading the whole file.

    Raises:
        DataFormatError: When the file is not valid JSON / JSON lines, or the document is not a
            list (or an object with ``container_key`` holding a list).

    """
    first = _first_char(path)
    if first == "":
        return
    if first == "[":
        doc = _load_document(path)
        yield from _records_of(doc, path, container_key)
        return
    if first != "{":
        raise DataFormatError(path, 1, "expected a JSON list, a JSON object or JSON lines")
    with path.open(encoding="utf-8") as fh:
        lines = enumerate(fh, 1)
        for _lineno, line in lines:
            if line.strip():
                break
        else:  # pragma: no cover - _first_char saw content
            return
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            obj = None  # a pretty-printed document: load it whole below
        if obj is None or (container_key is not None and container_key in obj):
            doc = _load_document(path)
            yield from _records_of(doc, path, container_key)
            return
        yield _lineno, obj
        for lineno, line in lines:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(path, lineno, f"not valid JSON ({exc.msg})") from None
            yield lineno, obj


def read_json_examples(
    path: str | Path,
    what: str,
    example: Callable[[Mapping[str, Any], Path, Where], KBQAExample],
    container_key: str | None = None,
) -> Iterator[KBQAExample]:
    """Stream the examples of a JSON list / JSON-lines file, one per record (see :func:`iter_json_records`).

    Args:
        path: The dataset file.
        what: What the file is, for the error when it is missing (``"CWQ file"``).
        example: Builds the example of one record (``record``, ``path``, ``where``).
        container_key: The key holding the records in a wrapped document.

    Returns:
        An iterator of examples, one per record, in file order.

    Raises:
        UserInputError: When ``path`` is not a file (raised at once).
        DataFormatError: While iterating, naming the file and record of the first bad record
            (a record that is not a JSON object included).
    """
    p = existing_file(path, what)
    return (example(require_object(raw, p, where), p, where) for where, raw in iter_json_records(p, container_key))


def _records_of(doc: Any, path: Path, container_key: str | None) -> Iterator[tuple[Where, Any]]:
    if isinstance(doc, Mapping) and container_key is not None:
        if container_key not in doc:
            raise DataFormatError(path, None, f"a JSON object must hold the records under {container_key!r}")
        doc = doc[container_key]
        if not isinstance(doc, list):
            raise DataFormatError(path, None, f"{container_key!r} must be a list of records")
    if not isinstance(doc, list):
        raise DataFormatError(path, None, f"expected a JSON list of records, got {type(doc).__name__}")
    for i, rec in enumerate(doc):
        yield f"record {i}", rec
