"""CrossEncoderRetriever: a tiny BERT learns on the synthetic world; MiniLM loads offline and scores."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from kbqa_lit.backbones.encoders import MINILM, resolve_encoder_path
from kbqa_lit.datamodules.relation_retrieval import RelationRetrievalDataModule
from kbqa_lit.modules.cross_encoder import CrossEncoderRetriever
from tests.helpers.tiny import TINY_BERT

TINY = TINY_BERT


@pytest.fixture(scope="module")
def dm(tmp_path_factory):
    root = tmp_path_factory.mktemp("ce")
    data = RelationRetrievalDataModule(
        data_dir=str(root / "world"),
        synthetic_seed=0,
        tokenizer_name_or_path=None,
        num_negatives=7,
        batch_size=16,
        eval_batch_size=50,
        max_length=32,
    )
    data.setup("fit")
    return data


def _trainer(**kw):
    return L.Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **kw,
    )


@pytest.mark.slow
def test_fit_lowers_loss_and_raises_recall(dm, tmp_path):
    L.seed_everything(0)
    model = CrossEncoderRetriever(None, TINY, tokenizer=dm.tokenizer, learning_rate=3e-3, warmup_ratio=0.0, dropout=0.0)
    batch = next(iter(dm.train_dataloader()))
    with torch.no_grad():
        before = float(model.group_loss(model._batch_scores(batch), batch["group_sizes"]))
    trainer = _trainer(max_epochs=2, limit_train_batches=25, limit_val_batches=1)
    untrained = trainer.validate(model, datamodule=dm, verbose=False)[0]
    trainer.fit(model, datamodule=dm)
    model.eval()
    with torch.no_grad():
        after = float(model.group_loss(model._batch_scores(batch), batch["group_sizes"]))
    trained = {k: float(v) for k, v in trainer.callback_metrics.items()}
    assert after < before - 0.3
    assert trained["val/recall@10"] > untrained["val/recall@10"] + 0.1
    assert "train/loss" in trained and "val/recall@1" in trained
    # checkpoint round trip without the data: same scores, tokenizer restored
    trainer.save_checkpoint(tmp_path / "ce.ckpt")
    loaded = CrossEncoderRetriever.load_from_checkpoint(tmp_path / "ce.ckpt")
    rels = list(dm.inventory.relations[:5])
    assert loaded.score("Where was Amos Garrick born?", rels) == pytest.approx(
        model.score("Where was Amos Garrick born?", rels), abs=1e-5
    )
    ranked = loaded.rank("Where was Amos Garrick born?", dm.inventory, top_l=3)
    assert len(ranked) == 3 and ranked[0][1] >= ranked[1][1] >= ranked[2][1]


def test_group_loss_pads_short_groups():
    model = CrossEncoderRetriever(None, {**TINY, "vocab_size": 50})
    scores = torch.tensor([5.0, 0.0, 0.0, 5.0, 0.0])
    loss = model.group_loss(scores, torch.tensor([3, 2]))
    expected = (torch.log(1 + 2 * torch.exp(torch.tensor(-5.0))) + torch.log(1 + torch.exp(torch.tensor(-5.0)))) / 2
    assert float(loss) == pytest.approx(float(expected), rel=1e-4)


def test_minilm_loads_offline_and_scores(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_encoder_path(MINILM).endswith("model")
    model = CrossEncoderRetriever(MINILM)
    assert model.encoder.config.hidden_size == 384
    # built to train: every module in train mode (dropout on), as for a tiny encoder built from a config
    assert all(m.training for m in model.encoder.modules())
    scores = model.score("where was the singer born?", ["people.person.place_of_birth", "music.album.genre"])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
