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
    examples: Sequence[KBQAExample], fractions: Sequence[float], seed: int = 0
) -> dict[str, list[KBQAExample]]:
    """Split examples into train/dev/test by a hash of their qid.

    The assignment of a question depends only on its qid, the seed and the fractions, so adding
    questions to the file never moves the others between splits. Each split keeps file order.

    Args:
        examples: The examples (qids must be unique).
        fractions: Two or three fractions summing to 1 (train, dev[, test]).
        seed: Changes the assignment.

    Returns:
        ``{"train": [...], "dev": [...], "test": [...]}`` (``test`` empty for two fractions).

    Raises:
        UserInputError: For bad fractions or duplicate qids.
    """
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
    return out


def split_file(path: str | Path, out_dir: str | Path, fractions: Sequence[float], seed: int = 0) -> dict[str, int]:
    """Split a common-schema JSON-lines file into ``out_dir/{train,dev,test}.jsonl``; return the counts."""
    parts = split_examples(list(read_jsonl(path)), fractions, seed)
    counts = {}
    for name, items in parts.items():
        if name == "test" and len(fractions) == 2:
            continue
        counts[name] = write_jsonl(items, Path(out_dir) / f"{name}.jsonl")
    return counts
