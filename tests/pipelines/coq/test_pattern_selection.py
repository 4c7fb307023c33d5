from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kbqa_lit.data.coq.generator_inputs import gold_patterns
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.coq.patterns import (
    Connectivity,
    PatternSelector,
    ask_query,
    pattern_scores,
    sub_chains,
)

D = "[SUBQ] who is Ada married to? [ANS] Alan [SUBQ] where was Alan born? [ANS] London"


class TableScorer:
    """A deterministic scorer: a fixed table per (chunk number, item); records its calls."""

    REL = {"spouse": [0.9, 0.1], "birth": [0.2, 0.8], "genre": [0.05, 0.05]}
    ENT = {"m.ada": [0.7, 0.3], "m.bob": [0.1, 0.2]}

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, tuple]] = []

    @staticmethod
    def _chunk(d: str | None) -> int:
        return 0 if d is None or "married" in d else 1

    def score_relations(self, question: str, decomposition: str | None, relations: Sequence[str]) -> list[float]:
        self.calls.append(("rel", decomposition, tuple(relations)))
        return [self.REL[r][self._chunk(decomposition)] for r in relations]

    def score_entities(self, question: str, decomposition: str | None, entities: Sequence[tuple]) -> list[float]:
        self.calls.append(("ent", decomposition, tuple((e, lab, tuple(rs)) for e, lab, rs in entities)))
        return [self.ENT[e][self._chunk(decomposition)] for e, _, _ in entities]


def test_sub_chains_split_the_decomposition() -> None:
    assert sub_chains(D) == ["[SUBQ] who is Ada married to? [ANS] Alan", "[SUBQ] where was Alan born? [ANS] London"]
    assert sub_chains(None) == [None] and sub_chains("  ") == [None]
    assert sub_chains("[SUBQ] a? [ANS] b [SCHEMA] Ada [ENT] [SEP] spouse [REL]") == ["[SUBQ] a? [ANS] b"]


def test_scores_follow_the_formula_over_sub_chains() -> None:
    scorer = TableScorer()
    pairs = [("spouse", "m.ada"), ("birth", "m.ada"), ("birth", "m.bob"), ("genre", "m.bob")]
    got = pattern_scores(
        "q?",
        D,
        pairs,
        scorer,
        entity_labels={"m.ada": "Ada"},
        entity_relations={"m.ada": ["birth", "spouse", "other"], "m.bob": ["genre"]},
        refined_relations=["spouse", "birth"],
    )
    # s(P) = Σ_i [s(q, D_i, r) + s(q, D_i, e)] over the two sub-chains
    expected = [0.9 + 0.7 + 0.1 + 0.3, 0.2 + 0.7 + 0.8 + 0.3, 0.2 + 0.1 + 0.8 + 0.2, 0.05 + 0.1 + 0.05 + 0.2]
    assert got == pytest.approx(expected)
    chunks = sub_chains(D)
    assert [(kind, d) for kind, d, _ in scorer.calls] == [
        ("rel", chunks[0]),
        ("ent", chunks[0]),
        ("rel", chunks[1]),
        ("ent", chunks[1]),
    ]
    # entity items: label, then the 1-hop relations among the refined ones, in refined order
    assert scorer.calls[1][2] == (("m.ada", "Ada", ("spouse", "birth")), ("m.bob", "m.bob", ()))
    assert pattern_scores("q?", None, pairs[:1], TableScorer()) == pytest.approx([0.9 + 0.7])
    assert pattern_scores("q?", D, [], scorer) == []


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[KBQAExample]]:
    d = tmp_path_factory.mktemp("patterns")
    build_world(d / "w", seed=0)
    build_store(d / "kb", [d / "w" / "kb.nt"], "nt")
    return d / "kb", list(read_jsonl(d / "w" / "train.jsonl"))[:40]


def test_connectivity_against_the_real_store(world: tuple[Path, list[KBQAExample]]) -> None:
    store_dir, examples = world
    store = open_store(store_dir)
    gold = [p for ex in examples for p in gold_patterns(ex.s_expression)]
    entities = list(dict.fromkeys(e for _, e in gold))[:8]
    relations = list(dict.fromkeys(r for r, _ in gold))[:8]
    pairs = [(r, e) for r in relations for e in entities] + [("film.film.genre", "not-an-entity")]
    conn = Connectivity(store, batch_size=9)
    got = conn.connected(pairs)
    asked = [store.execute(ask_query(r, e)).answers == ["true"] for r, e in pairs]
    assert got == asked and any(got) and not all(got)
    assert all(conn.connected(gold[:10]))  # gold pairs are joined in the KB, in either direction
    misses = store.misses
    assert conn.connected(pairs) == got and store.misses == misses  # cached per pair


