from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kbqa_lit.data.coq.generator_inputs import gold_patterns
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.coq.classifier import SchemaDataModule
from kbqa_lit.datamodules.coq.classifier_inputs import (
    ENT_TASK,
    REL_TASK,
    ItemCollator,
    SchemaKB,
    entity_text,
    gold_entities,
    gold_relations,
    relation_text,
)
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.iri import iri
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("schema_world")
    build_world(d / "w", seed=0)
    build_store(d / "kb", [d / "w" / "kb.nt"], "nt")
    return d


@pytest.fixture(scope="module")
def small(world: Path) -> Path:
    """Twelve training and eight dev examples of the world (fast items)."""
    d = world / "small"
    d.mkdir(exist_ok=True)
    write_jsonl(list(read_jsonl(world / "w" / "train.jsonl"))[:12], d / "train.jsonl")
    write_jsonl(list(read_jsonl(world / "w" / "dev.jsonl"))[:8], d / "dev.jsonl")
    write_jsonl(list(read_jsonl(world / "w" / "test.jsonl"))[:4], d / "test.jsonl")
    return d


def make_dm(world: Path, data: Path, **kw) -> SchemaDataModule:
    kw.setdefault("relations_file", str(world / "w" / "schema.json"))
    return SchemaDataModule(data_dir=str(data), store=str(world / "kb"), vocab_size=300, **kw)


@pytest.fixture(scope="module")
def dm(world: Path, small: Path) -> SchemaDataModule:
    return make_dm(world, small, num_candidates=6)


def test_sampled_items_label_gold_and_include_it(dm: SchemaDataModule) -> None:
    for i, ex in enumerate(dm.examples("train")):
        cands = dm.candidates("train", i)
        gold_r, gold_e = gold_relations(ex), gold_entities(ex)
        assert set(gold_r) <= set(cands.relations) and set(gold_e) <= set(cands.entities)
        assert len(cands.relations) == max(6, len(gold_r)) and len(set(cands.relations)) == len(cands.relations)
        texts = dm.example_texts("train", i)
        rel = [(t, y) for t, y, k in texts if k == REL_TASK]
        ent = [(t, y) for t, y, k in texts if k == ENT_TASK]
        assert [t for t, _ in rel] == [relation_text(ex.question, ex.decomposition, r) for r in cands.relations]
        assert [y for _, y in rel] == [float(r in gold_r) for r in cands.relations]
        assert [y for _, y in ent] == [float(e in gold_e) for e in cands.entities]
        assert all(t.startswith("Entity Classification: ") for t, _ in ent)


def test_entity_items_list_only_refined_one_hop_relations(dm: SchemaDataModule) -> None:
    ex = dm.examples("train")[1]  # spouse → place of birth → containedby
    cands = dm.candidates("train", 1)
    topic = next(iter(ex.topic_entities))
    hops = cands.entity_relations[topic]
    assert "people.person.spouse" in hops and len(hops) > 1
    texts = [t for t, _, k in dm.example_texts("train", 1) if k == ENT_TASK]
    listed = [r for r in gold_relations(ex) if r in hops]
    assert entity_text(ex.question, ex.decomposition, ex.topic_entities[topic], listed) in texts


def test_sampling_is_deterministic_and_seeded(world: Path, small: Path, dm: SchemaDataModule) -> None:
    again = make_dm(world, small, num_candidates=6)
    other = make_dm(world, small, num_candidates=6, negative_seed=7)
    same = [again.candidates("train", i) == dm.candidates("train", i) for i in range(12)]
    differs = [other.candidates("train", i).relations != dm.candidates("train", i).relations for i in range(12)]
    assert all(same) and any(differs)


def test_batches_pad_dynamically_and_carry_task_and_index(dm: SchemaDataModule) -> None:
    dm.setup("fit")
    batch = next(iter(dm.val_dataloader()))
    assert set(batch) == {"input_ids", "attention_mask", "labels", "task", "index"}
    lengths = batch["attention_mask"].sum(1)
    assert int(lengths.max()) == batch["input_ids"].shape[1]
    assert bool((batch["input_ids"][batch["attention_mask"] == 0] == dm.pad_token_id).all())
    assert batch["labels"].dtype == torch.float32 and set(batch["task"].tolist()) == {REL_TASK, ENT_TASK}
    assert batch["index"].tolist() == sorted(batch["index"].tolist())


