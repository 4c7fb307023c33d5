"""Issue 31, scenario 5: the tokenized-data cache (Arrow) on a full disk (a real 16 KiB tmpfs; needs root to mount).

A cache that cannot be written costs time, not correctness. What must hold: one warning naming
the entry, the split used from memory (equal to the encoding), nothing left in the cache folder
(before the fix: an ``OSError`` traceback), and a later run with room storing the entry.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.datamodules.tokenized_cache import entry_damage, load_or_encode
from tests.helpers.small_disk import SmallDisk, mounted_small_disk
from tests.helpers.tokenized_rows import row_encoder, word_tokenizer


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk", "16k")


def test_full_disk_is_one_warning_and_the_split_is_used_from_memory(
    tmp_path: Path, disk: SmallDisk, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "train.jsonl").write_text("{}\n")
    tokenizer = word_tokenizer()
    encode = row_encoder(tokenizer)
    args = ("train", tmp_path / "train.jsonl", tokenizer, disk.path / "cache", {"max_length": 8}, encode)
    with caplog.at_level(logging.WARNING, logger="kbqa_lit.datamodules.tokenized_cache"):
        data, encoded = load_or_encode(*args, namespace="gen", kind="train")  # before: an OSError traceback
    assert encoded and data["input_ids"] == encode()["input_ids"]
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(messages) == 1 and str(disk.path / "cache" / "gen" / "train-") in messages[0]
    assert "No space left on device" in messages[0]
    assert disk.files() == []  # no half-written entry, no temporary folder

    disk.resize("1m")  # a later run with room stores the entry, and the one after reads it
    assert load_or_encode(*args, namespace="gen", kind="train")[1] is True
    (entry,) = (disk.path / "cache" / "gen").iterdir()
    assert entry_damage(entry) is None
    again, encoded = load_or_encode(*args, namespace="gen", kind="train")
    assert not encoded and again["input_ids"] == encode()["input_ids"]
