from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer, seed_everything

from kbqa_lit.backbones.encoders import masked_mean
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.coq.classifier import SchemaDataModule
from kbqa_lit.datamodules.coq.classifier_inputs import ENT_TASK, REL_TASK
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.modules.coq.schema_classifier import SchemaClassifier
from tests.helpers.tiny import TINY_T5

TINY = TINY_T5


@pytest.fixture(scope="module")
def dm(tmp_path_factory: pytest.TempPathFactory) -> SchemaDataModule:
    d = tmp_path_factory.mktemp("schema_cls")
    build_world(d / "w", seed=0)
    build_store(d / "kb", [d / "w" / "kb.nt"], "nt")
    data = d / "small"
    data.mkdir()
    write_jsonl(list(read_jsonl(d / "w" / "train.jsonl"))[:120], data / "train.jsonl")
    write_jsonl(list(read_jsonl(d / "w" / "dev.jsonl"))[:40], data / "dev.jsonl")
    write_jsonl(list(read_jsonl(d / "w" / "test.jsonl"))[:4], data / "test.jsonl")
    module = SchemaDataModule(
        data_dir=str(data),
        store=str(d / "kb"),
        relations_file=str(d / "w" / "schema.json"),
        use_decomposition=False,  # short items: fast tests
        num_candidates=6,
        vocab_size=400,
        batch_size=32,
        eval_batch_size=256,
    )
    module.setup("fit")
    return module


def make(dm: SchemaDataModule, **kw) -> SchemaClassifier:
    seed_everything(0)
    return SchemaClassifier(model_config=TINY, tokenizer=dm.tokenizer, **kw)


@pytest.fixture()
def batch(dm: SchemaDataModule) -> dict[str, torch.Tensor]:
    return next(iter(dm.val_dataloader()))


def test_masked_mean_ignores_padding_positions() -> None:
    h = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    assert masked_mean(h, torch.tensor([[1, 1, 0]])).tolist() == [[2.0, 3.0]]


@pytest.mark.parametrize("mode", ["joint", "separate"])
def test_padding_does_not_change_the_probability(dm: SchemaDataModule, mode: str) -> None:
    model = make(dm, mode=mode, shared_head=False).eval()
    ids = dm.tokenizer("Relation Classification: who directed Broken Lighthouse ? ; film , film , directed by")[
        "input_ids"
    ]
    probs = []
    for extra in (0, 3, 17):
        x = torch.tensor([ids + [dm.pad_token_id] * extra])
        mask = torch.tensor([[1] * len(ids) + [0] * extra])
        for task in (REL_TASK, ENT_TASK):
            with torch.no_grad():
                probs.append((task, torch.sigmoid(model(x, mask, torch.tensor([task]))).item()))
    for task in (REL_TASK, ENT_TASK):
        values = [p for t, p in probs if t == task]
        assert max(values) - min(values) < 1e-6


@pytest.mark.parametrize(
    ("mode", "shared_head"), [("joint", True), ("joint", False), ("separate", True), ("separate", False)]
)
def test_switches_build_and_take_a_step(dm: SchemaDataModule, batch: dict, mode: str, shared_head: bool) -> None:
    model = make(dm, mode=mode, shared_head=shared_head)
    assert len(model.encoders) == (1 if mode == "joint" else 2) and len(model.heads) == (1 if shared_head else 2)
    losses, logits = model.compute_losses(batch)
    losses["loss"].backward()
    for encoder in model.encoders:
        assert encoder.get_input_embeddings().weight.grad is not None
    assert all(h.weight.grad is not None for h in model.heads)
    rel, ent = batch["task"] == REL_TASK, batch["task"] == ENT_TASK
    l_rel = F.binary_cross_entropy_with_logits(logits[rel], batch["labels"][rel])
    l_ent = F.binary_cross_entropy_with_logits(logits[ent], batch["labels"][ent])
    assert torch.allclose(losses["loss_rel"], l_rel) and torch.allclose(losses["loss_ent"], l_ent)
    assert torch.allclose(losses["loss"], l_rel + l_ent)


