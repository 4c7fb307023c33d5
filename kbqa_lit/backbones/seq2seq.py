"""Backbone factory: the tokenizer and the seq2seq network every generator module is built on.

Two ways to get each part, with the same code on a laptop and on a GPU node:

- **From a name or a folder** (``t5-base``, ``google/flan-t5-large``, ``/models/t5-base``):
  :func:`build_tokenizer` loads it with :class:`~transformers.AutoTokenizer`,
  :func:`build_seq2seq` loads :class:`~transformers.T5ForConditionalGeneration`. A local folder is
  always loaded with ``local_files_only=True``, so no network access is attempted; a hub name
  follows the usual Hugging Face cache (``HF_HUB_OFFLINE=1`` keeps it offline).
- **Built in code** (the offline default): a ``tokenizers`` BPE model with Metaspace
  pre-tokenisation, trained on the given texts and wrapped in a fast tokenizer with T5's special
  tokens (``<pad>`` = 0, ``</s>`` = 1, ``<unk>`` = 2; ``</s>`` appended to every sequence), and a
  T5 built from a config dict (:data:`TINY_T5` unless told otherwise). A trained tokenizer is
  cached under ``cache_dir/bpe-<hash>`` (hash of the texts, vocabulary size and special
  tokens) with ``save_pretrained`` and reloaded with ``AutoTokenizer`` on the next call.

Either way the CoQ markers :data:`SPECIAL_TOKENS` are added once as special tokens (adding them
again is a no-op), and the model's embeddings are resized when the tokenizer has more tokens.

``backbone="encoder-decoder"`` gives a seq2seq model whose encoder is warm-started from a
pretrained BERT-like encoder (all-MiniLM-L6-v2 offline, ``bert-base-uncased``...) with a small
fresh decoder (:mod:`kbqa_lit.backbones.encoder_decoder`); the tokenizer is then the encoder's
(``build_tokenizer("all-MiniLM-L6-v2")`` resolves the offline folder).
"""

from __future__ import annotations

import logging
import os
import string
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from transformers import (
    AddedToken,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

from kbqa_lit.backbones.common import load_source, resolve_model_path, save_tokenizer_atomically, texts_fingerprint
from kbqa_lit.backbones.encoder_decoder import (
    build_encoder_decoder,
    encoder_decoder_from_config,
    is_saved_encoder_decoder,
    wire_encoder_decoder_ids,
)
from kbqa_lit.backbones.t5_config import TINY_T5, tiny_t5_config
from kbqa_lit.errors import check_choice

log = logging.getLogger(__name__)

#: CoQ's markers: decomposition steps, schema items, separators. Added once as special tokens.
SPECIAL_TOKENS: tuple[str, ...] = ("[SUBQ]", "[ANS]", "[SCHEMA]", "[ENT]", "[REL]", "[SEP]")


#: The seq2seq families :func:`build_seq2seq` builds.
Backbone = Literal["t5", "encoder-decoder"]
BACKBONES: tuple[str, ...] = ("t5", "encoder-decoder")

PAD, EOS, UNK = "<pad>", "</s>", "<unk>"
_TOKENIZER_FORMAT = 1  # bump when the trained tokenizer's recipe changes (invalidates caches)


def add_special_tokens(tokenizer: PreTrainedTokenizerBase, tokens: Iterable[str] = SPECIAL_TOKENS) -> int:
    """Add ``tokens`` as special tokens unless they already are; return how many were new.

    Keeps the tokenizer's existing extra special tokens (T5's ``<extra_id_N>``), so
    ``decode(..., skip_special_tokens=True)`` still drops them.
    """
    present = set(tokenizer.all_special_tokens)
    missing = [t for t in dict.fromkeys(tokens) if t not in present]
    if not missing:
        return 0
    return int(tokenizer.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False))


