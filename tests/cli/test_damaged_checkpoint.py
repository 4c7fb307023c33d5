"""Issue 31, scenario 4: a damaged checkpoint (truncated, one weight byte changed) given to ``--ckpt_path``.

Real Lightning checkpoints are written and damaged on disk. ``torch.load`` raises a traceback on a
truncated file and silently loads a changed byte as a changed weight; what must hold is one line
on stderr naming the file, status 2, nothing loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbqa_lit import cli
from kbqa_lit.errors import UserInputError
from kbqa_lit.modules.checkpoint_loading import checkpoint_damage, load_module_checkpoint
from tests.helpers.damage import torch_zip_byte_changed
from tests.helpers.foreign_checkpoints import OtherModule, write_foreign_checkpoint, write_not_a_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a real Lightning checkpoint (``OtherModule`` after one step)."""
    return write_foreign_checkpoint(tmp_path_factory.mktemp("ckpt") / "good.ckpt").read_bytes()


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _config(tmp_path: Path) -> Path:
    """A generator config (nothing is built: the checkpoint is refused first)."""
    (tmp_path / "empty").mkdir()
    doc = {
        "model": {
            "class_path": "kbqa_lit.modules.multitask_generator.MultitaskGenerator",
            "init_args": {"model_config": {"d_model": 32, "d_ff": 64, "num_layers": 1, "num_heads": 2, "d_kv": 16}},
        },
        "data": {
            "class_path": "kbqa_lit.datamodules.coq.generation.GenerationDataModule",
            "init_args": {"data_dir": str(tmp_path / "empty"), "synthetic_seed": None},
        },
        "trainer": {"accelerator": "cpu", "logger": False, "default_root_dir": str(tmp_path / "run")},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("damage", [_truncated, torch_zip_byte_changed], ids=["truncated", "byte"])
@pytest.mark.parametrize("command", ["test", "fit"])
def test_damaged_ckpt_path_is_refused_in_one_line(
    tmp_path: Path, checkpoint: bytes, damage, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "last.ckpt"
    bad.write_bytes(damage(checkpoint))
    status = cli.main([command, "--config", str(_config(tmp_path)), "--ckpt_path", str(bad)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert lines[-1].startswith(f"kbqa {command}: error: checkpoint {bad} is damaged (")
    assert not (tmp_path / "run").exists()  # refused before anything was built or written


def test_changed_weight_byte_no_longer_loads_as_a_changed_weight(tmp_path: Path, checkpoint: bytes) -> None:
    good, bad = tmp_path / "good.ckpt", tmp_path / "bad.ckpt"
    good.write_bytes(checkpoint)
    bad.write_bytes(torch_zip_byte_changed(checkpoint))
    assert checkpoint_damage(good) is None
    assert load_module_checkpoint(good, OtherModule).layer.weight.shape == (1, 3)
    with pytest.raises(UserInputError, match="damaged .*CRC-32"):  # before: loaded, one weight different
        load_module_checkpoint(bad, OtherModule)


def test_files_that_are_no_zip_checkpoint_are_left_to_the_loader(tmp_path: Path) -> None:
    assert checkpoint_damage(write_not_a_checkpoint(tmp_path / "rows.jsonl")) is None
    assert checkpoint_damage(tmp_path / "missing.ckpt") is None
    (tmp_path / "empty.ckpt").write_bytes(b"")
    assert checkpoint_damage(tmp_path / "empty.ckpt") == "the file is empty"
