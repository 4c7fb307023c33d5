"""Row states found from parent rows, interned states and the mask bank (kbqa_lit/decoding/row_states.py)."""

from __future__ import annotations

import random

import pytest
import torch

from kbqa_lit.decoding.grammar import BaseRules, SchemaRules, SExprGrammar
from kbqa_lit.decoding.option_masks import option_masks
from kbqa_lit.decoding.processor import GrammarLogitsProcessor, masked_scores
from kbqa_lit.decoding.row_states import InternedStates, MaskBank, parent_rows
from kbqa_lit.decoding.row_tables import RowTables
from kbqa_lit.decoding.tokens import TokenIndex
from tests.decoding.test_processor import RELATIONS, SLOTS, TARGETS, tok  # noqa: F401  (fixture)


def test_parent_rows_finds_the_first_equal_row_of_the_same_group() -> None:
    last = torch.tensor([[0, 5], [0, 6], [0, 5], [0, 7]])
    now = torch.tensor([[0, 6, 1], [0, 5, 2], [0, 5, 3], [0, 9, 4]])
    assert parent_rows(now, last, group=2) == [1, 0, 2, -1]  # row 2's prefix is row 0's too, but in the other group
    assert parent_rows(now, last, group=4) == [1, 0, 0, -1]  # one group: the first equal row
    assert parent_rows(now, last, group=3) == [1, 0, 0, -1]  # 4 rows do not split into 3s: one group
    assert parent_rows(now, None, group=2) is None
    assert parent_rows(now, now, group=2) is None  # not one token shorter
    assert parent_rows(now[:2], last, group=2) is None  # another row count


def test_mask_bank_apply_equals_masking_with_where() -> None:
    gen = torch.Generator().manual_seed(0)
    masks = [torch.rand(7, generator=gen) < 0.4 for _ in range(5)]
    bank = MaskBank(7)
    rows = [bank.row(m) for m in masks]
    assert [bank.row(m) for m in masks] == rows  # a tensor seen again keeps its row
    pick = [rows[i] for i in (3, 0, 0, 4, 1, 2)]
    allowed = torch.stack([masks[i] for i in (3, 0, 0, 4, 1, 2)])
    assert torch.equal(bank.take(pick), allowed)
    for width in (7, 9, 5):  # the model's vocabulary as wide, wider (extra tokens disallowed), narrower
        for dtype in (torch.float32, torch.bfloat16):
            scores = torch.randn(6, width, generator=gen).to(dtype)
            assert torch.equal(bank.apply(scores, pick), masked_scores(scores, allowed))
    extra = torch.zeros(7, dtype=torch.bool)
    extra[2] = True
    more = [bank.row(torch.rand(7, generator=gen) < 0.5) for _ in range(100)] + [bank.row(extra)]  # grows past 64
    scores = torch.zeros(1, 7)
    assert torch.isfinite(bank.apply(scores, [more[-1]])[0]).nonzero().flatten().tolist() == [2]  # synced after growing


def test_interned_steps_equal_the_row_tables_advance(tok) -> None:  # noqa: F811
    index = TokenIndex(tok)
    grammar = SExprGrammar([BaseRules(SLOTS), SchemaRules(RELATIONS, ["film.film"])])
    tables = RowTables(grammar, option_masks(index))
    states = InternedStates(tables, MaskBank(option_masks(index).eos.shape[-1]))
    for target in TARGETS:
        ids = tok(target, add_special_tokens=False)["input_ids"] + [index.eos_id, 5]
        state, sid = (grammar.start(), ()), states.start
        for t in ids:
            state, sid = tables.advance(state, t), states.step(sid, t)
            assert states.states[sid] == state
            assert torch.equal(states.bank.take([states.mask_row[sid]])[0], tables.mask(state))
            path = tables.finish(state)
            assert states.finish_length(sid) == (None if path is None else len(path))
            assert states.longest(sid) == tables.longest(state)
        assert states.replay(ids) == sid


@pytest.mark.parametrize("guard", [None, 24])
def test_rows_found_by_parent_get_the_states_of_their_whole_prefix(tok, guard) -> None:  # noqa: F811
    """A simulated beam search (rows reordered, copied and dropped each step) against a replay of every row."""
    index = TokenIndex(tok)
    grammars = [SExprGrammar([BaseRules(SLOTS), SchemaRules(RELATIONS, ["film.film"])]) for _ in range(2)]
    nb, rng = 3, random.Random(0)
    followed = GrammarLogitsProcessor(index, grammars, num_beams=nb, max_new_tokens=guard, budget_top_k=None)
    rows = [[0] for _ in range(2 * nb)]
    for _ in range(12):
        ids = torch.tensor(rows)
        scores = torch.randn(len(rows), index.vocab_size)
        fresh = GrammarLogitsProcessor(index, grammars, num_beams=nb, max_new_tokens=guard, budget_top_k=None)
        assert torch.equal(followed(ids, scores), fresh(ids, scores))  # the fresh one replays every row
        allowed = torch.isfinite(fresh(ids, scores))
        nxt = []
        for e in range(2):
            group = rows[e * nb : (e + 1) * nb]
            for _ in range(nb):  # a parent drawn with repeats, so rows are copied, reordered and dropped
                p = rng.randrange(nb)
                choices = allowed[e * nb + p].nonzero().flatten().tolist()
                nxt.append(group[p] + [rng.choice(choices)])
        rows = nxt