def train_subword_tokenizer(texts: Iterable[str], vocab_size: int = 2000) -> PreTrainedTokenizerFast:
    """Train a T5-style BPE + Metaspace tokenizer on ``texts`` (no caching, no extra tokens).

    Args:
        texts: Training texts (questions, logical forms, answers...).
        vocab_size: Target vocabulary size (the trainer may stop below it on small corpora).

    Returns:
        A fast tokenizer with ``<pad>`` = 0, ``</s>`` = 1, ``<unk>`` = 2 that appends ``</s>``.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    # BPE rather than Unigram: on a few thousand short texts the Unigram trainer keeps a tiny,
    # choppy vocabulary (measured on the synthetic world: logical forms 65 tokens vs 31 with BPE,
    # "join" as j|o|in), which costs both speed and accuracy.
    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, EOS, UNK],
        initial_alphabet=sorted(set(string.printable.strip())),
        show_progress=False,
    )
    tok.train_from_iterator((t for t in texts if t), trainer=trainer)
    eos_id = tok.token_to_id(EOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, eos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        clean_up_tokenization_spaces=False,
        model_max_length=1024,
    )


def build_tokenizer(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    train_texts: Iterable[str] | None = None,
    vocab_size: int = 2000,
    cache_dir: str | Path | None = None,
    special_tokens: Iterable[str] = SPECIAL_TOKENS,
    extra_tokens: Iterable[str] = (),
) -> PreTrainedTokenizerBase:
    """Load or train the tokenizer, with the CoQ special tokens added once.

    Args:
        name_or_path: A hub name (``t5-base``), a local folder saved with ``save_pretrained`` or
            ``all-MiniLM-L6-v2`` (the offline MiniLM folder). ``None`` trains a tokenizer on ``train_texts``.
        train_texts: Texts to train on when ``name_or_path`` is ``None``.
        vocab_size: Target vocabulary size of a trained tokenizer (before the special tokens).
        cache_dir: Where a trained tokenizer is cached (``<cache_dir>/bpe-<hash>``, keyed by
            the texts, ``vocab_size`` and the special tokens); ``None`` trains without caching.
        special_tokens: Tokens added as special tokens (default :data:`SPECIAL_TOKENS`).
        extra_tokens: Tokens added as ordinary tokens (kept by ``decode(skip_special_tokens=True)``),
            e.g. the topic-entity slots ``[E0]``...; added after loading, so caches are shared.
            They are matched before normalisation, so a lower-casing tokenizer keeps ``[E0]``.

    Returns:
        The tokenizer (a fast tokenizer when trained here).

    Raises:
        ValueError: When neither ``name_or_path`` nor non-empty ``train_texts`` is given.
    """
    special = tuple(dict.fromkeys(special_tokens))
    tok = _load_or_train_tokenizer(name_or_path, train_texts, vocab_size, cache_dir, special)
    extra = [t for t in dict.fromkeys(extra_tokens) if t not in tok.get_vocab()]
    if extra:
        tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in extra])
    return tok


def _load_or_train_tokenizer(
    name_or_path: str | os.PathLike[str] | None,
    train_texts: Iterable[str] | None,
    vocab_size: int,
    cache_dir: str | Path | None,
    special: tuple[str, ...],
) -> PreTrainedTokenizerBase:
    if name_or_path is not None:
        path, local = load_source(resolve_model_path(name_or_path))
        tok = AutoTokenizer.from_pretrained(path, local_files_only=local)
        add_special_tokens(tok, special)
        return tok
    texts = [t for t in (train_texts or ()) if t]
    if not texts:
        raise ValueError("build_tokenizer needs a name/path or non-empty train_texts")
    if cache_dir is None:
        tok = train_subword_tokenizer(texts, vocab_size)
        add_special_tokens(tok, special)
        return tok
    target = Path(cache_dir) / f"bpe-{texts_fingerprint([_TOKENIZER_FORMAT, vocab_size, list(special)], texts)}"
    if (target / "tokenizer.json").is_file():
        log.info("loading cached tokenizer from %s", target)
        tok = AutoTokenizer.from_pretrained(str(target), local_files_only=True)
        add_special_tokens(tok, special)
        return tok
    tok = train_subword_tokenizer(texts, vocab_size)
    add_special_tokens(tok, special)
    save_tokenizer_atomically(tok, target)
    log.info("trained a %d-token tokenizer, cached in %s", len(tok), target)
    return tok


def build_seq2seq(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    backbone: Backbone = "t5",
    decoder_config: Mapping[str, Any] | None = None,
) -> PreTrainedModel:
    """Load or build the seq2seq network: a T5, or an encoder-decoder warm-started from an encoder.

    Args:
        name_or_path: A hub name or a local folder (``from_pretrained``); ``None`` builds a tiny
            network from ``config`` with fresh weights. With ``backbone="encoder-decoder"`` it names
            the pretrained encoder (``all-MiniLM-L6-v2``, ``bert-base-uncased``, a folder) or a
            folder an encoder-decoder was saved to; a saved encoder-decoder folder is recognised
            whatever ``backbone`` says.
        config: With ``name_or_path``: config fields overriding the pretrained ones (e.g.
            ``{"dropout_rate": 0.2}``). Without: T5 config fields on top of :data:`TINY_T5`
            (``vocab_size`` defaults to ``len(tokenizer)``, ``decoder_start_token_id`` to the pad
            id), or BERT fields of the tiny encoder for ``backbone="encoder-decoder"``.
        tokenizer: The tokenizer the model will read; its size decides whether the embeddings
            are resized (only ever grown, so a padded pretrained vocabulary is kept).
        backbone: ``"t5"`` or ``"encoder-decoder"`` (see :mod:`kbqa_lit.backbones.encoder_decoder`).
        decoder_config: BERT config fields of the fresh decoder of ``backbone="encoder-decoder"``
            (``num_hidden_layers``, ``hidden_size``...); ignored for T5.

    Returns:
        A :class:`~transformers.T5ForConditionalGeneration` or
        :class:`~transformers.EncoderDecoderModel` whose (generation) config carries the
        tokenizer's pad/eos/decoder-start ids.

    Raises:
        ValueError: For an unknown ``backbone``.
    """
    check_choice("backbone", backbone, BACKBONES)

    if backbone == "encoder-decoder" or (name_or_path is not None and is_saved_encoder_decoder(name_or_path)):
        return build_encoder_decoder(name_or_path, config=config, decoder_config=decoder_config, tokenizer=tokenizer)
    overrides = dict(config or {})
    if name_or_path is not None:
        path, local = load_source(name_or_path)
        model = T5ForConditionalGeneration.from_pretrained(path, local_files_only=local, **overrides).train()
    else:
        model = T5ForConditionalGeneration(tiny_t5_config(tokenizer, **overrides))
    if tokenizer is not None:
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer))
        wire_generation_ids(model, tokenizer)
    return model


def seq2seq_from_config(config: Mapping[str, Any], tokenizer: PreTrainedTokenizerBase | None = None) -> PreTrainedModel:
    """A fresh network of the shape a stored ``config.to_dict()`` describes (T5 or encoder-decoder).

    Used to restore checkpoints without the pretrained weights the network was first built from.
    """
    if config.get("model_type") == "encoder-decoder":
        return encoder_decoder_from_config(config, tokenizer)
    model = T5ForConditionalGeneration(T5Config.from_dict(dict(config)))
    if tokenizer is not None:
        wire_generation_ids(model, tokenizer)
    return model


def wire_generation_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
    """Copy the tokenizer's pad/eos ids into the model config and its generation config.

    An :class:`~transformers.EncoderDecoderModel` is wired by
    :func:`~kbqa_lit.backbones.encoder_decoder.wire_encoder_decoder_ids` (``[CLS]`` starts decoding).
    """
    if model.config.model_type == "encoder-decoder":
        wire_encoder_decoder_ids(model, tokenizer)
        return
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    gen = model.generation_config
    if pad is not None:
        model.config.pad_token_id = pad
        gen.pad_token_id = pad
        if model.config.decoder_start_token_id is None:
            model.config.decoder_start_token_id = pad
        gen.decoder_start_token_id = model.config.decoder_start_token_id
    if eos is not None:
        model.config.eos_token_id = eos
        gen.eos_token_id = eos


__all__ = [
    "BACKBONES",
    "SPECIAL_TOKENS",
    "TINY_T5",
    "add_special_tokens",
    "build_seq2seq",
    "build_tokenizer",
    "seq2seq_from_config",
    "tiny_t5_config",
    "train_subword_tokenizer",
    "wire_generation_ids",
]
