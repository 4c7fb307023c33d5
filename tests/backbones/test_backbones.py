from __future__ import annotations

import socket
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from kbqa_lit.backbones import seq2seq as backbones
from kbqa_lit.backbones.seq2seq import SPECIAL_TOKENS, add_special_tokens, build_seq2seq, build_tokenizer

LF = "( join ( reverse [ people , person , place of birth ] ) [ Ada Lovelace ] )"
TEXTS = [
    "Where was Ada Lovelace born?",
    "Which country was Alan Turing born in?",
    "How many films did Grace Hopper direct?",
    "[SUBQ] where was Ada Lovelace born? [ANS] London",
    LF,
    "( count ( join [ film , film , directed by ] [ Grace Hopper ] ) )",
    "London | Paris | Rome",
] * 5


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tok")


@pytest.fixture(scope="module")
def tok(tok_dir: Path):
    return build_tokenizer(train_texts=TEXTS, vocab_size=120, cache_dir=tok_dir)


def test_trained_tokenizer_is_t5_style(tok) -> None:
    assert tok.pad_token_id == 0 and tok.eos_token == "</s>" and tok.unk_token == "<unk>"
    ids = tok(LF)["input_ids"]
    assert ids[-1] == tok.eos_token_id and tok.pad_token_id not in ids and tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True) == LF


def test_special_tokens_added_once(tok) -> None:
    specials = tok.all_special_tokens
    for t in SPECIAL_TOKENS:
        assert specials.count(t) == 1
    n = len(tok)
    assert add_special_tokens(tok) == 0 and len(tok) == n
    assert tok.all_special_tokens == specials
    ids = tok("[SUBQ] a [ANS] b", add_special_tokens=False)["input_ids"]
    assert tok.convert_tokens_to_ids("[SUBQ]") in ids and tok.convert_tokens_to_ids("[ANS]") in ids
    assert "[SUBQ]" not in tok.decode(ids, skip_special_tokens=True)


def test_trained_tokenizer_is_cached(tok, tok_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (entry,) = [p for p in tok_dir.iterdir() if p.name.startswith("bpe-")]
    assert (entry / "tokenizer.json").is_file()

    def boom(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(backbones, "train_subword_tokenizer", boom)
    again = build_tokenizer(train_texts=TEXTS, vocab_size=120, cache_dir=tok_dir)
    assert again.get_vocab() == tok.get_vocab() and again.all_special_tokens == tok.all_special_tokens
    monkeypatch.undo()
    build_tokenizer(train_texts=TEXTS, vocab_size=100, cache_dir=tok_dir)  # another key
    assert len([p for p in tok_dir.iterdir() if p.name.startswith("bpe-")]) == 2


def test_round_trip_through_save_pretrained(tok, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tok.save_pretrained(str(tmp_path))

    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    for loaded in (AutoTokenizer.from_pretrained(str(tmp_path)), build_tokenizer(str(tmp_path))):
        assert len(loaded) == len(tok)
        assert loaded(LF)["input_ids"] == tok(LF)["input_ids"]
        assert loaded.all_special_tokens == tok.all_special_tokens
        assert loaded.pad_token_id == 0 and loaded.eos_token_id == tok.eos_token_id


def test_build_tokenizer_needs_a_source() -> None:
    with pytest.raises(ValueError):
        build_tokenizer(train_texts=[])


def test_tiny_t5_from_config(tok) -> None:
    model = build_seq2seq(tokenizer=tok)
    cfg = model.config
    assert (cfg.d_model, cfg.d_ff, cfg.num_layers, cfg.num_decoder_layers, cfg.num_heads, cfg.d_kv) == (
        64,
        128,
        2,
        2,
        4,
        16,
    )
    assert cfg.vocab_size == len(tok) == model.get_input_embeddings().num_embeddings
    assert cfg.decoder_start_token_id == tok.pad_token_id == model.generation_config.decoder_start_token_id
    assert model.generation_config.eos_token_id == tok.eos_token_id
    small = build_seq2seq(config={"d_model": 32, "num_layers": 1, "num_heads": 2}, tokenizer=tok)
    assert (small.config.d_model, small.config.num_layers, small.config.num_decoder_layers) == (32, 1, 1)


def test_embeddings_resized_and_local_dir_offline(tok, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = build_seq2seq(config={"vocab_size": len(tok) - 4}, tokenizer=None)
    model.save_pretrained(str(tmp_path))

    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    loaded = build_seq2seq(str(tmp_path), tokenizer=tok)
    assert loaded.get_input_embeddings().num_embeddings == len(tok)
    bigger = build_seq2seq(config={"vocab_size": len(tok) + 8}, tokenizer=tok)  # never shrunk
    assert bigger.get_input_embeddings().num_embeddings == len(tok) + 8
