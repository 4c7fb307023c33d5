"""Decoding under a character automaton: token texts read in context, masks per state, real generation.

A byte-level BPE tokenizer trained here (the project's tiny causal LMs use one) and an untrained tiny
LLaMA: whatever the weights prefer, the output is a string the automaton accepts.
"""

from __future__ import annotations

from collections.abc import Hashable

import pytest
import torch
from transformers import LogitsProcessorList

from kbqa_lit.backbones.causal import build_causal_lm, train_causal_tokenizer
from kbqa_lit.decoding.char_constraint import CharConstraintProcessor, token_texts

WORDS = ("yes", "no", "yes indeed")


class Words:
    """Accepts exactly one of ``WORDS`` (a trie walk over characters)."""

    def start(self) -> Hashable:
        return ""

    def step(self, state: Hashable, char: str) -> Hashable | None:
        text = f"{state}{char}"
        return text if any(w.startswith(text) for w in WORDS) else None

    def accepts(self, state: Hashable) -> bool:
        return state in WORDS


@pytest.fixture(scope="module")
def tok():
    t = train_causal_tokenizer(["yes indeed no maybe yes no " * 20, "answer: yes, no; maybe!"] * 5, vocab_size=300)
    t.padding_side = "left"  # as HFCausalLMBackend pads: every prompt ends where generation starts
    return t


def test_token_texts_read_a_byte_level_space_as_a_space(tok):
    texts = token_texts(tok)
    indeed = tok(" indeed", add_special_tokens=False)["input_ids"]
    assert "".join(texts[i] for i in indeed) == " indeed"
    assert texts[tok.eos_token_id] == ""  # special tokens are never text


def test_each_states_mask_allows_exactly_the_tokens_that_stay_inside(tok):
    proc = CharConstraintProcessor(tok, Words(), prompt_length=0)
    mask, moves = proc.table(Words(), "")
    allowed = {proc.texts[i] for i in moves}
    assert allowed and all(any(w.startswith(t) for w in WORDS) for t in allowed)
    assert not mask[tok.eos_token_id]  # nothing written yet: not complete
    done, _ = proc.table(Words(), "no")
    assert done[tok.eos_token_id]  # "no" is complete
    assert proc.table(Words(), "yes")[0][tok.eos_token_id] and proc.table(Words(), "yes")[1]  # or goes on


def test_an_untrained_model_writes_only_what_the_automaton_accepts(tok):
    lm = build_causal_lm(None, tokenizer=tok, init_seed=0).eval()
    prompt = tok(["answer:", "answer: maybe"], return_tensors="pt", padding=True)
    n = prompt["input_ids"].shape[1]
    with torch.inference_mode():
        free = lm.generate(**prompt, max_new_tokens=12, do_sample=False, pad_token_id=tok.pad_token_id)
        fenced = lm.generate(
            **prompt,
            max_new_tokens=12,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            logits_processor=LogitsProcessorList([CharConstraintProcessor(tok, [Words(), Words()], n)]),
        )
    free_texts = tok.batch_decode(free[:, n:], skip_special_tokens=True)
    assert any(t not in WORDS for t in free_texts)  # left to itself it writes other things
    assert all(t in WORDS for t in tok.batch_decode(fenced[:, n:], skip_special_tokens=True))


def test_rows_need_their_automata():
    with pytest.raises(ValueError, match="at least one automaton"):
        CharConstraintProcessor(train_causal_tokenizer(["a b"] * 3, vocab_size=260), [], 0)
