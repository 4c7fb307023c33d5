"""The processor's fast paths answer as its plain ones: caches shared across questions, the top-k budget guard."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import LogitsProcessorList

from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from kbqa_lit.decoding.grammar import BaseRules, EntityRules, SchemaRules, SExprGrammar
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from tests.helpers.run_if import run_if
from tests.helpers.tiny import TINY_T5

SLOTS = tuple(f"[E{k}]" for k in range(4))
RELATIONS = [
    "people.person.nationality",
    "film.film.directed_by",
    "location.location.contains",
    "people.person.height_meters",
    "film.film.release_date",
]
TEXTS = [
    "( join ( reverse [ people , person , nationality ] ) [E0] )",
    "( join [ film , film , directed by ] [ Justin Bieber ] )",
    "( count ( join [ location , location , contains ] [ Canada ] ) )",
    "( and [ film , film ] ( join [ film , film , directed by ] [E1] ) )",
    "( argmax [ film , film ] [ film , film , release date ] )",
    "( join [ people , person , height meters ] 1998 year )",
    "( less than [ people , person , height meters ] 1.5 float )",
    "where is justin bieber from what films did the director of canada make",
]
#: Per question: linked labels and slots (two share their slots and differ in labels; one has no label).
QUESTIONS = [
    (["Justin Bieber"], ["[E0]"]),
    (["Canada", "Justin Bieber"], ["[E0]"]),
    (["Canada"], ["[E0]", "[E1]"]),
    ([], ["[E0]"]),
    (["Film Director Of Canada"], []),
]


class _Unshared(SExprGrammar):
    """The same grammar with caches of its own (the plain path)."""

    def share_key(self):  # noqa: D102
        return None


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(train_texts=TEXTS * 20, vocab_size=300, extra_tokens=SLOTS)


def _grammars(cls: type[SExprGrammar]) -> list[SExprGrammar]:
    base, schema = BaseRules(SLOTS), SchemaRules(RELATIONS, ["film.film"])
    return [cls([base, schema, EntityRules(labels, slots)]) for labels, slots in QUESTIONS]


def _walk(processor: GrammarLogitsProcessor, rows: int, steps: int, seed: int):
    """Token rows of a random walk through what ``processor`` allows, one step at a time.

    Beam ``b`` of every question draws from one random sequence, so questions that allow the same
    tokens walk the same way (as beam searches of similar questions do).
    """
    beams = processor.num_beams
    rngs = [random.Random(seed * 100 + b) for b in range(beams)]
    ids = torch.zeros((rows, 1), dtype=torch.long)
    for _ in range(steps):
        yield ids
        masks = processor.row_masks(ids)
        draws = [rng.random() for rng in rngs]
        picks = [(m := masks[r].nonzero().flatten().tolist())[int(draws[r % beams] * len(m))] for r in range(rows)]
        ids = torch.cat([ids, torch.tensor(picks).unsqueeze(1)], dim=1)


def test_common_tables_give_every_question_its_own_masks(tok) -> None:
    index = TokenIndex(tok)
    beams = 3
    shared = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=beams, max_new_tokens=30)
    plain = GrammarLogitsProcessor(index, _grammars(_Unshared), num_beams=beams, max_new_tokens=30)
    for seed in range(3):
        for ids in _walk(plain, beams * len(QUESTIONS), 30, seed):
            assert torch.equal(shared.row_masks(ids), plain.row_masks(ids))
    # Questions 0 and 1 share a key: what they hold together, computed once for both, against twice
    names = ("masks", "closings", "finishes")
    together = sum(len(shared._tables[0].common.get(n, {})) for n in names)
    together += sum(len(t.private.get(n, {})) for t in shared._tables[:2] for n in names)
    apart = sum(t.entries(n) for t in plain._tables[:2] for n in names)
    assert 0 < together < 0.8 * apart
    keys = {g.share_key() for g in _grammars(SExprGrammar)}
    assert len(keys) == 4  # the first two share: the same slots, both with labels


def test_labels_stay_private_to_their_question(tok) -> None:
    index = TokenIndex(tok)
    grammars = _grammars(SExprGrammar)[:2]  # one share key, different labels
    processor = GrammarLogitsProcessor(index, grammars, num_beams=1)
    prefix = [0, *index.word_ids("("), *index.word_ids("join"), *index.word_ids("["), *index.word_ids("film")]
    prefix += [*index.word_ids(","), *index.word_ids("film"), *index.word_ids(","), *index.word_ids("directed")]
    prefix += [*index.word_ids("by"), *index.word_ids("]"), *index.word_ids("[")]
    masks = processor.row_masks(torch.tensor([prefix, prefix]))
    canada = index.word_ids("Canada")[0]
    assert not bool(masks[0, canada]) and bool(masks[1, canada])  # only the second question links Canada


@pytest.mark.parametrize("num_beams", [1, 4, 6])
def test_top_k_guard_generates_what_the_full_guard_generates(tok, num_beams: int) -> None:
    """Greedy and beam search (which follows the search's beam scores) pick what the full check lets them."""
    torch.manual_seed(0)
    model = build_seq2seq(config=TINY_T5, tokenizer=tok).eval()
    enc = tok(TEXTS[-1:] * len(QUESTIONS), return_tensors="pt", padding=True)
    index = TokenIndex(tok)
    outs = []
    for top_k in (None, 2 * num_beams):
        processor = GrammarLogitsProcessor(
            index, _grammars(SExprGrammar), num_beams=num_beams, max_new_tokens=20, budget_top_k=top_k
        )
        with torch.no_grad():
            out = model.generate(**enc, num_beams=num_beams, num_return_sequences=num_beams, max_new_tokens=20,
                                 do_sample=False, early_stopping=False,
                                 logits_processor=LogitsProcessorList([processor]))  # fmt: skip
        outs.append(tok.batch_decode(out, skip_special_tokens=True))
    assert outs[0] == outs[1]
    grammar = _grammars(SExprGrammar)[0]
    assert sum(grammar.accepts(" ".join(t.split()).split()) for t in outs[1][:num_beams]) >= 1


def test_top_k_guard_keeps_each_rows_best_tokens_that_fit(tok) -> None:
    """One beam (greedy; or a search whose beam scores it cannot follow): each row's own best tokens."""
    index = TokenIndex(tok)
    k = 6
    full = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=1, max_new_tokens=18)
    fast = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=1, max_new_tokens=18, budget_top_k=k)
    gen = torch.Generator().manual_seed(0)
    checked = 0
    for ids in _walk(full, len(QUESTIONS), 18, seed=1):
        scores = torch.log_softmax(torch.randn(ids.shape[0], index.vocab_size, generator=gen), dim=-1)
        a, b = full(ids, scores.clone()), fast(ids, scores.clone())
        for r in range(ids.shape[0]):
            n = min(k, int(torch.isfinite(a[r]).sum()))
            assert a[r].topk(n).indices.tolist() == b[r].topk(n).indices.tolist()
            assert int(torch.isfinite(b[r]).sum()) <= max(n, 1) or torch.equal(a[r], b[r])
            checked += 1
    assert checked == 18 * len(QUESTIONS)


