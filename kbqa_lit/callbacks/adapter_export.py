"""``AdapterExport``: write the LoRA adapter and the run's resolved config at the end of ``fit``.

The exported folder is what inference (``kbqa lora pipeline``), merging (``kbqa lora merge``)
and continued training read::

    <dirpath>/
      adapter_config.json, adapter_model.safetensors   peft save_pretrained (LoRA weights only)
      tokenizer.json, tokenizer_config.json, ...       the tokenizer the adapter was trained with
      kbqa_lora.json                                   the module's hyper-parameters
      instruction.json                                 prompt settings of the datamodule (template,
                                                       instructions, max lengths, tasks)
      config.yaml                                      the resolved LightningCLI config, when the
                                                       run came from `kbqa fit` (copied from log_dir)
      base/                                            the base weights, for a tiny base built
                                                       from a config (a hub base is not copied)

Under DeepSpeed ZeRO-3 the LoRA weights are gathered on every rank and written by rank 0; the
other ranks wait at a barrier, so the folder is complete when ``fit`` returns.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import lightning as L

INSTRUCTION_FILE = "instruction.json"
CONFIG_FILE = "config.yaml"


def instruction_settings(datamodule: Any) -> dict[str, Any] | None:
    """Prompt settings of an instruction datamodule (its encoder's settings and tasks), if any."""
    encoder = getattr(datamodule, "encoder", None)
    if encoder is None or not callable(getattr(encoder, "settings", None)):
        return None
    settings = dict(encoder.settings())
    settings["tasks"] = list(getattr(datamodule, "tasks", ()))
    return settings


class AdapterExport(L.Callback):
    """Export the adapter (and the resolved config) when ``fit`` ends.

    Args:
        dirpath: The adapter folder; default ``<trainer.log_dir>/adapter`` (or under
            ``default_root_dir`` without a logger).
        save_base: Also save the base weights under ``base/`` (default: only for a base built
            from a config, which cannot be downloaded again).
        every_epoch: Also export after every training epoch into ``<dirpath>/epoch<E>``.
    """

    def __init__(self, dirpath: str | None = None, save_base: bool | None = None, every_epoch: bool = False) -> None:
        super().__init__()
        self.dirpath = dirpath
        self.save_base = save_base
        self.every_epoch = every_epoch
        #: The folder of the last export (on every rank).
        self.last_path: Path | None = None

    def _root(self, trainer: L.Trainer) -> Path:
        if self.dirpath is not None:
            return Path(self.dirpath)
        return Path(trainer.log_dir or trainer.default_root_dir) / "adapter"

    def export(self, trainer: L.Trainer, pl_module: L.LightningModule, out: Path) -> Path:
        """Write the folder ``out`` (collective under ZeRO-3: call it on every rank)."""
        save = getattr(pl_module, "save_adapter", None)
        if not callable(save):
            raise TypeError(f"AdapterExport needs a module with save_adapter(), got {type(pl_module).__name__}")
        write = trainer.is_global_zero
        log_dir = trainer.log_dir  # a collective (broadcast): every rank must ask
        save(out, save_base=self.save_base, write=write)
        if write:
            settings = instruction_settings(getattr(trainer, "datamodule", None))
            if settings is not None:
                (out / INSTRUCTION_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
            config = Path(log_dir or trainer.default_root_dir) / CONFIG_FILE
            if config.is_file():
                shutil.copyfile(config, out / CONFIG_FILE)
        trainer.strategy.barrier("adapter_export")
        self.last_path = out
        return out

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """With ``every_epoch``, export into ``<dirpath>/epoch<E>``."""
        if self.every_epoch and not trainer.sanity_checking:
            self.export(trainer, pl_module, self._root(trainer) / f"epoch{trainer.current_epoch}")

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Export the final adapter into ``dirpath``."""
        self.export(trainer, pl_module, self._root(trainer))


__all__ = ["AdapterExport", "instruction_settings"]
