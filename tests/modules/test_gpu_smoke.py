"""The one GPU test: the CoQ generator trains and decodes on a CUDA device (skipped without one).

CI has no GPU, so this runs on a GPU user's machine: ``pytest -m gpu``. The CPU tests cover the same
code paths; this one catches what only a device move breaks (tensors left on the CPU, dtype casts).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from lightning.pytorch import Callback, LightningModule, Trainer, seed_everything

from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.run_if import _missing, run_if
from tests.helpers.tiny import TINY_T5
from tests.helpers.toy import born_in


class _Where(Callback):
    """The device the module's parameters are on at every training step."""

    def __init__(self) -> None:
        self.devices: set[str] = set()

    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, *args: object) -> None:
        self.devices.add(next(pl_module.parameters()).device.type)


@pytest.mark.gpu
@run_if(cuda=True)
def test_generator_fits_and_decodes_on_a_gpu(tmp_path: Path) -> None:
    for split, (n, offset) in {"train": (8, 0), "dev": (4, 1), "test": (4, 2)}.items():
        write_jsonl(born_in(n, offset=offset, prefix=f"{split}-", decomposition=True), tmp_path / f"{split}.jsonl")
    dm = GenerationDataModule(data_dir=str(tmp_path), vocab_size=150, batch_size=4, eval_batch_size=4, patterns="none")
    dm.setup("fit")
    seed_everything(0)
    model = MultitaskGenerator(model_config=TINY_T5, tokenizer=dm.tokenizer, alpha=0.5)
    where = _Where()
    trainer = Trainer(
        accelerator="gpu", devices=1, max_steps=3, logger=False, enable_checkpointing=False, default_root_dir=tmp_path,
        callbacks=[where],
    )  # fmt: skip
    trainer.fit(model, datamodule=dm)
    assert where.devices == {"cuda"}  # trained there (Lightning's teardown moves the module back to the CPU after fit)
    model.cuda()
    batch = {k: v.cuda() for k, v in next(iter(dm.val_dataloader())).items() if torch.is_tensor(v)}
    beams = model.generate_lf(batch, num_beams=2, num_return_sequences=2, max_new_tokens=6)
    assert len(beams) == batch["input_ids"].shape[0] and all(len(b) == 2 for b in beams)


def test_run_if_names_every_missing_requirement() -> None:
    reasons = _missing(cuda=True, deepspeed=False, virtuoso=False, wandb=False)
    assert reasons == ([] if torch.cuda.is_available() else ["needs a CUDA GPU"])
    assert _missing(cuda=False, deepspeed=False, virtuoso=False, wandb=False) == []
