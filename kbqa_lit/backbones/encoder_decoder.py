"""A seq2seq network whose encoder is warm-started from a pretrained BERT-like encoder.

:func:`build_encoder_decoder` pairs a pretrained encoder (all-MiniLM-L6-v2 offline through
:data:`~kbqa_lit.backbones.common.MINILM`, ``bert-base-uncased`` or any BERT-like hub name or
folder) with a small randomly initialised decoder — a :class:`~transformers.BertLMHeadModel` with
``is_decoder=True`` and ``add_cross_attention=True`` — in a Hugging Face
:class:`~transformers.EncoderDecoderModel`. The same call serves the laptop (MiniLM, 2 decoder
layers) and a GPU node (``bert-base-uncased``, more decoder layers through ``decoder_config``).

Choices, each made once here:

- **Vocabulary**: the encoder tokenizer's, added tokens included (the CoQ markers, the entity
  slots ``[E0]``...): the encoder's embeddings are grown to ``len(tokenizer)``; the decoder is
  built with that size.
- **Decoder size**: by default the encoder's hidden size, heads and feed-forward size with 2
  layers (:data:`DECODER_DEFAULTS`); ``decoder_config`` overrides any BERT field. A decoder of
  another hidden size reads the encoder through the projection ``EncoderDecoderModel`` adds.
- **Embeddings**: the decoder's input and output embeddings are tied (BERT's LM head); when the
  hidden sizes match they start as a copy of the encoder's pretrained word embeddings, so the
  decoder begins with the encoder's lexicon instead of noise.
- **Special ids**: ``[CLS]`` starts decoding, ``[SEP]`` ends it, ``[PAD]`` pads
  (:func:`wire_encoder_decoder_ids`); a BERT tokenizer writes targets as ``[CLS] … [SEP]``, so
  the leading ``[CLS]`` is dropped from the labels (:func:`drop_start_token`) — the decoder gets
  it as its start token.
- **Decoding**: :func:`decode_generated` joins WordPiece tokens without BERT's clean-up (which
  writes ``people, person`` and breaks the `` , `` separators of normalised S-expressions) and
  glues ``.``/``-``/``:``/``/`` and quotes back to their neighbours (``m . 01mp`` → ``m.01mp``,
  ``2001 - 05 - 03`` → ``2001-05-03``). A lower-casing tokenizer (MiniLM, ``bert-base-uncased``)
  still lower-cases what it writes: entity labels map back through the case-insensitive match of
  :func:`~kbqa_lit.kb.lf.denormalize.denormalize_sexpr`; quoted string literals and upper-case schema
  segments do not (use a cased encoder for data that has them).
- **Unused weights**: the encoder's pooler is dropped (an encoder-decoder never reads it; unused
  parameters would trouble DDP).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from transformers import (
    AutoConfig,
    BertConfig,
    BertLMHeadModel,
    EncoderDecoderConfig,
    EncoderDecoderModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from kbqa_lit.backbones.common import load_source, resolve_model_path
from kbqa_lit.backbones.encoders import build_encoder

#: Decoder fields that differ from the encoder's by default (the rest are copied from it).
DECODER_DEFAULTS: dict[str, Any] = {"num_hidden_layers": 2}
#: Encoder fields a default decoder copies.
_COPIED_FIELDS = (
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "layer_norm_eps",
    "initializer_range",
)
_GLUE = re.compile(r"(?<=\w) ([.\-:/]) (?=\w)")
_QUOTED = re.compile(r'" ([^"]*?) "')


def decoder_config_for(
    encoder_config: Any,
    vocab_size: int,
    pad_token_id: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> BertConfig:
    """The :class:`~transformers.BertConfig` of a fresh decoder reading ``encoder_config``'s states.

    Args:
        encoder_config: The encoder's config (any BERT-like config; missing fields keep BERT's defaults).
        vocab_size: The decoder's vocabulary (``len(tokenizer)``).
        pad_token_id: The padding id.
        overrides: BERT fields on top of :data:`DECODER_DEFAULTS` and the copied encoder fields.
    """
    fields: dict[str, Any] = {k: getattr(encoder_config, k) for k in _COPIED_FIELDS if hasattr(encoder_config, k)}
    fields.update(DECODER_DEFAULTS)
    fields.update(overrides or {})
    fields.update(vocab_size=vocab_size, is_decoder=True, add_cross_attention=True, tie_word_embeddings=True)
    if pad_token_id is not None:
        fields["pad_token_id"] = pad_token_id
    return BertConfig(**fields)


def is_saved_encoder_decoder(name_or_path: str | os.PathLike[str]) -> bool:
    """Whether ``name_or_path`` is a local folder holding a saved :class:`~transformers.EncoderDecoderModel`."""
    path, local = load_source(name_or_path)
    if not local:
        return False
    try:
        return AutoConfig.from_pretrained(path, local_files_only=True).model_type == "encoder-decoder"
    except (OSError, ValueError):
        return False


def build_encoder_decoder(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    decoder_config: Mapping[str, Any] | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> EncoderDecoderModel:
    """Warm-start an encoder-decoder from a pretrained encoder, or reload a saved one.

    Args:
        name_or_path: The pretrained encoder: a hub name (``bert-base-uncased``), a local folder,
            or ``all-MiniLM-L6-v2`` (offline). A folder a :class:`~transformers.EncoderDecoderModel`
            was saved to is reloaded as it is. ``None`` builds a tiny BERT encoder (tests).
        config: Encoder config fields: overrides of the pretrained config, or on top of the tiny BERT.
        decoder_config: BERT fields of the fresh decoder (see :func:`decoder_config_for`).
        tokenizer: The encoder's tokenizer with every added token; gives the vocabulary and the
            special ids. Without it the encoder's vocabulary is used and the ids are left unset.

    Returns:
        The :class:`~transformers.EncoderDecoderModel`, its ids wired to ``tokenizer``.
    """
    if name_or_path is not None and is_saved_encoder_decoder(resolve_model_path(name_or_path)):
        path, _ = load_source(name_or_path)
        model = EncoderDecoderModel.from_pretrained(path, local_files_only=True)
        return _finish(model, tokenizer)
    encoder = build_encoder(None if name_or_path is None else str(name_or_path), config, tokenizer, tiny="bert")
    vocab = len(tokenizer) if tokenizer is not None else encoder.get_input_embeddings().num_embeddings
    pad = tokenizer.pad_token_id if tokenizer is not None else encoder.config.pad_token_id
    decoder = BertLMHeadModel(decoder_config_for(encoder.config, vocab, pad, decoder_config))
    enc_emb, dec_emb = encoder.get_input_embeddings().weight, decoder.get_input_embeddings().weight
    if enc_emb.shape == dec_emb.shape:
        with torch.no_grad():
            dec_emb.copy_(enc_emb)  # tied to the LM head: the output embeddings start pretrained too
    model = EncoderDecoderModel(encoder=encoder, decoder=decoder)
    return _finish(model, tokenizer)


def encoder_decoder_from_config(
    config: Mapping[str, Any], tokenizer: PreTrainedTokenizerBase | None = None
) -> EncoderDecoderModel:
    """A fresh encoder-decoder of the shape a stored ``config.to_dict()`` describes (no pretrained files)."""
    model = EncoderDecoderModel(EncoderDecoderConfig.from_dict(dict(config)))
    return _finish(model, tokenizer)


def _finish(model: EncoderDecoderModel, tokenizer: PreTrainedTokenizerBase | None) -> EncoderDecoderModel:
    if getattr(model.encoder, "pooler", None) is not None:
        model.encoder.pooler = None
    if tokenizer is not None:
        n = len(tokenizer)
        for part in (model.encoder, model.decoder):
            if n > part.get_input_embeddings().num_embeddings:
                part.resize_token_embeddings(n)
        wire_encoder_decoder_ids(model, tokenizer)
    return model.train()  # from_pretrained leaves the encoder in eval mode (no dropout while training)


def special_ids(tokenizer: PreTrainedTokenizerBase) -> tuple[int, int, int]:
    """``(decoder start, eos, pad)`` ids: ``[CLS]``/``[SEP]``/``[PAD]`` for BERT tokenizers.

    A tokenizer without ``[CLS]`` starts with its bos (else pad) token and ends with its eos
    (else sep) token.

    Raises:
        ValueError: When the tokenizer has no padding, start or end token.
    """
    pad = tokenizer.pad_token_id
    if tokenizer.cls_token_id is not None:
        start, eos = tokenizer.cls_token_id, tokenizer.sep_token_id
    else:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else pad
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    if start is None or eos is None or pad is None:
        raise ValueError("the encoder-decoder needs a tokenizer with pad, start ([CLS]/bos) and end ([SEP]/eos) tokens")
    return int(start), int(eos), int(pad)


def wire_encoder_decoder_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
    """Copy the start/eos/pad ids of ``tokenizer`` into the model, decoder and generation configs."""
    start, eos, pad = special_ids(tokenizer)
    for cfg in (model.config, model.config.decoder):
        cfg.decoder_start_token_id = start
        cfg.pad_token_id = pad
        cfg.eos_token_id = eos
    model.config.decoder.bos_token_id = start
    gen = model.generation_config
    gen.decoder_start_token_id = start
    gen.bos_token_id = start
    gen.pad_token_id = pad
    gen.eos_token_id = eos


def drop_start_token(labels: torch.Tensor, start_id: int) -> torch.Tensor:
    """Drop a leading decoder-start token (a BERT tokenizer's ``[CLS]``) from ``labels``.

    The first column goes when every row with a label starts with ``start_id`` (rows without
    gold are all ``-100``); otherwise ``labels`` is returned unchanged.
    """
    if labels.shape[1] < 2:
        return labels
    first = labels[:, 0]
    if bool((first == start_id).any()) and bool(((first == start_id) | (first == -100)).all()):
        return labels[:, 1:].contiguous()
    return labels


def _wordpiece(tokenizer: PreTrainedTokenizerBase) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None)
    return type(decoder).__name__ == "WordPiece"


def join_wordpieces(tokens: Sequence[str], prefix: str = "##") -> str:
    """Text of WordPiece ``tokens``: pieces joined to their word, words by one space, no BERT clean-up.

    Then ``.``, ``-``, ``:`` and ``/`` between two word characters are glued to both
    (``m . 01mp`` → ``m.01mp``) and quoted text loses its inner padding (``" a b "`` → ``"a b"``).
    """
    words: list[str] = []
    for tok in tokens:
        if tok.startswith(prefix) and words:
            words[-1] += tok[len(prefix) :]
        else:
            words.append(tok)
    text = " ".join(words)
    text = _GLUE.sub(r"\1", text)
    return _QUOTED.sub(r'"\1"', text)


def decode_generated(
    tokenizer: PreTrainedTokenizerBase, sequences: torch.Tensor | Sequence[Sequence[int]]
) -> list[str]:
    """Decode generated ids, special tokens skipped; WordPiece tokenizers through :func:`join_wordpieces`."""
    if not _wordpiece(tokenizer):
        return tokenizer.batch_decode(sequences, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    prefix = getattr(tokenizer.backend_tokenizer.decoder, "prefix", "##")
    specials = set(tokenizer.all_special_ids)
    out = []
    for seq in sequences:
        ids = [int(i) for i in seq if int(i) not in specials]
        out.append(join_wordpieces(tokenizer.convert_ids_to_tokens(ids), prefix))
    return out


__all__ = [
    "DECODER_DEFAULTS",
    "build_encoder_decoder",
    "decode_generated",
    "decoder_config_for",
    "drop_start_token",
    "encoder_decoder_from_config",
    "is_saved_encoder_decoder",
    "join_wordpieces",
    "special_ids",
    "wire_encoder_decoder_ids",
]
