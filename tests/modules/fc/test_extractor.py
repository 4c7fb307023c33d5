"""ComponentExtractor: the group loss is −log softmax of the positive; a tiny BERT trains on FC's groups."""

from __future__ import annotations

import math

import lightning as L
import pytest
import torch

from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from tests.helpers.tiny import TINY_BERT


@pytest.fixture(scope="module")
def dm(tmp_path_factory):
    root = tmp_path_factory.mktemp("fc_extractor")
    data = ExtractorDataModule(
        data_dir=str(root / "world"),
        synthetic_seed=0,
        tokenizer_name_or_path=None,
        num_negatives=7,
        batch_size=16,
        eval_batch_size=50,
        max_length=40,
    )
    data.setup("fit")
    return data


def test_loss_of_one_group_is_the_hand_computed_negative_log_softmax(dm):
    model = ComponentExtractor(encoder_name_or_path=None, encoder_config={**TINY_BERT, "vocab_size": 60})
    scores = torch.tensor([2.0, 0.5, -1.0])
    expected = -math.log(math.exp(2.0) / (math.exp(2.0) + math.exp(0.5) + math.exp(-1.0)))
    assert float(model.group_loss(scores, torch.tensor([3]))) == pytest.approx(expected, rel=1e-6)
    # the same on a real group of the datamodule, scored by a (random) tiny BERT
    L.seed_everything(0)
    model = ComponentExtractor(
        encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=dm.tokenizer, dropout=0.0
    ).eval()
    batch = dm._collator()(dm.rows("train")[:1])
    with torch.no_grad():
        s = model._batch_scores(batch).tolist()
        loss = float(model.group_loss(torch.tensor(s), batch["group_sizes"]))
    assert len(s) == 8 and loss == pytest.approx(-s[0] + math.log(sum(math.exp(x) for x in s)), rel=1e-5)


def test_groups_are_learnable_and_the_checkpoint_keeps_the_items(dm, tmp_path):
    L.seed_everything(0)
    no_dropout = {**TINY_BERT, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    model = ComponentExtractor(
        "relation", encoder_name_or_path=None, encoder_config=no_dropout, tokenizer=dm.tokenizer, dropout=0.0
    )
    model.set_ontology(dm.ontology)  # the relation texts the datamodule built
    batch = dm._collator()(dm.rows("train")[:4])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(12):  # the softmax-over-group loss goes down on FC's groups
        loss = model.group_loss(model._batch_scores(batch), batch["group_sizes"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0] - 1.0
    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(model, datamodule=dm)
    trainer.save_checkpoint(tmp_path / "x.ckpt")
    loaded = ComponentExtractor.load_from_checkpoint(tmp_path / "x.ckpt")
    assert loaded.hparams.kind == "relation"
    loaded.set_ontology(dm.ontology)
    assert loaded.item_text("people.person.place_of_birth") == dm.item_text("people.person.place_of_birth")
    rels = list(dm.inventory.relations[:4])
    q = "Where was Amos Garrick born?"
    assert loaded.score(q, rels) == pytest.approx(model.score(q, rels), abs=1e-5)
    top = loaded.rank(q, dm.bm25.prefilter(q, 10), top_l=3)
    assert len(top) == 3 and top[0][1] >= top[2][1]
