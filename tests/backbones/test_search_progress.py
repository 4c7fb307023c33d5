"""A followed beam search drops finished examples' rows and returns what ``generate`` returns."""

from __future__ import annotations

import pytest
import torch

from kbqa_lit.backbones.beam_cache import beam_search
from kbqa_lit.backbones.search_progress import collector_paused
from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from tests.helpers.memorise import memorise
from tests.helpers.run_if import run_if
from tests.helpers.tiny import TINY_BERT, TINY_T5

SOURCES = ["where is he from", "who made the film", "how many places", "who", "films of the director of canada"]
#: Targets of different lengths, so a trained model's searches end at different steps.
TARGETS = [
    "( join nationality [E0] )",
    "( join ( reverse directed by ) [E0] )",
    "( count ( join contains [E0] ) )",
    "person",
    "( and film ( join ( reverse directed by ) ( join ( reverse director ) [E0] ) ) )",
]


def _trained(backbone: str):
    tok = build_tokenizer(train_texts=(SOURCES + TARGETS) * 10, vocab_size=120, extra_tokens=("[E0]",))
    torch.manual_seed(0)
    model = build_seq2seq(config=TINY_T5 if backbone == "t5" else TINY_BERT, tokenizer=tok, backbone=backbone)
    enc = memorise(model, tok, SOURCES, TARGETS)
    return tok, model, enc


def _plain_and_followed(model, enc):
    """``generate`` alone, then inside ``beam_search()``: both outputs and the second search's cache."""
    args = {"num_beams": 4, "num_return_sequences": 4, "max_new_tokens": 30, "do_sample": False,
            "early_stopping": False, "output_scores": True, "return_dict_in_generate": True}  # fmt: skip
    with torch.no_grad():
        plain = model.generate(**enc, **args)
        with beam_search(model, 4) as extra:
            ours = model.generate(**enc, **args, **extra)
    return plain, ours, extra["past_key_values"]


@pytest.mark.parametrize("backbone", ["t5", "encoder-decoder"])
def test_free_search_drops_finished_rows_and_returns_generates_beams(backbone: str) -> None:
    tok, model, enc = _trained(backbone)
    plain, ours, cache = _plain_and_followed(model, enc)
    assert torch.equal(plain.sequences, ours.sequences)
    assert torch.allclose(plain.sequences_scores, ours.sequences_scores, atol=1e-5)
    assert cache.rows is not None and cache.rows.numel() < len(SOURCES) * 4  # finished examples were dropped
    assert cache.self_attention_cache.layers[0].keys.shape[0] == cache.rows.numel()
    assert "forward" not in model.__dict__ and "_check_early_stop_heuristic" not in model.__dict__
    assert tok.batch_decode(ours.sequences[::4], skip_special_tokens=True)[0] == TARGETS[0]


@pytest.mark.gpu
@run_if(cuda=True)
@pytest.mark.parametrize("backbone", ["t5", "encoder-decoder"])
def test_finished_rows_are_dropped_on_a_gpu(backbone: str) -> None:
    """On CUDA: the caches' row bookkeeping stays on the device, and the beams are ``generate``'s."""
    tok, model, enc = _trained(backbone)
    plain, ours, cache = _plain_and_followed(model.cuda(), enc.to("cuda"))
    assert cache.rows is not None and cache.rows.device.type == "cuda"
    assert torch.equal(plain.sequences, ours.sequences)
    assert torch.allclose(plain.sequences_scores, ours.sequences_scores, atol=1e-4)


def test_an_instances_own_forward_is_wrapped_and_given_back() -> None:
    """A forward set on the instance (as device-map hooks set it) runs inside the search and stays after it."""
    tok, model, enc = _trained("t5")
    calls: list[int] = []
    own = model.forward

    def hooked(*args, **kwargs):
        calls.append(kwargs["decoder_input_ids"].shape[0] if "decoder_input_ids" in kwargs else -1)
        return own(*args, **kwargs)

    model.forward = hooked
    plain, ours, cache = _plain_and_followed(model, enc)
    assert model.__dict__["forward"] is hooked and "_check_early_stop_heuristic" not in model.__dict__
    assert torch.equal(plain.sequences, ours.sequences)
    assert min(calls) < len(SOURCES) * 4 == max(calls)  # the hook saw the full rows, then only the held ones


def test_the_collector_sets_older_objects_aside_for_the_length_of_the_searches() -> None:
    """Older objects are frozen while any search runs (nested ones too); new cycles are still collected."""
    import gc
    import weakref

    class Node:
        pass

    before = gc.get_freeze_count()
    with collector_paused():
        assert gc.get_freeze_count() > before
        with collector_paused():
            pass
        assert gc.get_freeze_count() > before  # the inner search's end leaves them aside
        cycle = Node()
        cycle.me = cycle
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert gone() is None  # a cycle made during the search is collected as usual
    assert gc.get_freeze_count() == before
    if before == 0:  # a process that froze objects itself keeps them frozen, and frozen only by itself
        gc.freeze()
        try:
            frozen = gc.get_freeze_count()
            with collector_paused():
                assert gc.get_freeze_count() == frozen
            assert gc.get_freeze_count() == frozen
        finally:
            gc.unfreeze()
