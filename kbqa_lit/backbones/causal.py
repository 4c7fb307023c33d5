"""Causal-LM backbone factory: the tokenizer and the decoder-only network of TFS-KBQA and Keqing's decomposer.

Same code path on a laptop and on a GPU node:

- **From a name or a folder** (``meta-llama/Llama-2-7b-hf``, a merged model written by
  ``kbqa lora merge``): :func:`build_causal_tokenizer` loads the tokenizer with
  :class:`~transformers.AutoTokenizer` and :func:`build_causal_lm` loads the network with
  :class:`~transformers.AutoModelForCausalLM`. A local folder is loaded with
  ``local_files_only=True`` (no network); a hub name follows the usual Hugging Face cache.
  LLaMA tokenizers have no padding token: the ``<unk>`` token pads (never the end token, whose
  loss is learned), so no token is added and the embeddings keep their pretrained shape.
- **Built in code** (tests and the CPU default): a byte-level BPE tokenizer trained on the given
  texts (``<unk>`` = 0, ``<s>`` = 1, ``</s>`` = 2, ``<pad>`` = 3; no token is ever unknown, and
  ``decode(encode(text)) == text``), cached under ``cache_dir/bpe-<hash>``, and a LLaMA built
  from :data:`TINY_LLAMA` (2 layers, hidden 64, 4 heads, intermediate 128) whose random weights
  are drawn from ``init_seed`` — so the same config and seed give the same base everywhere, and
  an adapter-only checkpoint is enough to rebuild the model.

Tokenizers built here add no special tokens on ``encode``; the instruction encoder adds ``<s>``
and ``</s>`` itself, the same way for a hub tokenizer (called with ``add_special_tokens=False``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from kbqa_lit.backbones.common import load_source, save_tokenizer_atomically, texts_fingerprint
from kbqa_lit.errors import check_choice

log = logging.getLogger(__name__)

#: The tiny LLaMA of tests and the CPU configs (≈ 0.2 M parameters besides the embeddings).
TINY_LLAMA: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}

UNK, BOS, EOS, PAD = "<unk>", "<s>", "</s>", "<pad>"
_TOKENIZER_FORMAT = 1  # bump when the trained tokenizer's recipe changes (invalidates caches)
_NEW_DTYPE_KWARG = int(transformers.__version__.split(".")[0]) >= 5
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """Map ``"bfloat16"``/``"float16"``/``"float32"`` (or a dtype, or ``None``) to a torch dtype."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return None
    return _DTYPES[check_choice("dtype", dtype, (*_DTYPES, "auto"))]


