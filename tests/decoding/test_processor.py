"""Grammar-constrained beam search: real tiny tokenizers and an untrained tiny T5, no mocks."""

from __future__ import annotations

import pytest
import torch
from transformers import LogitsProcessorList

from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from kbqa_lit.decoding.grammar import BaseRules, EntityRules, SchemaRules, SExprGrammar
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr, invert_labels
from kbqa_lit.kb.lf.normalize import schema_to_words
from kbqa_lit.kb.lf.sexpr import parse_sexpr, schema_items
from tests.helpers.tiny import TINY_T5

SLOTS = tuple(f"[E{k}]" for k in range(8))
RELATIONS = ["people.person.nationality", "film.film.directed_by", "location.location.contains"]
LABELS = {"m.a": "Justin Bieber", "m.b": "Canada"}
TARGETS = [
    "( join ( reverse [ people , person , nationality ] ) [E0] )",
    "( join [ film , film , directed by ] [ Justin Bieber ] )",
    "( count ( join [ location , location , contains ] [ Canada ] ) )",
    "( and [ film , film ] ( join [ film , film , directed by ] [E1] ) )",
    "( argmax [ film , film ] [ film , film , release date ] )",
    "( join [ people , person , height ] 1998 year )",
    "( less than [ people , person , height ] 1.5 float )",
]
QUESTIONS = ["where is justin bieber from", "what films did he direct", "how many places are in canada"]


@pytest.fixture(scope="module")
def tok():
    texts = (TARGETS + QUESTIONS) * 20
    return build_tokenizer(train_texts=texts, vocab_size=300, extra_tokens=SLOTS)


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    return build_seq2seq(config=TINY_T5, tokenizer=tok).eval()


def _generate(model, tok, processor=None, num_beams: int = 4, max_new_tokens: int = 24) -> list[str]:
    enc = tok(QUESTIONS[:2], return_tensors="pt", padding=True)
    extra = {"logits_processor": LogitsProcessorList([processor])} if processor is not None else {}
    with torch.no_grad():
        out = model.generate(**enc, num_beams=num_beams, num_return_sequences=num_beams,
                             max_new_tokens=max_new_tokens, do_sample=False, **extra)  # fmt: skip
    return [" ".join(t.split()) for t in tok.batch_decode(out, skip_special_tokens=True)]


def _parses(text: str) -> bool:
    text = text.replace("[E0]", "[ Justin Bieber ]").replace("[E1]", "[ Canada ]")
    try:
        parse_sexpr(denormalize_sexpr(text, invert_labels(LABELS), fuzzy_threshold=0.0))
    except Exception:
        return False
    return True


def test_word_tokens_do_not_depend_on_neighbours(tok) -> None:
    index = TokenIndex(tok)
    for text in TARGETS:
        whole = tok(text, add_special_tokens=False)["input_ids"]
        assert [t for w in text.split() for t in index.word_ids(w)] == whole, text
    slot = index.word_ids("[E0]")
    assert tok.convert_ids_to_tokens(list(slot))[-1] == "[E0]"


def test_word_tokens_of_a_t5_sentencepiece_tokenizer(tmp_path) -> None:
    spm = pytest.importorskip("sentencepiece")
    from transformers import T5Tokenizer

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join((TARGETS + QUESTIONS) * 30), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=70,
                                   model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                                   character_coverage=1.0)  # fmt: skip
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    t5 = T5Tokenizer(vocab=[(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())], extra_ids=0)
    index = TokenIndex(t5)
    for text in TARGETS:
        whole = t5(text, add_special_tokens=False)["input_ids"]
        assert [t for w in text.split() for t in index.word_ids(w)] == whole, text


def test_untrained_t5_emits_only_well_formed_expressions(tok, model) -> None:
    free = _generate(model, tok)
    assert sum(_parses(t) for t in free) <= len(free) // 2, free  # unconstrained: mostly malformed
    grammar = SExprGrammar([BaseRules(SLOTS)])
    processor = GrammarLogitsProcessor(TokenIndex(tok), grammar, num_beams=4, max_new_tokens=24)
    beams = _generate(model, tok, processor)
    assert len(beams) == 8
    for text in beams:
        assert grammar.accepts(text.split()), text
        assert _parses(text), text


