"""FC-KBQA's pair rules: grammar walks, and beam search of an untrained tiny T5 over random allowed sets.

The paper's decoding is the default (``partners: last``, ``chain_heads: 0``, ``mode: bag``); tests of
the earlier behaviour name it (:data:`OURS`).
"""

from __future__ import annotations

import random
import re

import pytest
import torch
from transformers import LogitsProcessorList

from kbqa_lit.backbones.seq2seq import build_seq2seq, build_tokenizer
from kbqa_lit.decoding.grammar import BaseRules, SExprGrammar
from kbqa_lit.decoding.pairs import PairRules
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.normalize import schema_to_words
from tests.helpers.tiny import TINY_T5

SLOTS = ("[E0]", "[E1]")
RELATIONS = [
    "film.film.directed_by",
    "film.director.nationality",
    "film.performance.film",
    "film.performance.actor",
    "people.person.place_of_birth",
    "location.location.containedby",
    "music.album.artist",
    "music.artist.genre",
]
CLASSES = ["film.film", "people.person", "location.location", "music.album"]
LABELS = ["Alpha Beta", "Gamma", "Delta Town", "Epsilon"]
W = {x: schema_to_words(x) for x in RELATIONS + CLASSES}
#: Our extended decoding (the earlier defaults): partners of any relation or class written, chain heads, exact items.
OURS = {"partners": "any", "chain_heads": 2, "mode": "trie"}


def _walk(g: SExprGrammar, text: str) -> bool:
    return g.accepts(text.split())


def test_start_set_then_pairs_after_a_relation_or_class() -> None:
    rules = PairRules(
        class_relation=[("film.film", "film.film.directed_by")],
        relation_relation=[("(R film.performance.film)", "film.performance.actor")],
        relation_entity=[("film.performance.actor", "m.a")],
        entity_labels=["Alpha Beta"],
        bare_entities=["[E0]"],
        chain_heads=0,
        partners="any",
        mode="trie",
    )
    g = SExprGrammar([BaseRules(SLOTS), rules])
    film, directed, perf_film, actor = W["film.film"], W["film.film.directed_by"], W[RELATIONS[2]], W[RELATIONS[3]]
    assert _walk(g, f"( join [ {actor} ] [ Alpha Beta ] )")  # P_r-e: from the start
    assert not _walk(g, f"( join [ {directed} ] [ Alpha Beta ] )")  # only after its class
    assert _walk(g, f"( and [ {film} ] ( join [ {directed} ] [E0] ) )")
    assert not _walk(g, f"( and [ {film} ] ( join [ {directed} ] [E1] ) )")  # not a detected entity
    assert not _walk(g, f"( join [ {actor} ] [ Gamma ] )")
    # a reverse hop counts as its relation; its atom outlives ( reverse ... )
    chain = f"( join ( reverse [ {perf_film} ] ) ( join [ {actor} ] [E0] ) )"
    assert not _walk(g, chain)  # perf_film is in no P_r-e pair and no class came first
    heads = PairRules(
        relation_relation=[(RELATIONS[2], RELATIONS[3])],
        relation_entity=[(RELATIONS[3], "m.a")],
        bare_entities=["[E0]"],
        **OURS,
    )
    assert _walk(SExprGrammar([BaseRules(SLOTS), heads]), chain)  # chain_heads: r1 of (r1, r2 ∈ P_r-e)
    # three backward hops, the builder's pairs stored forward: allowed within chain_heads pairs of P_r-e
    born, contained, spouse = W["people.person.place_of_birth"], W["location.location.containedby"], W[RELATIONS[0]]
    three = (
        f"( join ( reverse [ {contained} ] ) ( join ( reverse [ {born} ] ) ( join ( reverse [ {spouse} ] ) [E0] ) ) )"
    )
    pairs = {
        "relation_relation": [(RELATIONS[0], RELATIONS[4]), (RELATIONS[4], RELATIONS[5])],
        "relation_entity": [(RELATIONS[0], "m.a")],
        "bare_entities": ["[E0]"],
    }
    assert _walk(SExprGrammar([BaseRules(SLOTS), PairRules(**pairs, **OURS)]), three)
    assert not _walk(SExprGrammar([BaseRules(SLOTS), PairRules(**pairs, **{**OURS, "chain_heads": 1})]), three)
    # no relation–entity pair and no class: the relations of P_r-r are allowed from the start
    lone = PairRules(relation_relation=pairs["relation_relation"], bare_entities=["[E0]"], **OURS)
    assert _walk(SExprGrammar([BaseRules(SLOTS), lone]), three)


def test_bag_mode_allows_words_of_allowed_items_in_any_order() -> None:
    pairs = {
        "relation_entity": [("film.film.directed_by", "m.a"), ("music.album.artist", "m.a")],
        "bare_entities": SLOTS,
    }
    mixed = "( join [ film , album , artist ] [E0] )"
    assert not _walk(SExprGrammar([BaseRules(SLOTS), PairRules(**pairs, mode="trie")]), mixed)
    bag = SExprGrammar([BaseRules(SLOTS), PairRules(**pairs, mode="bag")])
    assert _walk(bag, mixed)
    assert not _walk(bag, "( join [ film , person , artist ] [E0] )")  # "person" is in no allowed item
    with pytest.raises(UserInputError):
        PairRules(mode="words")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tok():
    texts = [
        f"( and [ {W[c]} ] ( join ( reverse [ {W[r]} ] ) [ {e} ] ) )"
        for c in CLASSES
        for r in RELATIONS
        for e in LABELS
    ]
    return build_tokenizer(
        train_texts=texts + ["who directed it", "where was he born"], vocab_size=200, extra_tokens=SLOTS
    )


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    return build_seq2seq(config=TINY_T5, tokenizer=tok).eval()