def test_separate_mode_routes_each_task_to_its_own_encoder(dm: SchemaDataModule, batch: dict) -> None:
    model = make(dm, mode="separate").eval()
    with torch.no_grad():
        before = model(batch["input_ids"], batch["attention_mask"], batch["task"])
        torch.nn.init.normal_(model.encoders[ENT_TASK].get_input_embeddings().weight)
        after = model(batch["input_ids"], batch["attention_mask"], batch["task"])
    rel = batch["task"] == REL_TASK
    assert torch.equal(before[rel], after[rel]) and not torch.allclose(before[~rel], after[~rel])


def test_inference_api_is_batched_and_matches_forward(dm: SchemaDataModule) -> None:
    model = make(dm, inference_batch_size=2)
    rels = ["film.film.directed_by", "people.person.spouse", "music.album.genre"]
    got = model.score_relations("who directed Broken Lighthouse?", None, rels)
    one_by_one = [model.score_relations("who directed Broken Lighthouse?", None, [r])[0] for r in rels]
    assert len(got) == 3 and all(0.0 < p < 1.0 for p in got)
    assert got == pytest.approx(one_by_one, abs=1e-6) and model.training  # mode restored
    ents = model.score_entities("q?", "[SUBQ] a [ANS] b", [("m.x", "Ada", ["people.person.spouse"]), ("m.y", "", [])])
    assert len(ents) == 2 and ents[0] != ents[1]
    assert model.score_relations("q?", None, []) == []


def rel_f1(trainer: Trainer, model: SchemaClassifier, dm: SchemaDataModule) -> float:
    return trainer.validate(model, dm, verbose=False)[0]["val/rel_f1"]


def trainer_for(tmp_path: Path, **kw) -> Trainer:
    return Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
        **kw,
    )


@pytest.mark.slow  # ~10-30 s on 2 busy cores: 4 epochs over 1,400 items
def test_fit_improves_relation_f1(dm: SchemaDataModule, tmp_path: Path) -> None:
    model = make(dm, learning_rate=3e-3, warmup_ratio=0.0)
    trainer = trainer_for(tmp_path, max_epochs=4)
    before = rel_f1(trainer, model, dm)
    trainer.fit(model, dm)
    metrics = trainer.callback_metrics
    assert {"train/loss", "train/loss_rel", "train/loss_ent", "val/ent_f1", "val/rel_precision"} <= set(metrics)
    after = rel_f1(trainer, model, dm)
    assert after > before + 0.15, (before, after)


def test_checkpoint_carries_tokenizer_and_encoder(dm: SchemaDataModule, tmp_path: Path) -> None:
    model = make(dm, mode="separate", shared_head=False)
    trainer = trainer_for(tmp_path, max_steps=2, limit_val_batches=0)
    trainer.fit(model, dm)
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(ckpt)
    loaded = SchemaClassifier.load_from_checkpoint(ckpt)
    assert loaded.tokenizer is not None and loaded.tokenizer.get_vocab() == dm.tokenizer.get_vocab()
    assert loaded.encoders[0].config.d_model == TINY["d_model"] and len(loaded.encoders) == 2
    rels = ["film.film.directed_by", "people.person.spouse"]
    ents = [("m.x", "Ada", ["people.person.spouse"])]
    assert loaded.score_relations("q?", None, rels) == pytest.approx(model.score_relations("q?", None, rels), abs=1e-6)
    assert loaded.score_entities("q?", None, ents) == pytest.approx(model.score_entities("q?", None, ents), abs=1e-6)


def test_bad_arguments_are_rejected(dm: SchemaDataModule) -> None:
    with pytest.raises(ValueError, match="mode"):
        SchemaClassifier(model_config=TINY, tokenizer=dm.tokenizer, mode="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        SchemaClassifier(model_config=TINY, tokenizer=dm.tokenizer, threshold=1.5)