def test_common_tables_stay_within_their_budget(tok, monkeypatch) -> None:
    from kbqa_lit.decoding import option_masks

    monkeypatch.setattr(option_masks, "_COMMON_BUDGET", 200)
    index = TokenIndex(tok)  # a new index: its own common tables
    shared = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=2, max_new_tokens=20)
    plain = GrammarLogitsProcessor(index, _grammars(_Unshared), num_beams=2, max_new_tokens=20)
    tables = option_masks.option_masks(index)
    peak = 0
    for ids in _walk(plain, 2 * len(QUESTIONS), 20, seed=5):
        assert torch.equal(shared.row_masks(ids), plain.row_masks(ids))  # cleared tables are rebuilt, not wrong
        held = sum(len(t) for per_key in tables.common.values() for t in per_key.values())
        assert held == tables.common_entries <= 200
        peak = max(peak, held)
    assert peak > 100  # the walk filled them up to the budget at least once


class _PerGroup(GrammarLogitsProcessor):
    """The top-k guard as it was first written: each group ranked by itself, kept tokens restored row by row."""

    def _guard(self, scores, out, guarded, beam, groups):  # noqa: D102
        k = int(self.budget_top_k or 1)
        width = out.shape[-1]
        info = {g[0]: g for g in guarded}
        keep_rows: dict[int, list[int]] = {r: [] for r in info}
        for rows in groups:
            flat = (out[rows].float() + beam[rows, None]).flatten()
            fitting, seen, n = 0, 0, min(flat.numel(), 2 * k)
            while True:
                top = flat.topk(n)
                done = False
                for v, i in zip(top.values.tolist()[seen:], top.indices.tolist()[seen:], strict=True):
                    if v == float("-inf"):
                        done = True
                        break
                    r, t = rows[i // width], i % width
                    g = info.get(r)
                    if g is None:
                        fitting += 1
                    elif g[1].fits(g[2], t, g[3]):
                        fitting += 1
                        keep_rows[r].append(t)
                    if fitting >= k:
                        done = True
                        break
                if done or n >= flat.numel():
                    break
                seen, n = n, min(flat.numel(), 2 * n)
        for r, ids in keep_rows.items():
            out[r] = float("-inf")
            at = torch.as_tensor(ids or [info[r][1].fallback(info[r][2])], dtype=torch.long)
            out[r, at] = scores[r, at]


@pytest.mark.parametrize(("num_beams", "top_k"), [(1, 2), (4, 8), (4, 40)])
def test_batched_guard_returns_what_the_per_group_guard_returns(tok, num_beams: int, top_k: int) -> None:
    """All groups ranked by one ``topk`` (and a group needing more ranked again alone) keep the same tokens."""
    index = TokenIndex(tok)
    kwargs = {"num_beams": num_beams, "max_new_tokens": 16, "budget_top_k": top_k}
    batched = GrammarLogitsProcessor(index, _grammars(SExprGrammar), **kwargs)
    per_group = _PerGroup(index, _grammars(SExprGrammar), **kwargs)
    walker = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=num_beams, max_new_tokens=16)
    calls = []
    guard = batched._guard
    batched._guard = lambda *a: calls.append(len(a[2])) or guard(*a)  # type: ignore[method-assign]
    gen = torch.Generator().manual_seed(num_beams + top_k)
    for seed in range(2):
        for ids in _walk(walker, num_beams * len(QUESTIONS), 16, seed=seed):
            scores = torch.log_softmax(torch.randn(ids.shape[0], index.vocab_size, generator=gen), dim=-1)
            assert torch.equal(batched(ids, scores.clone()), per_group(ids, scores.clone()))
    assert sum(calls) > 20  # the guard checked rows at many steps


@pytest.mark.gpu
@run_if(cuda=True)
def test_batched_guard_returns_what_the_per_group_guard_returns_on_a_gpu(tok) -> None:
    """On CUDA (whose ``topk`` may order ties otherwise): the batched guard keeps the per-group guard's tokens."""
    index = TokenIndex(tok)
    kwargs = {"num_beams": 4, "max_new_tokens": 16, "budget_top_k": 8}
    batched = GrammarLogitsProcessor(index, _grammars(SExprGrammar), **kwargs)
    per_group = _PerGroup(index, _grammars(SExprGrammar), **kwargs)
    walker = GrammarLogitsProcessor(index, _grammars(SExprGrammar), num_beams=4, max_new_tokens=16)
    gen = torch.Generator().manual_seed(12)
    checked = 0
    for ids in _walk(walker, 4 * len(QUESTIONS), 16, seed=0):
        scores = torch.log_softmax(torch.randn(ids.shape[0], index.vocab_size, generator=gen), dim=-1).cuda()
        ours = batched(ids.cuda(), scores.clone())
        assert ours.device.type == "cuda"
        assert torch.equal(ours.cpu(), per_group(ids, scores.cpu().clone()))
        checked += 1
    assert checked > 10
