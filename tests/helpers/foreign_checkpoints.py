"""Files a tool may be handed instead of the checkpoint it needs (helpers of the tools' failure-path tests)."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class OtherModule(L.LightningModule):
    """A tiny LightningModule that is neither a CrossEncoderRetriever nor a LoraCausalLM."""

    def __init__(self, width: int = 3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(width, 1)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def write_foreign_checkpoint(path: Path) -> Path:
    """Train ``OtherModule`` for one step and save a real Lightning checkpoint of it at ``path``."""
    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(path.parent),
    )
    trainer.fit(OtherModule(), DataLoader(TensorDataset(torch.ones(2, 3)), batch_size=2))
    trainer.save_checkpoint(path)
    return path


def write_not_a_checkpoint(path: Path) -> Path:
    """Write a file that is no checkpoint at all (a JSON line, as a user might pass by mistake)."""
    path.write_text('{"qid": "q1", "question": "who?"}\n', encoding="utf-8")
    return path
