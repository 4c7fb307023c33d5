"""The beam-search cache that leaves cross-attention in place: the same beams as ``generate``'s own cache."""

from __future__ import annotations

import pytest
import torch

from kbqa_lit.backbones.beam_cache import (
    GROUPED,
    BeamSearchCache,
    SearchProgress,
    SharedCrossCache,
    beam_grouped_attention,
    beam_search,
    beam_search_cache,
)
from kbqa_lit.backbones.causal import build_causal_lm
from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from tests.helpers.run_if import run_if
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


def test_one_cross_attention_copy_per_example_gives_the_same_beams() -> None:
    """``beam_search``: grouped attention over one cross-attention row per example, same sequences and scores."""
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    torch.manual_seed(0)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()
    assert model.config._attn_implementation == "sdpa"
    enc = tok(["who directed the film", "how many films are there in all of the world", "film"], return_tensors="pt",
              padding=True)  # fmt: skip
    args = {"num_beams": 5, "num_return_sequences": 5, "max_new_tokens": 12, "do_sample": False,
            "output_scores": True, "return_dict_in_generate": True}  # fmt: skip
    with torch.no_grad():
        plain = model.generate(**enc, **args)
        with beam_search(model, 5) as extra:
            assert model.config._attn_implementation == GROUPED
            ours = model.generate(**enc, **args, **extra)
    assert model.config._attn_implementation == "sdpa"  # restored after the search
    assert torch.equal(plain.sequences, ours.sequences)
    assert torch.allclose(plain.sequences_scores, ours.sequences_scores, atol=1e-5)
    cache = extra["past_key_values"]
    assert isinstance(cache.cross_attention_cache, SharedCrossCache)
    assert cache.cross_attention_cache.layers[0].keys.shape[0] == 3  # 3 examples, not 15 rows
    assert cache.self_attention_cache.layers[0].keys.shape[0] == 15


def _grouped_and_repeated(shape: tuple[int, ...], pad_from: int, device: str = "cpu", dtype=torch.float32):
    """Grouped attention against one key row per example, and the same over keys repeated per beam."""
    groups, beams, heads, source, dim = shape
    torch.manual_seed(0)
    query = torch.randn(groups * beams, heads, 1, dim, device=device, dtype=dtype)
    key = torch.randn(groups, heads, source, dim, device=device, dtype=dtype)
    value = torch.randn(groups, heads, source, dim, device=device, dtype=dtype)
    mask = torch.zeros(groups, 1, 1, source, device=device, dtype=dtype)
    mask[1, ..., pad_from:] = torch.finfo(dtype).min  # the second example's padding
    mask = mask.repeat_interleave(beams, 0)
    module = torch.nn.Module()
    module.is_causal = False
    ours, _ = beam_grouped_attention(module, query, key, value, mask, scaling=dim**-0.5)
    ref, _ = beam_grouped_attention(
        module, query, key.repeat_interleave(beams, 0), value.repeat_interleave(beams, 0), mask, scaling=dim**-0.5
    )
    unmasked, _ = beam_grouped_attention(module, query, key, value, torch.zeros_like(mask), scaling=dim**-0.5)
    return ours, ref, unmasked


def test_grouped_attention_equals_attention_over_repeated_keys() -> None:
    groups, beams, heads, dim = 3, 4, 2, 8
    ours, ref, unmasked = _grouped_and_repeated((groups, beams, heads, 7, dim), pad_from=5)
    assert ours.shape == ref.shape == (groups * beams, 1, heads, dim)
    assert torch.allclose(ours, ref, atol=1e-6)
    assert not torch.allclose(unmasked[beams : 2 * beams], ours[beams : 2 * beams])  # the mask reaches its example


def test_other_attention_keeps_every_row() -> None:
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()
    model.set_attn_implementation("eager")
    with beam_search(model, 4) as extra:
        assert model.config._attn_implementation == "eager"
        assert not isinstance(extra["past_key_values"].cross_attention_cache, SharedCrossCache)
    with beam_search(model, 1) as extra:
        assert extra == {}