def test_collator_masks_exactly_the_real_tokens() -> None:
    out = ItemCollator(0)(
        [
            {"input_ids": [5, 6, 1], "label": 1, "task": 0, "index": 3},
            {"input_ids": [7, 1], "label": 0, "task": 1, "index": 4},
        ]
    )
    assert out["input_ids"].tolist() == [[5, 6, 1], [7, 1, 0]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert out["labels"].tolist() == [1.0, 0.0] and out["task"].tolist() == [0, 1]


def test_without_decomposition_items_leave_d_out(world: Path, small: Path) -> None:
    dm = make_dm(world, small, num_candidates=4, use_decomposition=False)
    texts = [t for t, _, _ in dm.example_texts("train", 0)]
    assert texts and not any("[SUBQ]" in t for t in texts)
    assert texts[0].count(" ; ") == 1


def _with_meta(world: Path, out: Path) -> Path:
    out.mkdir(exist_ok=True)
    rows = []
    for ex in list(read_jsonl(world / "w" / "dev.jsonl"))[:5]:
        gold = gold_relations(ex)
        rels = [[r, 0.9 - 0.1 * n] for n, r in enumerate(["film.film.genre", "people.person.spouse", *gold[1:]])]
        topic = next(iter(ex.topic_entities))
        meta = dict(ex.meta)
        meta["relation_candidates"] = rels
        meta["entity_candidates"] = {"m.syn_not_here": "Nobody", topic: ex.topic_entities[topic]}
        meta["entity_relations"] = {"m.syn_not_here": ["film.film.genre"]}  # the topic's are looked up
        rows.append(replace(ex, meta=meta))
    for split in ("train", "dev"):
        write_jsonl(rows, out / f"{split}.jsonl")
    return out


def test_meta_candidates_gold_added_only_in_training(world: Path) -> None:
    data = _with_meta(world, world / "meta")
    dm = make_dm(world, data, candidates="meta", num_candidates=3)
    for i, ex in enumerate(dm.examples("train")):
        gold = gold_relations(ex)
        train, val = dm.candidates("train", i), dm.candidates("val", i)
        assert train.relations[: len(gold)] == gold and len(train.relations) == max(3, len(gold))
        meta_rels = [r for r, _ in ex.meta["relation_candidates"]]
        assert val.relations == meta_rels[:3]
        assert list(val.entities) == ["m.syn_not_here", next(iter(ex.topic_entities))]
        topic = next(iter(ex.topic_entities))
        assert val.entity_relations["m.syn_not_here"] == ["film.film.genre"]
        joined = {r for r, e in gold_patterns(ex.s_expression) if e == topic}
        assert joined and joined <= set(val.entity_relations[topic])  # looked up in the store
        labels = [y for _, y, k in dm.example_texts("val", i) if k == REL_TASK]
        assert labels == [float(r in gold) for r in meta_rels[:3]]


def test_meta_mode_without_meta_is_a_user_error(world: Path, small: Path) -> None:
    dm = make_dm(world, small, candidates="meta")
    with pytest.raises(UserInputError, match="relation_candidates"):
        dm.candidates("train", 0)
    with pytest.raises(UserInputError, match="candidates must be one of"):
        make_dm(world, small, candidates="retrieved")


def test_predict_records_carry_raw_candidates(world: Path, small: Path) -> None:
    with pytest.raises(UserInputError, match="sampled candidates include the gold items"):
        list(make_dm(world, small, num_candidates=5).predict_dataloader())  # auto: no retrieved candidates
    dm = make_dm(world, small, num_candidates=5, predict_batch_size=3, candidates="sampled")  # explicit oracle
    batches = list(dm.predict_dataloader())
    records = [r for b in batches for r in b]
    assert [len(b) for b in batches] == [3, 1] and [r["index"] for r in records] == [0, 1, 2, 3]
    rec = records[0]
    assert set(rec) == {"index", "qid", "question", "decomposition", "relations", "entities"}
    assert all(len(e) == 3 and isinstance(e[2], list) for e in rec["entities"])


def test_one_hop_relations_batched_equal_one_query_each(world: Path) -> None:
    store = open_store(world / "kb")
    ents = [next(iter(ex.topic_entities)) for ex in list(read_jsonl(world / "w" / "train.jsonl"))[:20]]
    kb = SchemaKB(store, batch_size=7)
    batched = kb.one_hop_relations(ents)
    for e in ents[:5]:
        q = f"SELECT DISTINCT ?p WHERE {{ {{ <{iri(e)}> ?p ?o }} UNION {{ ?s ?p <{iri(e)}> }} }}"
        one = {p for p in store.execute(q).answers if p not in ("type.object.name", "type.object.type")}
        assert set(batched[e]) == one
    names = kb.names(ents[:3])
    assert all(isinstance(n, str) and n for n in names.values())


def test_store_is_built_from_the_world_when_missing(tmp_path: Path, world: Path) -> None:
    data = tmp_path / "w"
    data.mkdir()
    for name in ("train.jsonl", "dev.jsonl", "test.jsonl", "kb.nt", "schema.json"):
        src = world / "w" / name
        if name.endswith(".jsonl"):
            write_jsonl(list(read_jsonl(src))[:3], data / name)
        else:
            (data / name).write_bytes(src.read_bytes())
    dm = SchemaDataModule(data_dir=str(data), vocab_size=300, num_candidates=4)
    assert dm.store_spec == str(data / "kb_store")
    schema_rels = {r["id"] for r in json.loads((data / "schema.json").read_text())["relations"]}
    assert set(dm.kb.relation_inventory()) == schema_rels
    assert (data / "kb_store").is_dir() and len(dm.candidates("train", 0).relations) == 4
