"""Deterministic train/dev/test splits of a common-schema JSON-lines file."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from kbqa_lit.data.schema import KBQAExample, read_jsonl, write_jsonl
from kbqa_lit.errors import UserInputError

SPLIT_NAMES = ("train", "dev", "test")


def _bucket(qid: str, seed: int) -> float:
    """A stable pseudo-random number in [0, 1) from the qid and the seed (independent of file order)."""
    digest = hashlib.blake2b(f"{seed}:{qid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def split_examples(
    examples: Sequence[KBQAExample], fractions: Sequence[float], seed: int = 0, max_per_split: int | None = None
) -> dict[str, list[KBQAExample]]:
    """Split examples into train/dev/test by a hash of their qid.

    The assignment of a question depends only on its qid, the seed and the fractions, so adding
    questions to the file never moves the others between splits. Each split keeps file order.

    Args:
        examples: The examples (qids must be unique).
        fractions: Two or three fractions summing to 1 (train, dev[, test]).
        seed: Changes the assignment.
        max_per_split: Keep at most this many examples per split: a sample drawn by another hash
            of the qid (so it does not follow file order, e.g. MetaQA's 1-hop questions first),
            kept in file order. ``None`` keeps all.

    Returns:
        ``{"train": [...], "dev": [...], "test": [...]}`` (``test`` empty for two fractions).

    Raises:
        UserInputError: For bad fractions, a negative ``max_per_split`` or duplicate qids.
    """
    if max_per_split is not None and max_per_split < 0:
        raise UserInputError(f"max_per_split must be >= 0, got {max_per_split}")
    if len(fractions) not in (2, 3) or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise UserInputError(f"fractions must be 2 or 3 non-negative numbers summing to 1, got {list(fractions)}")
    bounds, total = [], 0.0
    for f in fractions:
        total += f
        bounds.append(total)
    out: dict[str, list[KBQAExample]] = {name: [] for name in SPLIT_NAMES}
    seen: set[str] = set()
    for ex in examples:
        if ex.qid in seen:
            raise UserInputError(f"duplicate qid {ex.qid!r}: splits are assigned by qid")
        seen.add(ex.qid)
        u = _bucket(ex.qid, seed)
        index = next((i for i, b in enumerate(bounds) if u < b), len(bounds) - 1)
        out[SPLIT_NAMES[index]].append(ex)
    if max_per_split is not None:
        for name, items in out.items():
            if len(items) > max_per_split:
                keep = set(sorted(range(len(items)), key=lambda i: _bucket(items[i].qid, seed + 1))[:max_per_split])
                out[name] = [ex for i, ex in enumerate(items) if i in keep]
    return out


def split_file(
    path: str | Path,
    out_dir: str | Path,
    fractions: Sequence[float],
    seed: int = 0,
    max_per_split: int | None = None,
) -> dict[str, int]:
    """Split a common-schema JSON-lines file into ``out_dir/{train,dev,test}.jsonl``; return the counts.

    ``max_per_split`` caps each split (see :func:`split_examples`).
    """
    parts = split_examples(list(read_jsonl(path)), fractions, seed, max_per_split)
    counts = {}
    for name, items in parts.items():
        if name == "test" and len(fractions) == 2:
            continue
        counts[name] = write_jsonl(items, Path(out_dir) / f"{name}.jsonl")
    return counts
