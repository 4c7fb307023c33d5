"""What the GPU check's parts share: model shapes, the synthetic world, randomly initialised model folders.

No weights can be downloaded here, so every model is built from the shape of its real config
(t5-base, bert-base-uncased, LLaMA-2-7B/13B, all-MiniLM-L6-v2) with random weights and written by
``save_pretrained`` into a local folder with a tokenizer trained on the synthetic world. The parts
then load those folders exactly as a user's run loads a downloaded model (``from_pretrained`` of a
folder): the code path real weights take. ``--tiny`` swaps in tiny shapes of the same classes.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kbqa_lit.cli import main as kbqa

ROOT = Path(__file__).resolve().parent.parent

#: Real shapes (the public configs of the models the shipped YAMLs name).
T5_BASE = {"d_model": 768, "d_ff": 3072, "num_layers": 12, "num_decoder_layers": 12, "num_heads": 12, "d_kv": 64}
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
MINILM_L6 = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536}
LLAMA2_7B = {
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
}
LLAMA2_13B = {
    **LLAMA2_7B,
    "hidden_size": 5120,
    "intermediate_size": 13824,
    "num_hidden_layers": 40,
    "num_attention_heads": 40,
    "num_key_value_heads": 40,
}
#: TinyLlama-1.1B's shape (LLaMA-2 architecture, grouped-query attention): Keqing's decomposer in the check.
LLAMA_1B = {
    **LLAMA2_7B,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 22,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
}
#: Vocabulary sizes of the real checkpoints (the trained tokenizers here are smaller; the extra rows stay).
VOCAB = {"t5": 32128, "bert": 30522, "llama": 32000}

TINY_T5_SHAPE = {"d_model": 64, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4, "d_kv": 16}
TINY_BERT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}
TINY_LLAMA_SHAPE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 1024,
    "rms_norm_eps": 1e-5,
}
TINY_VOCAB = {"t5": 3000, "bert": 3000, "llama": 3000}


@dataclass
class Context:
    """Where a part writes and which shapes and device it uses.

    Attributes:
        out: The check's output folder (``<out>/<part>/`` per part, ``<out>/assets/`` shared).
        tiny: Tiny shapes (the CPU self-test) instead of the real ones.
        device: ``cuda`` or ``cpu``.
    """

    out: Path
    tiny: bool
    device: str

    @property
    def gpu(self) -> bool:
        """Whether the parts run on a CUDA device."""
        return self.device == "cuda"

    @property
    def assets(self) -> Path:
        """Folder of the world, its store and the model folders (built once, reused by later parts)."""
        return self.out / "assets"

    def part_dir(self, part: str) -> Path:
        """A part's own folder (emptied first)."""
        folder = self.out / part
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    @property
    def world(self) -> Path:
        """The synthetic world (train/dev/test JSON lines, ``kb.nt``, ``schema.json``), built on first use."""
        world = self.assets / "world"
        if not (world / "test.jsonl").is_file():
            run_kbqa(["data", "synth", "--out", str(world), "--seed", "0", "--size", "small"])
        return world

    @property
    def store(self) -> Path:
        """The world's embedded Oxigraph store, built on first use."""
        store = self.assets / "kb"
        if not (store / "kbqa_store.json").is_file():
            run_kbqa(["kb", "build", "--format", "nt", "--store", str(store), str(self.world / "kb.nt")])
        return store


def run_kbqa(args: list[str]) -> None:
    """Run a ``kbqa`` tool command in this process; a non-zero status raises."""
    status = kbqa(args)
    if status:
        raise RuntimeError(f"kbqa {' '.join(args)} exited with status {status}")