def test_nested_searches_restore_sdpa_only_when_the_last_ends() -> None:
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()
    with beam_search(model, 4):
        with beam_search(model, 4) as inner:
            assert isinstance(inner["past_key_values"].cross_attention_cache, SharedCrossCache)
        assert model.config._attn_implementation == GROUPED  # the outer search is still on
    assert model.config._attn_implementation == "sdpa"


def test_a_model_that_refuses_the_attention_keeps_every_row(monkeypatch) -> None:
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()

    def refuse(name: str, *args, **kwargs) -> None:
        raise ValueError(f"{name} is not supported")

    monkeypatch.setattr(model, "set_attn_implementation", refuse)
    with beam_search(model, 4) as extra:
        assert not isinstance(extra["past_key_values"].cross_attention_cache, SharedCrossCache)
    assert model.config._attn_implementation == "sdpa"


@pytest.mark.gpu
@run_if(cuda=True)
@pytest.mark.parametrize("num_beams", [4, 16])
def test_one_cross_attention_copy_gives_the_same_beams_on_a_gpu(num_beams: int) -> None:
    """On CUDA (sdpa's fused kernels, not the CPU's math path): the same sequences and scores as ``generate``."""
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    torch.manual_seed(0)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval().cuda()
    enc = tok(["who directed the film", "how many films are there in all of the world", "film"], return_tensors="pt",
              padding=True).to("cuda")  # fmt: skip
    args = {"num_beams": num_beams, "num_return_sequences": num_beams, "max_new_tokens": 12, "do_sample": False,
            "output_scores": True, "return_dict_in_generate": True}  # fmt: skip
    with torch.no_grad():
        plain = model.generate(**enc, **args)
        with beam_search(model, num_beams) as extra:
            ours = model.generate(**enc, **args, **extra)
    assert extra["past_key_values"].cross_attention_cache.layers[0].keys.shape[0] == 3
    assert torch.equal(plain.sequences, ours.sequences)
    assert torch.allclose(plain.sequences_scores, ours.sequences_scores, atol=1e-4)


@pytest.mark.gpu
@run_if(cuda=True)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grouped_attention_equals_repeated_keys_on_a_gpu(dtype: torch.dtype) -> None:
    """The grouped query against one key row per example equals sdpa over repeated keys, padding masks included."""
    ours, ref, _ = _grouped_and_repeated((4, 10, 12, 320, 64), pad_from=200, device="cuda", dtype=dtype)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(ours.float(), ref.float(), atol=tol, rtol=tol)


class _Follower:
    def __init__(self) -> None:
        self.progress: list[object] = []

    def follow_search(self, progress: object) -> None:
        self.progress.append(progress)


def test_processors_that_follow_get_the_search_progress_and_the_recorder_goes_after() -> None:
    tok = build_tokenizer(train_texts=TEXTS, vocab_size=120)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()
    outer, inner, bystander = _Follower(), _Follower(), object()
    with beam_search(model, 4, [outer, bystander]):
        assert "_check_early_stop_heuristic" in model.__dict__
        with beam_search(model, 4, [inner]):
            pass
        assert "_check_early_stop_heuristic" in model.__dict__  # the outer search still records
    assert "_check_early_stop_heuristic" not in model.__dict__
    assert isinstance(outer.progress[0], SearchProgress) and outer.progress[1:] == [None]
    assert inner.progress[0] is not outer.progress[0] and inner.progress[1:] == [None]
    with beam_search(model, 1, [outer]):  # greedy search: nothing finishes early, nothing to follow
        assert "_check_early_stop_heuristic" not in model.__dict__


def test_search_progress_names_the_finished_examples() -> None:
    progress = SearchProgress(3)
    assert progress.finished(3) == frozenset()
    progress.unfinished = torch.tensor([True, False, False])
    assert progress.finished(3) == frozenset({1, 2})
    assert progress.finished(4) == frozenset()  # another search's size