def test_schema_rules_emit_only_inventory_relations_and_linked_entities(tok, model) -> None:
    grammars = [
        SExprGrammar(
            [BaseRules(SLOTS), SchemaRules(RELATIONS, ["film.film"]), EntityRules(["Justin Bieber"], ["[E0]"])]
        ),
        SExprGrammar([BaseRules(SLOTS), SchemaRules(RELATIONS, ["film.film"]), EntityRules(["Canada"], [])]),
    ]
    processor = GrammarLogitsProcessor(TokenIndex(tok), grammars, num_beams=4, max_new_tokens=40)
    beams = _generate(model, tok, processor, num_beams=4, max_new_tokens=40)
    words = {schema_to_words(r) for r in RELATIONS}
    for k, text in enumerate(beams):
        assert grammars[k // 4].accepts(text.split()), text
        items = schema_items(denormalize_sexpr(text.replace("[E0]", "[ Justin Bieber ]"), invert_labels(LABELS)))
        assert {schema_to_words(r) for r in items.relations} <= words, text
        assert set(items.classes) <= {"film.film"}, text
        assert set(items.entities) <= ({"m.a"} if k < 4 else {"m.b"}), text


def test_dead_ends_allow_eos_and_rows_follow_their_prefix(tok) -> None:
    index = TokenIndex(tok)
    grammar = SExprGrammar([BaseRules(SLOTS)])
    processor = GrammarLogitsProcessor(index, [grammar, grammar], num_beams=2)
    close = index.word_ids(")")
    start = [0]
    rows = torch.tensor([start + list(close), start + list(index.word_ids("(")), start + list(close), start + [5]])
    scores = torch.zeros(4, processor.index.vocab_size + 3)
    out = processor(rows, scores)
    assert torch.isfinite(out).any(dim=1).all()  # never an all -inf row
    assert torch.isfinite(out[0]).nonzero().flatten().tolist() == [index.eos_id]  # ")" first: a dead end
    allowed = {tok.convert_ids_to_tokens(i) for i in torch.isfinite(out[1]).nonzero().flatten().tolist()}
    assert "▁join" in allowed and "▁reverse" not in allowed and "</s>" not in allowed
    # reordering rows (beam search does) reorders the masks
    again = processor(rows[[1, 0, 3, 2]], scores)
    assert torch.equal(torch.isfinite(again), torch.isfinite(out)[[1, 0, 3, 2]])


def test_the_budget_guard_refuses_a_long_word_that_would_not_end_in_time(tok) -> None:
    """One token (``[``) can open an entity label spelled in many tokens: the guard must see that jump coming."""
    index = TokenIndex(tok)
    label = "wibblewobblyq flimflamjabberwockyz"  # unseen words: spelled a few characters a token
    grammar = SExprGrammar([BaseRules(SLOTS), SchemaRules(RELATIONS, []), EntityRules([label], ["[E0]"])])
    prefix = [0] + [t for w in "( join [ film , film , directed by ]".split() for t in index.word_ids(w)]
    slot, bracket = index.word_ids("[E0]")[0], index.word_ids("[")[0]
    spelled = sum(len(index.word_ids(w)) for w in label.split())
    probe = GrammarLogitsProcessor(index, grammar)
    shortest = probe._tables[0].finish(probe.state_after(0, prefix[1:]))
    assert shortest is not None and len(shortest) <= 5  # [E0] ) EOS
    assert spelled > len(shortest) + 17  # the jump outruns the slack of 16
    rows, scores = torch.tensor([prefix]), torch.zeros(1, index.vocab_size)
    for budget, long_allowed in ((len(prefix) - 1 + len(shortest) + 17, False), (len(prefix) + 200, True)):
        processor = GrammarLogitsProcessor(index, grammar, max_new_tokens=budget, budget_slack=16)
        allowed = torch.isfinite(processor(rows, scores))[0]
        assert bool(allowed[slot]) and bool(allowed[bracket]) == long_allowed, budget


def _prefix_states(grammar: SExprGrammar) -> list:
    """Every word-boundary state on the way through the targets."""
    states = []
    for target in TARGETS:
        state = grammar.start()
        for word in target.split():
            states.append(state)
            state = grammar.step(state, word)
            assert state is not None, (target, word)
        states.append(state)
    return states


def test_memoised_closings_equal_the_grammars_closing_walk(tok) -> None:
    index = TokenIndex(tok)
    relations = [*RELATIONS, "film.film.release_date", "people.person.height"]
    grammar = SExprGrammar([BaseRules(SLOTS), SchemaRules(relations, ["film.film"])])
    processor = GrammarLogitsProcessor(index, grammar)
    tables = processor._tables[0]
    for state in _prefix_states(grammar):  # one word at a time, memoised states reused by the later ones
        words = grammar.closing(state)
        want = None if words is None else tuple(t for w in words for t in index.word_ids(w)) + (index.eos_id,)
        assert tables.closing(state) == want, state
    assert tables.closing(grammar.start()) is not None and tables.entries("closings") > len(TARGETS)


def test_masks_shared_across_batches_equal_masks_of_a_fresh_index(tok) -> None:
    """A token index keeps its option-set masks across processors (batches); they stay exact."""
    targets = [tok(t, add_special_tokens=False)["input_ids"] for t in TARGETS[:3]]
    shared = TokenIndex(tok)

    def masks(index: TokenIndex, rules) -> list[torch.Tensor]:
        grammars = [SExprGrammar([BaseRules(SLOTS), *rules]) for _ in targets]
        processor = GrammarLogitsProcessor(index, grammars, num_beams=1, prefix_length=1)
        width = max(len(t) for t in targets)
        rows = [[0] + t + [tok.pad_token_id] * (width - len(t)) for t in targets]
        out = []
        for step in range(1, width + 1):
            ids = torch.tensor([r[:step] for r in rows])
            out.append(processor(ids, torch.zeros(len(rows), index.vocab_size)) == 0)
        return out

    schema = [SchemaRules(RELATIONS), EntityRules(["[ Justin Bieber ]"], ["[E0]"])]
    for rules in ([], schema, []):  # the second and third batches reuse what the earlier ones cached
        fresh = masks(TokenIndex(tok), rules)
        again = masks(shared, rules)
        assert all(torch.equal(a, b) for a, b in zip(fresh, again, strict=True))
    assert shared._processor_cache.masks  # the cache is kept on the index