def _random_pairs(rng: random.Random) -> dict:
    rels, classes = rng.sample(RELATIONS, 4), rng.sample(CLASSES, 2)
    rev = lambda r: f"(R {r})" if rng.random() < 0.3 else r  # noqa: E731
    return {
        "class_relation": [(c, rev(r)) for c in classes for r in rng.sample(rels, 2)],
        "relation_relation": [(rev(a), b) for a in rels for b in rels if rng.random() < 0.3],
        "relation_entity": [(r, "m.x") for r in rng.sample(rels, 1)],
        "entity_labels": rng.sample(LABELS, 2),
        "bare_entities": SLOTS[:1],
    }


def _relations_in_order(text: str) -> list[tuple[str, str]]:
    """(role, words) of the schema brackets of a normalised text, in writing order."""
    inv = {w: x for x, w in W.items()}
    found = [inv.get(m.strip(), m.strip()) for m in re.findall(r"\[ ([^\]]*?) \]", text) if " , " in m]
    return [("class" if x in CLASSES else "relation", x) for x in found]


def _allowed_last(pairs: dict, seq: list[tuple[str, str]]) -> bool:
    """The paper's: the first relation in P_r-e (or after a class), then each paired with the one just before."""
    base = lambda r: r[3:-1] if r.startswith("(R ") else r  # noqa: E731
    links = {(base(a), base(b)) for a, b in pairs["relation_relation"]}
    links |= {(b, a) for a, b in links}
    allowed = {r for r, _ in pairs["relation_entity"]}
    if not allowed and not pairs["class_relation"]:
        allowed = {a for a, _ in links}
    for role, x in seq:
        if role == "relation" and x not in allowed:
            return False
        if role == "class" and x not in {c for c, _ in pairs["class_relation"]}:
            return False
        allowed = {b for a, b in links if a == x} | {base(r) for c, r in pairs["class_relation"] if c == x}
    return True


def _allowed_in_order(pairs: dict, seq: list[tuple[str, str]]) -> bool:
    """Each relation is within 2 pairs of P_r-e, or paired with an earlier relation or class (independent check)."""
    base = lambda r: r[3:-1] if r.startswith("(R ") else r  # noqa: E731
    links = {(base(a), base(b)) for a, b in pairs["relation_relation"]}
    links |= {(b, a) for a, b in links}
    allowed = {r for r, _ in pairs["relation_entity"]}
    for _ in range(2):
        allowed |= {b for a, b in links if a in allowed}
    if not allowed and not pairs["class_relation"]:
        allowed = {a for a, _ in links}
    for role, x in seq:
        if role == "relation" and x not in allowed:
            return False
        if role == "class" and x not in {c for c, _ in pairs["class_relation"]}:
            return False
        allowed |= {b for a, b in links if a == x}
        allowed |= {base(r) for c, r in pairs["class_relation"] if c == x}
    return True


def _bag(pairs: dict) -> set[str]:
    """Words of every relation and class of the pairs (a superset of what bag mode may write)."""
    base = lambda r: r[3:-1] if r.startswith("(R ") else r  # noqa: E731
    items = [x for kind in ("class_relation", "relation_relation") for pair in pairs[kind] for x in pair]
    items += [r for r, _ in pairs["relation_entity"]]
    return {w for x in items for w in W[base(x)].split()}


@pytest.mark.parametrize("partners", ["last", "any"])
@pytest.mark.parametrize("mode", ["trie", "bag"])
def test_beam_search_never_leaves_the_allowed_set(tok, model, mode, partners) -> None:
    """Property: over random pair sets, no beam writes a relation (or, in bag mode, a word) outside the allowed set.

    ``last``: the paper's defaults (``chain_heads`` 0); ``any``: ours (``chain_heads`` 2).
    """
    settings = {} if partners == "last" else {"partners": "any", "chain_heads": 2}
    allowed_in_order = _allowed_last if partners == "last" else _allowed_in_order
    rng = random.Random(7 if mode == "trie" else 8)
    index = TokenIndex(tok)
    enc = tok(["who directed it", "where was he born"], return_tensors="pt", padding=True)
    written = relations = 0
    for _ in range(6):
        pairs = [_random_pairs(rng) for _ in range(2)]
        grammars = [SExprGrammar([BaseRules(SLOTS), PairRules(**p, mode=mode, **settings)]) for p in pairs]
        processor = GrammarLogitsProcessor(index, grammars, num_beams=3, max_new_tokens=40)
        with torch.no_grad():
            out = model.generate(**enc, num_beams=3, num_return_sequences=3, max_new_tokens=40, do_sample=False,
                                 logits_processor=LogitsProcessorList([processor]))  # fmt: skip
        for k, text in enumerate(" ".join(t.split()) for t in tok.batch_decode(out, skip_special_tokens=True)):
            p = pairs[k // 3]
            seq = _relations_in_order(text)
            written += len(seq)
            relations += sum(role == "relation" for role, _ in seq)
            if mode == "trie":
                assert allowed_in_order(p, seq), (text, p)
            else:  # every bracket word is a word of the pairs' items or of a detected label
                inside = {w for m in re.findall(r"\[ ([^\]]*?) \]", text) for w in m.split()}
                written += len(re.findall(r"\[ ", text))
                assert inside <= _bag(p) | {w for label in p["entity_labels"] for w in label.split()}, (text, p)
    assert written > 0 and (mode == "bag" or relations > 0)  # the searches did write schema items