def test_selector_modes(world: tuple[Path, list[KBQAExample]]) -> None:
    store_dir, examples = world
    store = open_store(store_dir)
    ex = next(e for e in examples if len(gold_patterns(e.s_expression)) >= 1 and e.decomposition)
    (rel, ent), *_ = gold_patterns(ex.s_expression)
    relations = [rel, "people.person.spouse", "film.film.genre", "music.album.genre"]
    entities = [ent, "m.syn_does_not_exist"]

    class Flat:
        def score_relations(self, q: str, d: str | None, rels: Sequence[str]) -> list[float]:
            return [0.9 if r == rel else 0.1 for r in rels]

        def score_entities(self, q: str, d: str | None, ents: Sequence[tuple]) -> list[float]:
            return [0.5 for _ in ents]

    scored = PatternSelector(store, top_k=2).select(ex, relations, entities, scorer=Flat())
    assert scored[0]["relation"] == rel and scored[0]["entity"] == ent
    assert scored[0]["label"] == ex.entity_labels()[ent]
    n_chunks = len(sub_chains(ex.decomposition))
    assert scored[0]["score"] == pytest.approx(n_chunks * (0.9 + 0.5))
    assert len(scored) <= 2 and all(p["entity"] != "m.syn_does_not_exist" for p in scored)
    assert [p["score"] for p in scored] == sorted((p["score"] for p in scored), reverse=True)

    # random: a seeded sample of the entities' 1-hop relations (KB-connected by construction)
    hops = {ent: [rel, "type.object.name", "people.person.spouse"]}
    rand = PatternSelector(store, top_k=2, mode="random", seed=3)
    first = rand.select(ex, relations, entities, entity_relations=hops)
    assert first == rand.select(ex, relations, entities, entity_relations=hops)
    assert len(first) == 2 and all(p["score"] is None for p in first)
    assert {(p["relation"], p["entity"]) for p in first} <= {(rel, ent), ("people.person.spouse", ent)}
    assert rand.select(ex, relations, entities) == []  # no 1-hop relations known: nothing to sample
    real_hops = {ent: [r for r in relations if store.execute(ask_query(r, ent)).answers == ["true"]]}
    sampled = PatternSelector(store, top_k=10, mode="random").select(ex, [], [ent], entity_relations=real_hops)
    assert all(store.execute(ask_query(p["relation"], p["entity"])).answers == ["true"] for p in sampled)

    oracle = PatternSelector(None, mode="oracle").select(ex, [], [])
    assert [(p["relation"], p["entity"]) for p in oracle] == gold_patterns(ex.s_expression)

    with pytest.raises(UserInputError, match="scorer"):
        PatternSelector(store).select(ex, relations, entities)
    with pytest.raises(UserInputError, match="mode"):
        PatternSelector(store, mode="best")  # type: ignore[arg-type]


def test_candidate_pairs_beyond_the_refined_items(world: tuple[Path, list[KBQAExample]]) -> None:
    """Pairs of all candidates are scored; entity items list only the refined relations."""
    store_dir, examples = world
    store = open_store(store_dir)
    ex = next(e for e in examples if gold_patterns(e.s_expression))
    (rel, ent), *_ = gold_patterns(ex.s_expression)
    seen: list[tuple] = []

    class Record:
        def score_relations(self, q: str, d: str | None, rels: Sequence[str]) -> list[float]:
            return [0.9 if r == rel else 0.1 for r in rels]

        def score_entities(self, q: str, d: str | None, ents: Sequence[tuple]) -> list[float]:
            seen.extend(ents)
            return [0.5 for _ in ents]

    hops = {ent: [rel, "people.person.spouse"]}
    got = PatternSelector(store, top_k=3).select(
        ex, [rel, "film.film.genre"], [ent], scorer=Record(), entity_relations=hops, refined_relations=["x.y.z"]
    )
    assert got and got[0]["relation"] == rel
    assert all(rels == () or list(rels) == [] for _, _, rels in seen)  # rel is a candidate, not refined


@pytest.mark.parametrize("source", ["candidates", "refined"])
def test_writer_pair_sources(world: tuple[Path, list[KBQAExample]], source: str) -> None:
    """``pairs: candidates`` pairs every candidate; ``pairs: refined`` only the refined items."""
    from types import SimpleNamespace

    from kbqa_lit.pipelines.coq.pattern_writer import PatternWriter

    store_dir, examples = world
    store = open_store(store_dir)
    ex = next(e for e in examples if gold_patterns(e.s_expression))
    (rel, ent), *_ = gold_patterns(ex.s_expression)

    class Scorer:
        hparams = SimpleNamespace(threshold=0.5, max_entity_relations=8)

        def score_relations(self, q: str, d: str | None, rels: Sequence[str]) -> list[float]:
            return [0.3 if r == rel else 0.1 for r in rels]  # the gold relation is below the threshold

        def score_entities(self, q: str, d: str | None, ents: Sequence[tuple]) -> list[float]:
            return [0.9 if e == ent else 0.2 for e, _, _ in ents]

    writer = PatternWriter(top_k=5, pairs=source, min_refined=0)
    writer._selector = PatternSelector(store, top_k=5)
    dm = SimpleNamespace(examples=lambda split: [ex], hparams={"use_decomposition": True})
    rec = {
        "index": 0,
        "relations": [["people.person.spouse", 0.7], [rel, 0.3]],
        "entities": [[ent, 0.9]],
        "entity_labels": {ent: "x"},
        "entity_relations": {ent: [rel]},
    }
    writer.on_predict_batch_end(SimpleNamespace(datamodule=dm), Scorer(), [rec], None, 0)  # type: ignore[arg-type]
    got = [(p["relation"], p["entity"]) for p in writer._rows[0].meta["patterns"]]
    assert got == ([(rel, ent)] if source == "candidates" else [])
    with pytest.raises(ValueError, match="pairs"):
        PatternWriter(pairs="all")  # type: ignore[arg-type]
