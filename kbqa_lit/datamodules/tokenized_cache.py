"""Tokenise a split of CoQ generation examples once and keep it as an Arrow dataset on disk.

:func:`load_or_encode` looks for ``<cache_root>/generation/<train|eval>-<key>`` where ``key`` hashes the
file's bytes, the input settings and the tokenizer; when present it is memory-mapped with
:func:`datasets.load_from_disk` (no tokenisation), otherwise :func:`encode_examples` tokenises the
examples and the result is written with ``save_to_disk`` into a temp folder and renamed into
place (safe when several ranks race). Rows: ``index`` (position in the split's example list),
``input_ids``, ``labels``, ``length`` and, with the answer task, ``ans_input_ids``, ``ans_labels``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
from torch.utils.data import Dataset
from transformers import PreTrainedTokenizerBase

from kbqa_lit.data.coq.generator_inputs import coq_texts
from kbqa_lit.data.schema import KBQAExample

log = logging.getLogger(__name__)

_CACHE_FORMAT = 1  # bump when the row layout or the input recipe changes


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


def encode_examples(
    examples: Sequence[KBQAExample],
    tokenizer: PreTrainedTokenizerBase,
    *,
    use_decomposition: bool,
    patterns: str,
    answer_task: bool,
    mask_entities: bool = False,
    max_source_length: int,
    max_target_length: int,
    require_target: bool,
) -> dict[str, list[Any]]:
    """Tokenise both CoQ tasks of ``examples`` into columns.

    Args:
        examples: The split's examples, in file order.
        tokenizer: The tokenizer (appends ``</s>``).
        use_decomposition: Put the decomposition ``D`` in the inputs.
        patterns: ``"gold"``, ``"predicted"`` or ``"none"`` (see :mod:`.coq_inputs`).
        mask_entities: Topic entities as slots ``[E0]``... in the logical-form task.
        answer_task: Also encode the answer task.
        max_source_length: Inputs are truncated to this many tokens.
        max_target_length: Targets are truncated to this many tokens.
        require_target: Leave out examples without a gold S-expression (training); otherwise
            they are kept with empty labels.

    Returns:
        Columns ``index``, ``input_ids``, ``labels``, ``length`` (+ ``ans_input_ids``,
        ``ans_labels``).
    """
    keep, texts = [], []
    for i, ex in enumerate(examples):
        t = coq_texts(ex, use_decomposition=use_decomposition, patterns=patterns, mask_entities=mask_entities)
        if require_target and t["target"] is None:
            continue
        keep.append(i)
        texts.append(t)

    def encode(items: list[str | None], max_length: int) -> list[list[int]]:
        present = [k for k, s in enumerate(items) if s is not None]
        out: list[list[int]] = [[] for _ in items]
        if present:
            enc = tokenizer([items[k] for k in present], truncation=True, max_length=max_length)["input_ids"]
            for k, ids in zip(present, enc, strict=True):
                out[k] = list(ids)
        return out

    cols: dict[str, list[Any]] = {"index": keep}
    cols["input_ids"] = encode([t["source"] for t in texts], max_source_length)
    cols["labels"] = encode([t["target"] for t in texts], max_target_length)
    cols["length"] = [len(ids) for ids in cols["input_ids"]]
    if answer_task:
        cols["ans_input_ids"] = encode([t["ans_source"] for t in texts], max_source_length)
        cols["ans_labels"] = encode([t["ans_target"] for t in texts], max_target_length)
    unk = tokenizer.unk_token_id
    if unk is not None:
        bad = sum(unk in ids for key in ("labels", "ans_labels") for ids in cols.get(key, ()))
        if bad:
            log.warning("%d targets contain %s: the tokenizer cannot spell them", bad, tokenizer.unk_token)
    dropped = len(examples) - len(keep)
    if dropped:
        log.warning("left out %d of %d examples without a gold S-expression", dropped, len(examples))
    return cols


_FEATURES = {
    "index": datasets.Value("int64"),
    "input_ids": datasets.List(datasets.Value("int32")),
    "labels": datasets.List(datasets.Value("int32")),
    "length": datasets.Value("int32"),
    "ans_input_ids": datasets.List(datasets.Value("int32")),
    "ans_labels": datasets.List(datasets.Value("int32")),
}


def cache_key(file: str | Path, tokenizer: PreTrainedTokenizerBase, settings: dict[str, Any]) -> str:
    """Hash of the file content, the input settings and the tokenizer."""
    blob = json.dumps([_CACHE_FORMAT, file_digest(file), tokenizer_fingerprint(tokenizer), settings], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def load_or_encode(
    split: str,
    file: str | Path,
    examples: Sequence[KBQAExample],
    tokenizer: PreTrainedTokenizerBase,
    cache_root: str | Path,
    settings: dict[str, Any],
) -> tuple[datasets.Dataset, bool]:
    """Return the tokenised split from the cache, encoding and storing it on a miss.

    Args:
        split: Split name (for messages; the key depends on the file, not on the name).
        file: The split's source file (its bytes are hashed).
        examples: The split's examples (read from ``file``).
        tokenizer: The tokenizer.
        cache_root: Cache folder; entries go to ``<cache_root>/generation/``.
        settings: Keyword arguments of :func:`encode_examples` besides examples/tokenizer.

    Returns:
        ``(dataset, encoded)``: ``encoded`` is ``False`` on a cache hit.
    """
    key = cache_key(file, tokenizer, settings)
    kind = "train" if settings.get("require_target") else "eval"  # test and predict share entries
    target = Path(cache_root) / "generation" / f"{kind}-{key}"
    if (target / "dataset_info.json").is_file():
        return datasets.load_from_disk(str(target)), False
    log.info("tokenising the %s split (%d examples) into %s", split, len(examples), target)
    cols = encode_examples(examples, tokenizer, **settings)
    features = datasets.Features({k: v for k, v in _FEATURES.items() if k in cols})
    ds = datasets.Dataset.from_dict(cols, features=features)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    bars_were_on = not datasets.utils.are_progress_bars_disabled()
    datasets.utils.disable_progress_bars()
    try:
        ds.save_to_disk(str(tmp))
        try:
            os.replace(tmp, target)
        except OSError:  # another rank stored it first
            if not (target / "dataset_info.json").is_file():
                raise
    finally:
        if bars_were_on:
            datasets.utils.enable_progress_bars()
        shutil.rmtree(tmp, ignore_errors=True)
    return datasets.load_from_disk(str(target)), True


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


__all__ = ["TokenizedSplit", "cache_key", "encode_examples", "load_or_encode", "tokenizer_fingerprint"]
