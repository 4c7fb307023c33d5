from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch import Trainer, seed_everything
from lightning.pytorch.callbacks import ModelCheckpoint

from kbqa_lit.callbacks.adapter_export import AdapterExport
from kbqa_lit.data.tfs.prompts import TASKS
from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.modules.lora_causal_lm import TASK_NAMES, LoraCausalLM, checkpointing_enabled, is_adapter_key

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread (and do not fight other processes for cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def dm(tmp_path_factory: pytest.TempPathFactory) -> InstructionDataModule:
    data = InstructionDataModule(
        data_dir=str(tmp_path_factory.mktemp("tfs") / "world"), synthetic_seed=0, tasks="s1", batch_size=8
    )
    data.setup("fit")
    return data


def make_module(dm: InstructionDataModule, **kw) -> LoraCausalLM:
    args = {
        "lora_r": 8,
        "lora_alpha": 16,
        "lora_dropout": 0.0,
        "target_modules": ALL_LINEAR,
        "learning_rate": 3e-3,
    }
    args.update(kw)
    return LoraCausalLM(tokenizer=dm.tokenizer, **args)


class EpochLoss(L.Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_epoch_end(self, trainer: Trainer, pl_module: L.LightningModule) -> None:
        self.losses.append(float(trainer.callback_metrics["train/loss_epoch"]))


@pytest.fixture(scope="module")
def trained(dm: InstructionDataModule, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("fit")
    seed_everything(0)
    module = make_module(dm)
    record = EpochLoss()
    ckpt = ModelCheckpoint(dirpath=str(root / "ckpt"), save_top_k=1)  # the latest
    trainer = Trainer(
        max_epochs=3,
        limit_train_batches=12,
        limit_val_batches=2,
        logger=False,
        callbacks=[record, ckpt, AdapterExport(str(root / "adapter"))],
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(root),
        num_sanity_val_steps=0,
    )
    trainer.fit(module, datamodule=dm)
    module.eval()
    return {
        "module": module,
        "losses": record.losses,
        "ckpt": ckpt.best_model_path,
        "adapter": root / "adapter",
    }


@pytest.fixture()
def batch(dm: InstructionDataModule) -> dict[str, torch.Tensor]:
    b = next(iter(dm.val_dataloader()))
    return {k: v[:4] for k, v in b.items()}


def logits_of(module: LoraCausalLM, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    module.eval()
    with torch.no_grad():
        return module(batch["input_ids"], batch["attention_mask"])


# ------------------------------------------------------------------ loss


def test_loss_is_cross_entropy_over_response_tokens(dm, batch) -> None:
    m = make_module(dm).eval()
    with torch.no_grad():
        ours = m.compute_losses(batch)["loss"]
        hf = m.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    torch.testing.assert_close(ours, hf, rtol=1e-5, atol=1e-5)
    only_prompt = dict(batch, labels=torch.full_like(batch["labels"], -100))
    with torch.no_grad():
        assert float(m.compute_losses(only_prompt)["loss"]) == 0.0


def test_task_names_are_the_instruction_tasks() -> None:
    assert TASK_NAMES == TASKS  # the shared module names TFS's task ids without importing its data folder


def test_per_task_losses_in_a_mixed_batch(dm, batch) -> None:
    m = make_module(dm).eval()
    mixed = dict(batch, task=torch.tensor([0, 0, 3, 3]))
    with torch.no_grad():
        losses = m.compute_losses(mixed)
    assert set(losses) == {"loss", "loss_s1", "loss_s3"}


def test_only_lora_weights_train_and_checkpointing_switch(dm, batch) -> None:
    m = make_module(dm, gradient_checkpointing=True)
    trainable = [n for n, p in m.named_parameters() if p.requires_grad]
    assert trainable and all(is_adapter_key(n) for n in trainable)
    assert checkpointing_enabled(m.model.get_base_model())
    plain = make_module(dm)
    plain.load_state_dict(m.state_dict())
    m.train()
    plain.train()
    torch.testing.assert_close(m.compute_losses(batch)["loss"], plain.compute_losses(batch)["loss"])


def test_generate_decodes_only_the_response_and_ignores_left_padding(dm, batch) -> None:
    m = make_module(dm, init_seed=3)
    out = m.generate(batch, num_beams=1, max_new_tokens=4)
    assert len(out) == 4 and all(len(b) == 1 for b in out)
    assert not any("### Response" in b[0] for b in out)
    lens = batch["prompt_attention_mask"].sum(1)
    k = int(lens.argmin())  # the most padded prompt, alone, generates the same
    alone = {
        "prompt_input_ids": batch["prompt_input_ids"][k : k + 1, -int(lens[k]) :],
        "prompt_attention_mask": batch["prompt_attention_mask"][k : k + 1, -int(lens[k]) :],
    }
    assert m.generate(alone, num_beams=1, max_new_tokens=4)[0] == out[k]
    beams = m.generate(batch, num_beams=3, num_return_sequences=2, max_new_tokens=4)
    assert [len(b) for b in beams] == [2, 2, 2, 2]
    with pytest.raises(ValueError):
        m.generate(batch, num_beams=2, num_return_sequences=3)


# ------------------------------------------------------------------ fit, checkpoints, adapters


def test_fit_lowers_the_loss(trained) -> None:
    first, last = trained["losses"][0], trained["losses"][-1]
    assert len(trained["losses"]) == 3
    assert last < 0.8 * first, trained["losses"]


def test_checkpoint_holds_only_the_adapter_and_reloads(trained, batch) -> None:
    ckpt = torch.load(trained["ckpt"], map_location="cpu", weights_only=False)
    module: LoraCausalLM = trained["module"]
    assert ckpt["adapter_only"] and ckpt["state_dict"]
    assert set(ckpt["state_dict"]) == set(module.adapter_state_dict())
    n_lora = sum(v.numel() for v in ckpt["state_dict"].values())
    n_all = sum(p.numel() for p in module.parameters())
    assert n_lora < 0.25 * n_all
    reloaded = LoraCausalLM.load_from_checkpoint(trained["ckpt"], map_location="cpu")  # no tokenizer given
    assert reloaded.tokenizer is not None and len(reloaded.tokenizer) == len(module.tokenizer)
    assert reloaded.base_checksum() == pytest.approx(module.base_checksum())
    torch.testing.assert_close(logits_of(reloaded, batch), logits_of(module, batch))


def test_checkpoint_of_another_adapter_shape_is_refused(trained) -> None:
    with pytest.raises(ValueError, match="adapter does not fit"):
        LoraCausalLM.load_from_checkpoint(trained["ckpt"], map_location="cpu", target_modules=["q_proj"])


def test_adapter_folder_round_trip_reproduces_predictions(trained, batch, tmp_path: Path) -> None:
    module: LoraCausalLM = trained["module"]
    folder = module.save_adapter(tmp_path / "adapter")
    assert (folder / "adapter_model.safetensors").is_file() and (folder / "base" / "config.json").is_file()
    loaded = LoraCausalLM.from_adapter(folder).eval()
    diff = (logits_of(loaded, batch) - logits_of(module, batch)).abs().max()
    assert float(diff) < 1e-6
    assert loaded.generate(batch, num_beams=2, max_new_tokens=12) == module.generate(
        batch, num_beams=2, max_new_tokens=12
    )
    # the folder AdapterExport wrote at the end of fit holds the same adapter and the prompt settings
    exported = LoraCausalLM.from_adapter(trained["adapter"]).eval()
    torch.testing.assert_close(logits_of(exported, batch), logits_of(module, batch))
    assert (trained["adapter"] / "instruction.json").is_file()
