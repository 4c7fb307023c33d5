"""Issue 31, scenario 4: a damaged tokenized-data cache entry (truncated, one byte changed, broken metadata).

A real entry is written by :func:`load_or_encode` (Arrow files through ``datasets``) and damaged
on disk. What must hold: one warning naming the entry, the split tokenised again (equal to the
first encoding), never the damaged rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from kbqa_lit.datamodules.tokenized_cache import entry_damage, load_or_encode
from tests.helpers.tokenized_rows import row_encoder, word_tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return word_tokenizer()


def _damage_truncate(entry: Path) -> None:
    arrow = next(entry.glob("*.arrow"))
    data = arrow.read_bytes()
    arrow.write_bytes(data[: len(data) // 2])


def _damage_flip(entry: Path) -> None:
    arrow = next(entry.glob("*.arrow"))
    data = bytearray(arrow.read_bytes())
    data[len(data) // 2] ^= 0x01  # the file still loads: one token id differs
    arrow.write_bytes(bytes(data))


def _damage_metadata(entry: Path) -> None:
    (entry / "dataset_info.json").write_text('{"citation": "')


@pytest.mark.parametrize("damage", [_damage_truncate, _damage_flip, _damage_metadata], ids=lambda f: f.__name__[8:])
def test_damaged_entry_is_reported_and_tokenised_again(
    tmp_path: Path, tokenizer: PreTrainedTokenizerFast, damage: Callable[[Path], None], caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "train.jsonl").write_text("{}\n")
    encode = row_encoder(tokenizer)
    args = ("train", tmp_path / "train.jsonl", tokenizer, tmp_path / "cache", {"max_length": 8}, encode)
    first, encoded = load_or_encode(*args, namespace="gen", kind="train")
    assert encoded
    (entry,) = (tmp_path / "cache" / "gen").iterdir()
    assert entry_damage(entry) is None
    damage(entry)
    assert entry_damage(entry) is not None
    with caplog.at_level(logging.WARNING, logger="kbqa_lit.datamodules.tokenized_cache"):
        again, encoded = load_or_encode(*args, namespace="gen", kind="train")  # before: a traceback or wrong ids
    assert encoded and again["input_ids"] == encode()["input_ids"]
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(messages) == 1 and str(entry) in messages[0] and "damaged" in messages[0]
    assert load_or_encode(*args, namespace="gen", kind="train")[1] is False  # the new entry is intact
