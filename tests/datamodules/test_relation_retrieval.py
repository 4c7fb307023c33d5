"""RelationRetrievalDataModule: groups, negatives, determinism, padding; synthetic world and converted data."""

from __future__ import annotations

import json

import pytest

from kbqa_lit.datamodules.relation_retrieval import RelationRetrievalDataModule, gold_relations
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.lf.iri import relation_id_for
from tests.helpers.shared_data import shared_path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return tmp_path_factory.mktemp("rr") / "world"


def _dm(world, **kw):
    args = {"data_dir": str(world), "synthetic_seed": 0, "tokenizer_name_or_path": None, "num_negatives": 6}
    return RelationRetrievalDataModule(**{**args, **kw})


def test_training_groups_have_one_positive_and_sampled_negatives(world):
    dm = _dm(world)
    rows = dm.rows("train")
    ex = dm.examples("train")[rows[0]["index"]]
    gold = gold_relations(ex)
    assert rows[0]["relations"][0] in gold and rows[0]["labels"][0] == 1
    for row in rows[:50]:
        g = set(gold_relations(dm.examples("train")[row["index"]]))
        assert len(row["relations"]) == 7 and not (set(row["relations"][1:]) & g)
        assert len(set(row["relations"])) == 7
    # hard negatives: the BM25 best non-gold relation is among the negatives
    top_bm25 = next(r for r, _ in dm.bm25.rank(ex.question) if r not in gold)
    assert top_bm25 in rows[0]["relations"][1:]
    assert sum(len(gold_relations(e)) for e in dm.examples("train")) == len(rows)


def test_negatives_are_deterministic_given_the_seed(world):
    a, b, c = _dm(world), _dm(world), _dm(world, seed=1, hard_negative_ratio=0.0)
    assert a.rows("train") == b.rows("train")
    assert a.rows("train") != c.rows("train")


def test_batches_are_dynamically_padded(world):
    dm = _dm(world, batch_size=4, eval_batch_size=3)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert batch["input_ids"].shape[0] == 28 and batch["group_sizes"].tolist() == [7] * 4
    assert int(batch["attention_mask"].sum(1).max()) == batch["input_ids"].shape[1]
    val = next(iter(dm.val_dataloader()))
    assert val["group_sizes"].tolist() == [len(dm.inventory)] * 3
    assert val["labels"].sum() == val["n_gold"].sum()


def test_bad_gold_sexpr_names_the_file(tmp_path):
    bad = tmp_path / "train.jsonl"
    bad.write_text(json.dumps({"qid": "q1", "question": "x?", "answers": [], "s_expression": "(JOIN"}) + "\n")
    inv = tmp_path / "rels.txt"
    inv.write_text("a.b.c\n")
    dm = RelationRetrievalDataModule(train_file=str(bad), inventory_file=str(inv), tokenizer_name_or_path=None)
    with pytest.raises(DataFormatError, match="train.jsonl:q1"):
        dm.rows("train")
    with pytest.raises(UserInputError):
        RelationRetrievalDataModule(tokenizer_name_or_path=None)


def test_small_inventory_gives_short_groups(tmp_path):
    """MetaQA-style: 9 relations, ``relation_id_for`` ids; a group cannot exceed the inventory."""
    rels = [
        "directed_by",
        "written_by",
        "starred_actors",
        "release_year",
        "in_language",
        "has_tags",
        "has_genre",
        "has_imdb_votes",
        "has_imdb_rating",
    ]
    inv = tmp_path / "rels.txt"
    inv.write_text("\n".join(relation_id_for(r, "metaqa") for r in rels) + "\n")
    rows = []
    for i, q in enumerate(["who directed [Volcano]", "what movies did [Tom Hanks] act in"]):
        sexpr = f"(JOIN (R metaqa.movie.directed_by) (JOIN metaqa.movie.starred_actors m.mq_x{i}))"
        rows.append({"qid": f"q{i}", "question": q, "answers": [], "s_expression": sexpr})
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dm = RelationRetrievalDataModule(
        train_file=str(path), inventory_file=str(inv), tokenizer_name_or_path=None, num_negatives=15
    )
    assert len(dm.inventory) == 9
    groups = dm.rows("train")
    assert len(groups) == 4 and all(len(g["relations"]) == 8 for g in groups)


@pytest.mark.slow
def test_real_metaqa_dev_file(tmp_path):
    from kbqa_lit.cli import main

    src = shared_path("metaqa")
    out = tmp_path / "dev.jsonl"
    assert (
        main(["data", "convert", "--format", "metaqa", "--input", str(src), "--out", str(out), "--split", "dev"]) == 0
    )
    lines = out.read_text().splitlines()[::500]
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(lines) + "\n")
    dm = RelationRetrievalDataModule(val_file=str(small), tokenizer_name_or_path=None)
    assert len(dm.inventory) <= 9 and all(r.startswith("metaqa.movie.") for r in dm.inventory)
    row = dm.rows("val")[0]
    assert row["n_gold"] >= 1 and sum(row["labels"]) == row["n_gold"]
