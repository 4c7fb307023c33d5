"""Tokenise a split once and keep it as an Arrow dataset on disk (any system's datamodule).

:func:`load_or_encode` looks for ``<cache_root>/<namespace>/<kind>-<key>`` where ``key`` hashes the
file's bytes, the input settings and the tokenizer; when present it is memory-mapped with
:func:`datasets.load_from_disk` (no tokenisation), otherwise the caller's ``encode`` function
tokenises the examples and the result is written with ``save_to_disk`` into a temp folder and
renamed into place (safe when several ranks race). Columns are ``index`` (position in the split's
example list) plus whatever ``encode`` returns: lists of token ids or integers.

Each entry holds the SHA-256 of its files (``kbqa_checksums.json``, written before the rename); an
entry whose files no longer match (truncated, overwritten) is reported in one warning, removed
and tokenised again, never loaded. An entry that cannot be written for want of room (a full disk, a
quota, a file-size limit) is not an error: one warning names it, nothing is left in the cache folder,
and the split is used from memory (a later run with room stores it).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import datasets
from torch.utils.data import Dataset
from transformers import PreTrainedTokenizerBase

from kbqa_lit.atomic import write_json_atomic

log = logging.getLogger(__name__)

_CACHE_FORMAT = 2  # bump when the row layout or the input recipe changes (2: entries carry checksums)
_CHECKSUMS = "kbqa_checksums.json"
#: ``errno`` values of a file system without room (full, over quota, file-size limit): the entry is not stored.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """A short hash of the tokenizer's full definition (vocabulary, model, added tokens)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        spec.pop("truncation", None)  # call-time state that fast tokenizers keep between calls
        spec.pop("padding", None)
        text = json.dumps(spec, sort_keys=True)
    else:  # a slow tokenizer: vocabulary and specials
        text = json.dumps([sorted(tokenizer.get_vocab().items()), tokenizer.all_special_tokens])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cache_key(file: str | Path, tokenizer: PreTrainedTokenizerBase, settings: dict[str, Any]) -> str:
    """Hash of the file content, the input settings and the tokenizer."""
    blob = json.dumps([_CACHE_FORMAT, file_digest(file), tokenizer_fingerprint(tokenizer), settings], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _checksums(folder: Path) -> dict[str, str]:
    """SHA-256 of each file of a cache entry (the checksum file aside)."""
    return {f.name: file_digest(f) for f in sorted(folder.iterdir()) if f.is_file() and f.name != _CHECKSUMS}


def entry_damage(folder: str | Path) -> str | None:
    """Why a cache entry cannot be trusted (a file missing or changed since it was written), or ``None``.

    Files added later (``datasets`` may write ``cache-*.arrow`` beside the data) are not checked.

    Args:
        folder: The entry's folder.

    Returns:
        A one-line reason, or ``None`` when every file listed in its checksums is intact.
    """
    folder = Path(folder)
    try:
        expected = json.loads((folder / _CHECKSUMS).read_text(encoding="utf-8"))
        if not isinstance(expected, dict) or not expected:
            raise ValueError("not a table of files")
    except (OSError, ValueError) as exc:
        return f"unreadable {_CHECKSUMS}: {' '.join(str(exc).split())}"
    changed = []
    for name, digest in expected.items():
        path = folder / str(name)
        if not path.is_file() or file_digest(path) != digest:
            changed.append(str(name))
    return f"{', '.join(changed)} changed since written" if changed else None


def _features(cols: dict[str, list[Any]]) -> datasets.Features:
    """Arrow types of the columns: ``index`` int64, token-id lists ``list<int32>``, other integers int32."""
    out = {}
    for name, values in cols.items():
        if name == "index":
            out[name] = datasets.Value("int64")
        elif any(isinstance(v, list) for v in values):
            out[name] = datasets.List(datasets.Value("int32"))
        else:
            out[name] = datasets.Value("int32")
    return datasets.Features(out)


def load_or_encode(
    split: str,
    file: str | Path,
    tokenizer: PreTrainedTokenizerBase,
    cache_root: str | Path,
    settings: dict[str, Any],
    encode: Callable[[], dict[str, list[Any]]],
    *,
    namespace: str,
    kind: str,
) -> tuple[datasets.Dataset, bool]:
    """Return the tokenised split from the cache, encoding and storing it on a miss.

    Args:
        split: Split name (for messages; the key depends on the file, not on the name).
        file: The split's source file (its bytes are hashed).
        tokenizer: The tokenizer (its definition is hashed).
        cache_root: Cache folder; entries go to ``<cache_root>/<namespace>/``.
        settings: Every input setting ``encode`` depends on (hashed into the key).
        encode: Tokenises the split into columns (``index`` + token-id lists/integers); called
            only on a miss.
        namespace: The sub-folder of one kind of data (``"generation"``...).
        kind: Part of the entry's name, e.g. ``"train"`` / ``"eval"`` (splits with the same
            file and settings share an entry).

    Returns:
        ``(dataset, encoded)``: ``encoded`` is ``False`` on a cache hit.
    """
    key = cache_key(file, tokenizer, settings)
    target = Path(cache_root) / namespace / f"{kind}-{key}"
    if target.is_dir():
        damage = entry_damage(target)
        if damage is None:
            return datasets.load_from_disk(str(target)), False
        log.warning("tokenized cache %s is damaged (%s); tokenising the %s split again", target, damage, split)
        shutil.rmtree(target, ignore_errors=True)
    log.info("tokenising the %s split into %s", split, target)
    cols = encode()
    ds = datasets.Dataset.from_dict(cols, features=_features(cols))
    try:
        _store(ds, target)
    except OSError as exc:
        if exc.errno not in NO_ROOM:
            raise
        log.warning(
            "tokenized cache %s cannot be written (%s); the %s split is used from memory in this run "
            "and stored by a run that finds room",
            target,
            exc.strerror or exc,
            split,
        )
        return ds, True
    return datasets.load_from_disk(str(target)), True


def _store(ds: datasets.Dataset, target: Path) -> None:
    """Write ``ds`` to a temporary folder beside ``target`` and rename it into place (removed on any error)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    bars_were_on = not datasets.utils.are_progress_bars_disabled()
    datasets.utils.disable_progress_bars()
    try:
        ds.save_to_disk(str(tmp))
        write_json_atomic(tmp / _CHECKSUMS, _checksums(tmp))
        try:
            os.replace(tmp, target)
        except OSError:  # another rank stored it first
            if entry_damage(target) is not None:
                raise
    finally:
        if bars_were_on:
            datasets.utils.enable_progress_bars()
        shutil.rmtree(tmp, ignore_errors=True)


class TokenizedSplit(Dataset):
    """A torch map-style view of a tokenised split (rows as dicts of id lists).

    Args:
        data: The Arrow dataset from :func:`load_or_encode`.
    """

    def __init__(self, data: datasets.Dataset) -> None:
        self.data = data
        self.lengths: list[int] = [int(n) for n in data["length"]]

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.data[int(i)]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        cols = self.data[[int(i) for i in indices]]
        return [{k: v[j] for k, v in cols.items()} for j in range(len(indices))]


__all__ = ["TokenizedSplit", "cache_key", "entry_damage", "load_or_encode", "tokenizer_fingerprint"]
