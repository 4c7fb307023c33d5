"""The beam-search cache that leaves cross-attention in place: the same beams as ``generate``'s own cache."""

from __future__ import annotations

import torch

from kbqa_lit.backbones.beam_cache import BeamSearchCache, beam_search_cache
from kbqa_lit.backbones.causal import build_causal_lm
from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from tests.helpers.tiny import TINY_T5

TEXTS = ["( join [ film , film , directed by ] [E0] )", "who directed the film", "how many films are there"] * 10


def test_beams_equal_generates_own_cache_and_cross_attention_is_not_moved() -> None:
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    torch.manual_seed(0)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()
    enc = tok(["who directed the film", "how many films are there in all of the world", "film"], return_tensors="pt",
              padding=True)  # fmt: skip
    outs, caches = [], []
    for ours in (False, True):
        extra = beam_search_cache(model, 5) if ours else {}
        with torch.no_grad():
            out = model.generate(**enc, num_beams=5, num_return_sequences=5, max_new_tokens=12, do_sample=False,
                                 early_stopping=False, output_scores=True, return_dict_in_generate=True,
                                 **extra)  # fmt: skip
        outs.append(out)
        caches.append(extra.get("past_key_values"))
    assert torch.equal(outs[0].sequences, outs[1].sequences)
    assert torch.allclose(outs[0].sequences_scores, outs[1].sequences_scores)
    cache = caches[1]
    assert isinstance(cache, BeamSearchCache) and cache.get_seq_length() > 0
    cross = cache.cross_attention_cache.layers[0].keys  # [rows, heads, source, head_dim], rows = 3 examples x 5 beams
    for example in range(3):  # every beam of an example holds its encoder output's keys, never another example's
        block = cross[example * 5 : (example + 1) * 5]
        assert torch.equal(block, block[:1].expand_as(block))
    assert not torch.equal(cross[0], cross[5])


def test_only_encoder_decoder_beam_searches_get_it() -> None:
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    t5 = build_seq2seq(config=TINY_T5, tokenizer=tok)
    assert beam_search_cache(t5, 1) == {}  # greedy search reorders nothing
    assert isinstance(beam_search_cache(t5, 4)["past_key_values"], BeamSearchCache)
    llama = build_causal_lm(tokenizer=tok)
    assert beam_search_cache(llama, 4) == {}  # no cross-attention
