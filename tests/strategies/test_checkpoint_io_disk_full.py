"""Issue 31, scenario 5: ``kbqa fit`` writing a checkpoint on a full disk (a real tmpfs; needs root to mount).

Lightning's own writer stages a checkpoint in ``/tmp`` and *copies* it onto another file system;
a copy that ran out of room left a truncated ``epoch=...ckpt`` under its final name, after an
``OSError`` traceback. What must hold: status 2, one line naming the checkpoint, the previous
checkpoints byte for byte, nothing else on the disk, and ``--ckpt_path last.ckpt`` resuming once
there is room.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml

from kbqa_lit import cli
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.modules.checkpoint_loading import checkpoint_damage
from tests.helpers.small_disk import SmallDisk, mounted_small_disk
from tests.helpers.tiny import ONE_LAYER_T5
from tests.helpers.toy import born_in


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk", "2m")


def _config(tmp_path: Path, checkpoints: Path) -> Path:
    """A one-layer generator on 8 questions (2 steps an epoch), checkpoints in ``checkpoints``."""
    data = tmp_path / "data"
    write_jsonl(born_in(8, prefix="t0-"), data / "train.jsonl")
    write_jsonl(born_in(4, offset=1, prefix="t1-"), data / "dev.jsonl")
    write_jsonl(born_in(4, offset=2, prefix="t2-"), data / "test.jsonl")
    doc = {
        "model": {
            "class_path": "kbqa_lit.modules.multitask_generator.MultitaskGenerator",
            "init_args": {"model_config": ONE_LAYER_T5},
        },
        "data": {
            "class_path": "kbqa_lit.datamodules.coq.generation.GenerationDataModule",
            "init_args": {"data_dir": str(data), "synthetic_seed": None, "vocab_size": 150, "batch_size": 4},
        },
        "trainer": {
            "accelerator": "cpu",
            "logger": False,
            "limit_val_batches": 0,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "default_root_dir": str(tmp_path / "run"),
            "callbacks": [
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {"dirpath": str(checkpoints), "save_last": True},
                }
            ],
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.slow  # three in-process fits of a one-layer T5 (≈ 10 s)
def test_full_disk_fails_in_one_line_keeps_the_last_checkpoint_and_resumes(
    tmp_path: Path, disk: SmallDisk, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = disk.path / "ck"
    config = str(_config(tmp_path, checkpoints))
    assert cli.main(["fit", "--config", config, "--trainer.max_steps", "2"]) == 0
    assert disk.files() == ["ck/epoch=0-step=2.ckpt", "ck/last.ckpt"]
    last = checkpoints / "last.ckpt"
    before = last.read_bytes()

    disk.resize(f"{len(before) * 2 // 1024 + 64}k")  # room for less than one more checkpoint
    capsys.readouterr()
    status = cli.main(["fit", "--config", config, "--trainer.max_steps", "4", "--ckpt_path", str(last)])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err  # before: an OSError traceback and a truncated file
    line = err.strip().splitlines()[-1]
    assert re.fullmatch(
        f"kbqa fit: error: cannot write {re.escape(str(checkpoints))}/epoch=\\d+-step=\\d+\\.ckpt: "
        r"No space left on device \(nothing was written to it; .*\)",
        line,
    ), line
    assert disk.files() == ["ck/epoch=0-step=2.ckpt", "ck/last.ckpt"]
    assert last.read_bytes() == before

    disk.resize("4m")  # room again: resume from the last complete checkpoint
    assert cli.main(["fit", "--config", config, "--trainer.max_steps", "4", "--ckpt_path", str(last)]) == 0
    assert disk.files()[-1] == "ck/last.ckpt" and len(disk.files()) == 2
    assert checkpoint_damage(last) is None
    assert torch.load(last, map_location="cpu", weights_only=False)["global_step"] == 4