def world_texts(world: Path) -> list[str]:
    """Questions and S-expressions of the world's training split (tokenizer training texts)."""
    texts: list[str] = []
    with (world / "train.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            texts.extend(t for t in (row.get("question"), row.get("s_expression")) if t)
    return texts


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """Build modules with ``dtype`` parameters (restores the previous default)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _finish(folder: Path, model: Any, tokenizer: Any, started: float, extra: dict[str, Any]) -> dict[str, Any]:
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    params = sum(p.numel() for p in model.parameters())
    info = {"parameters": params, "build_and_save_s": round(time.perf_counter() - started, 2), **extra}
    (tmp / "gpu_check_model.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return info


def model_info(folder: Path) -> dict[str, Any]:
    """What :func:`_finish` recorded about a built folder."""
    return json.loads((folder / "gpu_check_model.json").read_text(encoding="utf-8"))


def t5_folder(ctx: Context, tokenizer: Any) -> Path:
    """A t5-base-shaped (or tiny) T5 with random weights and ``tokenizer``, saved as a model folder."""
    from transformers import T5Config, T5ForConditionalGeneration

    folder = ctx.assets / ("t5-tiny" if ctx.tiny else "t5-base")
    if (folder / "gpu_check_model.json").is_file():
        return folder
    started = time.perf_counter()
    shape = TINY_T5_SHAPE if ctx.tiny else T5_BASE
    vocab = max((TINY_VOCAB if ctx.tiny else VOCAB)["t5"], len(tokenizer))
    pad = tokenizer.pad_token_id
    config = T5Config(
        **shape,
        vocab_size=vocab,
        pad_token_id=pad,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=pad,
        feed_forward_proj="relu",
    )
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config)
    _finish(folder, model, tokenizer, started, {"shape": "tiny" if ctx.tiny else "t5-base"})
    return folder


def bert_folder(ctx: Context, tokenizer: Any, minilm: bool = False) -> Path:
    """A bert-base-shaped (or all-MiniLM-L6-v2-shaped, or tiny) BERT encoder folder with random weights."""
    from transformers import BertConfig, BertModel

    name = "bert-tiny" if ctx.tiny else ("minilm-l6" if minilm else "bert-base")
    folder = ctx.assets / name
    if (folder / "gpu_check_model.json").is_file():
        return folder
    started = time.perf_counter()
    shape = TINY_BERT if ctx.tiny else (MINILM_L6 if minilm else BERT_BASE)
    vocab = max((TINY_VOCAB if ctx.tiny else VOCAB)["bert"], len(tokenizer))
    torch.manual_seed(0)
    model = BertModel(BertConfig(**shape, vocab_size=vocab, pad_token_id=tokenizer.pad_token_id or 0))
    _finish(folder, model, tokenizer, started, {"shape": name})
    return folder


def llama_folder(ctx: Context, size: str) -> Path:
    """A LLaMA-``size``-shaped (``1b``, ``7b`` or ``13b``; tiny under ``--tiny``) causal LM folder in bfloat16.

    The weights are drawn on the check's device (seconds on a GPU, where the CPU would take
    minutes for 7B parameters) and saved in bfloat16, as the hub's LLaMA-2 checkpoints are half
    precision. The tokenizer is a byte-level BPE trained on the world's questions.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    from kbqa_lit.backbones.causal import build_causal_tokenizer

    name = "llama-tiny" if ctx.tiny else f"llama-{size}"
    folder = ctx.assets / name
    if (folder / "gpu_check_model.json").is_file():
        return folder
    started = time.perf_counter()
    tokenizer = build_causal_tokenizer(train_texts=world_texts(ctx.world), vocab_size=2000)
    shape = TINY_LLAMA_SHAPE if ctx.tiny else {"1b": LLAMA_1B, "7b": LLAMA2_7B, "13b": LLAMA2_13B}[size]
    vocab = max((TINY_VOCAB if ctx.tiny else VOCAB)["llama"], len(tokenizer))
    config = LlamaConfig(
        **shape,
        vocab_size=vocab,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    with default_dtype(torch.bfloat16), torch.device(ctx.device):
        model = LlamaForCausalLM(config)
    info = _finish(folder, model, tokenizer, started, {"shape": name})
    del model
    if ctx.gpu:
        torch.cuda.empty_cache()
    print(f"built {folder} ({info['parameters'] / 1e9:.2f} B parameters, {info['build_and_save_s']} s)", flush=True)
    return folder


def folder_gib(folder: Path) -> float:
    """Size of a folder's files in GiB."""
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1024**3, 3)
