from __future__ import annotations

import json

import pytest
import torch

from kbqa_lit.backbones.causal import build_causal_lm, train_causal_tokenizer
from kbqa_lit.llm.backends import HFCausalLMBackend as LazyExport
from kbqa_lit.llm.hf_backend import HFCausalLMBackend, cut_at_stop
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt

QUESTIONS = [
    "Who directed Golden Compass?",
    "What is the nationality of the director of a film with a much longer title than the others?",
    "Where?",
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A tiny random LLaMA and its trained tokenizer, saved like a hub checkpoint."""
    out = tmp_path_factory.mktemp("tiny_llama")
    prompt = DecompositionPrompt("synthetic", num_cases=1)
    tok = train_causal_tokenizer([prompt.render(q) for q in QUESTIONS] * 3, vocab_size=300)
    lm = build_causal_lm(None, tokenizer=tok, config={"initializer_range": 0.5}, init_seed=3)  # sharp logits
    tok.save_pretrained(out)
    lm.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def prompts():
    """Prompts of different lengths with different last words (a random model mostly reads those)."""
    prompt = DecompositionPrompt("synthetic", num_cases=1)
    return [prompt.render(q) + q.split()[-1] for q in QUESTIONS]


def test_batched_left_padded_generation_equals_one_by_one(tiny_dir, prompts):
    backend = HFCausalLMBackend(str(tiny_dir), max_new_tokens=10, batch_size=3, stop=[], device="cpu")
    batched = backend.generate(prompts)
    single = [backend.generate([p])[0] for p in prompts]
    assert batched == single
    assert len(set(batched)) > 1  # the prompts' ends matter: padding did not hide them


def test_only_new_tokens_are_returned(tiny_dir, prompts):
    backend = HFCausalLMBackend(str(tiny_dir), max_new_tokens=7, batch_size=2, stop=[], device="cpu")
    texts = backend.generate(prompts)
    backend.load()
    tok = backend._tok
    for prompt, text in zip(prompts, texts, strict=True):
        assert "Decompose the question" not in text and prompt[-30:] not in text
    # the same greedy continuation as a plain generate() on the unpadded prompt
    enc = tok(prompts[1], return_tensors="pt")
    with torch.inference_mode():
        ref = backend._lm.generate(**enc, max_new_tokens=7, do_sample=False, pad_token_id=tok.pad_token_id)
    assert texts[1] == tok.decode(ref[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)


def test_stop_strings_cut_the_text(tiny_dir, prompts):
    free = HFCausalLMBackend(str(tiny_dir), max_new_tokens=12, stop=[], device="cpu").generate(prompts[:1])[0]
    assert len(free) > 3
    stop = free[2:4]
    cut = HFCausalLMBackend(str(tiny_dir), max_new_tokens=12, stop=[stop], device="cpu").generate(prompts[:1])[0]
    assert cut == free[: free.find(stop)]


def test_cut_at_stop():
    assert (
        cut_at_stop("[SUBQ] a [ANS] b\n\nDecompose the question", ["Decompose the question", "\n\n"])
        == "[SUBQ] a [ANS] b"
    )
    assert cut_at_stop("abc", []) == "abc" and cut_at_stop("abc", [""]) == "abc"


def test_identity_and_lazy_loading(tiny_dir):
    backend = HFCausalLMBackend(str(tiny_dir), max_new_tokens=5, torch_dtype="float32")
    assert backend._lm is None  # nothing loaded until the first prompt
    ident = json.loads(backend.identity)
    assert ident == {
        "kind": "hf-causal-lm",
        "model": str(tiny_dir),
        "settings": {
            "decoding": "greedy",
            "max_new_tokens": 5,
            "max_prompt_tokens": None,
            "stop": ["Decompose the question"],
            "tokenizer": None,
            "torch_dtype": "float32",
        },
    }
    assert HFCausalLMBackend(str(tiny_dir), max_new_tokens=6).identity != backend.identity
    assert LazyExport is HFCausalLMBackend
    assert backend.generate([]) == [] and backend._lm is None


def test_long_prompts_are_cut_from_the_left(tiny_dir, prompts):
    backend = HFCausalLMBackend(str(tiny_dir), max_new_tokens=4, max_prompt_tokens=16, stop=[], device="cpu")
    long_prompt = "filler words " * 200 + prompts[0]
    short_prompt = "other words " * 3 + prompts[0]
    a, b = backend.generate([long_prompt, short_prompt])
    assert a == b  # both end in the same 16 tokens
