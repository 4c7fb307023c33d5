"""A processor that follows its beam search skips finished examples' rows and returns the same beams."""

from __future__ import annotations

import pytest
import torch
from transformers import LogitsProcessorList

from kbqa_lit.backbones.beam_cache import SearchProgress, beam_search
from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from kbqa_lit.decoding.grammar import SExprGrammar
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from tests.decoding.test_processor_speed_paths import QUESTIONS, SLOTS, TEXTS, _grammars, _walk
from tests.helpers.memorise import memorise
from tests.helpers.run_if import run_if
from tests.helpers.tiny import TINY_T5

SOURCES = [
    "where is justin bieber from",
    "what films did the director make",
    "how many places in canada",
    "who",
    "films of the film director of canada",
]
#: Forms of different lengths, so a trained model's searches end at different steps.
TARGETS = [
    "( join ( reverse [ people , person , nationality ] ) [E0] )",
    "( join [ film , film , directed by ] [ Justin Bieber ] )",
    "( count ( join [ location , location , contains ] [ Canada ] ) )",
    "( join [ people , person , height meters ] 1998 year )",
    "( and [ film , film ] ( join [ film , film , directed by ] [ Film Director Of Canada ] ) )",
]


def _tok():
    return build_tokenizer(train_texts=TEXTS * 20, vocab_size=300, extra_tokens=SLOTS)


def test_finished_examples_rows_get_the_idle_mask_and_the_rest_is_unchanged() -> None:
    tok = _tok()
    index = TokenIndex(tok)
    beams = 3
    plain = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=beams, max_new_tokens=20)
    following = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=beams, max_new_tokens=20)
    progress = SearchProgress(3)
    following.follow_search(progress)
    progress.unfinished = torch.tensor([True, False, True, True, False])  # examples 1 and 4 are finished
    for ids in _walk(plain, beams * len(QUESTIONS), 12, seed=1):
        ours, theirs = following.row_masks(ids, following._finished(ids.shape[0])), plain.row_masks(ids)
        for r in range(ids.shape[0]):
            if r // beams in (1, 4):
                assert ours[r].nonzero().flatten().tolist() == [tok.pad_token_id] != [index.eos_id]
            else:
                assert torch.equal(ours[r], theirs[r])
    progress.unfinished = torch.tensor([True, False])  # another search's size: nothing is skipped
    assert following._finished(beams * len(QUESTIONS)) == frozenset()
    following.follow_search(None)
    assert following._finished(beams * len(QUESTIONS)) == frozenset()


def test_a_search_followed_returns_the_same_beams_and_skips_finished_examples() -> None:
    """A tiny T5 trained to write forms of different lengths: examples finish early, the beams are the same.

    Followed, the processor skips finished examples' rows and the model runs only the others.
    """
    _followed_search_equals_generate("cpu")


@pytest.mark.gpu
@run_if(cuda=True)
def test_a_search_followed_returns_the_same_beams_on_a_gpu() -> None:
    _followed_search_equals_generate("cuda")


def _followed_search_equals_generate(device: str) -> None:
    tok = _tok()
    index = TokenIndex(tok)
    torch.manual_seed(0)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok)
    enc = memorise(model, tok, SOURCES, TARGETS)
    model, enc = model.eval().to(device), enc.to(device)
    outs, skipped, held = [], [], []
    for follow in (False, True):
        processor = GrammarLogitsProcessor(
            index, _grammars(SExprGrammar), num_beams=4, max_new_tokens=40, budget_top_k=8
        )
        finished = processor._finished
        processor._finished = lambda rows, f=finished: (lambda done: skipped.append(len(done)) or done)(f(rows))
        with torch.no_grad(), beam_search(model, 4, [processor] if follow else []) as extra:
            outs.append(model.generate(**enc, num_beams=4, num_return_sequences=4, max_new_tokens=40, do_sample=False,
                                       early_stopping=False, logits_processor=LogitsProcessorList([processor]),
                                       output_scores=True, return_dict_in_generate=True, **extra))  # fmt: skip
        assert "_check_early_stop_heuristic" not in model.__dict__  # the recorder is gone after the search
        assert "forward" not in model.__dict__
        assert processor._progress is None
        held.append(extra["past_key_values"].rows)
    assert torch.equal(outs[0].sequences, outs[1].sequences)
    assert torch.equal(outs[0].sequences_scores, outs[1].sequences_scores)
    assert max(skipped) >= 2  # examples finished before the search ended, and their rows were skipped
    assert held[1] is not None and held[1].numel() < 5 * 4  # and the model stopped running them
    assert tok.batch_decode(outs[1].sequences[::4], skip_special_tokens=True) == TARGETS
