"""The warm-started encoder-decoder backbone: building, ids, decoding, label handling (tiny BERTs, no downloads)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertModel, EncoderDecoderModel

from kbqa_lit.backbones.common import architecture_signature
from kbqa_lit.backbones.encoder_decoder import (
    build_encoder_decoder,
    decode_generated,
    drop_start_token,
    encoder_decoder_from_config,
    join_wordpieces,
    special_ids,
)
from kbqa_lit.backbones.encoders import train_wordpiece_tokenizer
from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer, seq2seq_from_config
from kbqa_lit.data.entity_slots import SLOT_TOKENS
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr, invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from tests.helpers.tiny import TINY_BERT

SEXPR = "(JOIN (R people.person.place_of_birth) m.p0)"
LABELS = {"m.p0": "Ada Lovelace"}
LF = normalize_sexpr(SEXPR, LABELS)  # ( join ( reverse [ people , person , place of birth ] ) [ Ada Lovelace ] )
TEXTS = [
    "Translate to S-expression: where was Ada Lovelace born?",
    "Answer the question: where was Alan Turing born?",
    LF,
    "( count ( join [ film , film , directed by ] [ Grace Hopper ] ) )",
    'London | Paris | Rome m.01mp 2001-05-03 date "Young Forrest"',
] * 10


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a lower-casing WordPiece tokenizer and a randomly initialised tiny BertModel."""
    d = tmp_path_factory.mktemp("tiny_bert")
    tok = train_wordpiece_tokenizer(TEXTS, vocab_size=300)
    tok.save_pretrained(str(d))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), **TINY_BERT)).save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def tok(bert_dir: Path):
    return build_tokenizer(bert_dir, extra_tokens=SLOT_TOKENS)


def test_warm_start_keeps_the_encoder_and_wires_bert_ids(bert_dir: Path, tok) -> None:
    model = build_seq2seq(bert_dir, tokenizer=tok, backbone="encoder-decoder")
    assert isinstance(model, EncoderDecoderModel) and model.encoder.pooler is None
    pretrained = BertModel.from_pretrained(str(bert_dir))
    n_old = pretrained.get_input_embeddings().num_embeddings
    enc = model.encoder.get_input_embeddings().weight
    assert enc.shape[0] == len(tok) > n_old  # grown for the CoQ markers and the slots
    torch.testing.assert_close(enc[:n_old], pretrained.get_input_embeddings().weight)
    torch.testing.assert_close(
        model.encoder.encoder.layer[0].attention.self.query.weight,
        pretrained.encoder.layer[0].attention.self.query.weight,
    )
    dec_in, dec_out = model.decoder.get_input_embeddings().weight, model.decoder.get_output_embeddings().weight
    assert dec_in is dec_out and dec_in.shape[0] == len(tok)  # tied, the tokenizer's vocabulary
    torch.testing.assert_close(dec_in, enc)  # starts from the encoder's lexicon
    assert model.decoder.config.num_hidden_layers == 2 and model.decoder.config.add_cross_attention
    start, eos, pad = special_ids(tok)
    assert (start, eos, pad) == (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    for cfg in (model.config, model.generation_config):
        assert (cfg.decoder_start_token_id, cfg.eos_token_id, cfg.pad_token_id) == (start, eos, pad)


def test_decoder_config_overrides_and_a_narrower_decoder(bert_dir: Path, tok) -> None:
    model = build_encoder_decoder(
        bert_dir, tokenizer=tok, decoder_config={"num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 32}
    )
    assert model.decoder.config.num_hidden_layers == 1 and model.decoder.config.hidden_size == 16
    assert hasattr(model, "enc_to_dec_proj")  # the encoder's 32-d states projected to 16
    ids = tok(["where was [E0] born?"], return_tensors="pt")
    out = model.generate(**ids, num_beams=2, num_return_sequences=2, max_new_tokens=4)
    assert out.shape[0] == 2 and bool((out[:, 0] == tok.cls_token_id).all())


def test_config_round_trip_needs_no_pretrained_folder(bert_dir: Path, tok) -> None:
    model = build_seq2seq(bert_dir, tokenizer=tok, backbone="encoder-decoder")
    stored = model.config.to_dict()
    fresh = seq2seq_from_config(stored, tok)
    assert isinstance(fresh, EncoderDecoderModel) and fresh.encoder.pooler is None
    assert architecture_signature(fresh.config.to_dict()) == architecture_signature(stored)
    assert fresh.load_state_dict(model.state_dict()) is not None
    assert fresh.generation_config.decoder_start_token_id == tok.cls_token_id
    assert isinstance(encoder_decoder_from_config(stored), EncoderDecoderModel)


def test_tiny_encoder_without_a_name(tok) -> None:
    model = build_encoder_decoder(None, config=TINY_BERT, tokenizer=tok)
    assert model.encoder.config.hidden_size == TINY_BERT["hidden_size"]
    assert model.encoder.get_input_embeddings().num_embeddings == len(tok)
    with pytest.raises(ValueError, match="backbone"):
        build_seq2seq(None, tokenizer=tok, backbone="bart")  # type: ignore[arg-type]


def test_drop_start_token() -> None:
    labels = torch.tensor([[2, 7, 8, 3], [2, 9, 3, -100], [-100, -100, -100, -100]])
    assert drop_start_token(labels, 2).tolist() == [[7, 8, 3], [9, 3, -100], [-100, -100, -100]]
    t5_like = torch.tensor([[7, 8, 1], [9, 1, -100]])
    assert drop_start_token(t5_like, 0) is t5_like


def test_decoding_keeps_the_normalised_form_and_the_slots(tok) -> None:
    masked = LF.replace("[ Ada Lovelace ]", "[E0]")
    ids = tok([masked, "m.01mp 2001-05-03 date", '( join [E1] "Young Forrest" )'])["input_ids"]
    got = decode_generated(tok, ids)
    assert got[0] == masked  # " , " kept (BERT's clean-up would write "people, person"), [E0] kept
    assert got[1] == "m.01mp 2001-05-03 date"
    assert got[2] == '( join [E1] "young forrest" )'  # lower-cased: quoted literals lose their case
    assert join_wordpieces(["place", "of", "bi", "##rth", "st", ".", "louis"]) == "place of birth st.louis"


def test_lower_cased_labels_denormalise_to_the_gold(tok) -> None:
    text = decode_generated(tok, [tok(LF)["input_ids"]])[0]
    assert text == LF.lower() and text != LF
    assert denormalize_sexpr(text, invert_labels(LABELS)) == SEXPR