def train_causal_tokenizer(texts: Iterable[str], vocab_size: int = 2000) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer (no caching).

    Args:
        texts: Training texts (prompts and responses).
        vocab_size: Target vocabulary size (the trainer may stop below it on small corpora).

    Returns:
        A fast tokenizer with ``<unk>`` = 0, ``<s>`` = 1, ``</s>`` = 2, ``<pad>`` = 3 that adds no
        special tokens on its own.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[UNK, BOS, EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((t for t in texts if t), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=UNK,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        clean_up_tokenization_spaces=False,
        model_max_length=4096,
    )


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """Give a tokenizer without a padding token one, without adding tokens (``<unk>``, else ``</s>``)."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.unk_token if tokenizer.unk_token is not None else tokenizer.eos_token
    return tokenizer


def build_causal_tokenizer(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    train_texts: Iterable[str] | None = None,
    vocab_size: int = 2000,
    cache_dir: str | Path | None = None,
) -> PreTrainedTokenizerBase:
    """Load or train the tokenizer of a causal LM.

    Args:
        name_or_path: A hub name (``meta-llama/Llama-2-7b-hf``) or a local folder saved with
            ``save_pretrained``. ``None`` trains a byte-level BPE tokenizer on ``train_texts``.
        train_texts: Texts to train on when ``name_or_path`` is ``None``.
        vocab_size: Target vocabulary size of a trained tokenizer.
        cache_dir: Where a trained tokenizer is cached (``<cache_dir>/bpe-<hash>``, keyed by the
            texts and ``vocab_size``); ``None`` trains without caching.

    Returns:
        The tokenizer, with a padding token and a beginning and end token.

    Raises:
        ValueError: When neither ``name_or_path`` nor non-empty ``train_texts`` is given, or the
            tokenizer has no end token.
    """
    if name_or_path is not None:
        path, local = load_source(name_or_path)
        tok = AutoTokenizer.from_pretrained(path, local_files_only=local)
    else:
        texts = [t for t in (train_texts or ()) if t]
        if not texts:
            raise ValueError("build_causal_tokenizer needs a name/path or non-empty train_texts")
        target = (
            Path(cache_dir) / f"bpe-{texts_fingerprint([_TOKENIZER_FORMAT, vocab_size], texts)}" if cache_dir else None
        )
        if target is not None and (target / "tokenizer.json").is_file():
            log.info("loading cached tokenizer from %s", target)
            tok = AutoTokenizer.from_pretrained(str(target), local_files_only=True)
        else:
            tok = train_causal_tokenizer(texts, vocab_size)
            if target is not None:
                save_tokenizer_atomically(tok, target)
                log.info("trained a %d-token tokenizer, cached in %s", len(tok), target)
    if tok.eos_token_id is None:
        raise ValueError(f"the tokenizer {name_or_path or '(trained)'} has no end-of-sequence token")
    return ensure_pad_token(tok)


def tiny_llama_config(tokenizer: PreTrainedTokenizerBase | None = None, **overrides: Any) -> LlamaConfig:
    """A :class:`~transformers.LlamaConfig` from :data:`TINY_LLAMA`, sized and wired to ``tokenizer``.

    Args:
        tokenizer: Gives ``vocab_size`` (``len(tokenizer)``) and the bos/eos/pad ids.
        **overrides: Any LLaMA config field (``hidden_size``, ``num_hidden_layers``...); wins.
    """
    fields: dict[str, Any] = dict(TINY_LLAMA)
    if tokenizer is not None:
        fields.update(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    fields.update(overrides)
    return LlamaConfig(**fields)


def build_causal_lm(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    torch_dtype: str | torch.dtype | None = None,
    init_seed: int = 0,
) -> PreTrainedModel:
    """Load or build the decoder-only network.

    Args:
        name_or_path: A hub name or a local folder (``AutoModelForCausalLM.from_pretrained``);
            ``None`` builds a LLaMA from ``config`` with fresh weights.
        config: With ``name_or_path``: config fields overriding the pretrained ones. Without: LLaMA
            config fields on top of :data:`TINY_LLAMA` (``vocab_size`` defaults to
            ``len(tokenizer)``).
        tokenizer: The tokenizer the model will read; a larger vocabulary grows the embeddings,
            and its bos/eos/pad ids are copied into the (generation) config.
        torch_dtype: Weight dtype (``"bfloat16"`` halves a 7B model to ≈ 13.5 GB); ``None`` keeps
            the checkpoint's (or float32 for a built model).
        init_seed: Seed of the random weights of a built model (the global RNG is left untouched).

    Returns:
        The causal LM.
    """
    dtype = resolve_dtype(torch_dtype)
    overrides = dict(config or {})
    if name_or_path is not None:
        path, local = load_source(name_or_path)
        kwargs: dict[str, Any] = dict(overrides)
        if dtype is not None:  # ``torch_dtype`` before transformers 4.56, ``dtype`` since
            kwargs["dtype" if _NEW_DTYPE_KWARG else "torch_dtype"] = dtype
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=local, **kwargs)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(init_seed)
            model = LlamaForCausalLM(tiny_llama_config(tokenizer, **overrides))
        if dtype is not None:
            model = model.to(dtype)
    if tokenizer is not None:
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer))
            model.kbqa_resized_vocab = name_or_path is not None  # new rows an adapter must carry
        wire_causal_ids(model, tokenizer)
    return model


def wire_causal_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
    """Copy the tokenizer's bos/eos/pad ids into the model config and its generation config."""
    gen = model.generation_config
    for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = getattr(tokenizer, name)
        if value is not None:
            setattr(model.config, name, value)
            setattr(gen, name, value)


__all__ = [
    "TINY_LLAMA",
    "build_causal_lm",
    "build_causal_tokenizer",
    "ensure_pad_token",
    "resolve_dtype",
    "tiny_llama_config",
    "train_causal_tokenizer",
    "wire_causal_ids",
]
