"""ExtractorDataModule: FC's relation/class groups on the synthetic world (positive first, same-domain negatives)."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.extractor_texts import schema_domain
from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule, gold_classes
from kbqa_lit.datamodules.relation_retrieval import gold_relations
from kbqa_lit.errors import UserInputError


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return tmp_path_factory.mktemp("fc_ext") / "world"


def _dm(world, **kw):
    args = {"data_dir": str(world), "synthetic_seed": 0, "tokenizer_name_or_path": None, "num_negatives": 3}
    return ExtractorDataModule(**{**args, **kw})


def test_relation_groups_have_the_positive_first_and_same_domain_negatives(world):
    dm = _dm(world)
    rows = dm.rows("train")
    assert sum(len(gold_relations(ex)) for ex in dm.examples("train")) == len(rows)
    for row in rows[:60]:
        gold = set(gold_relations(dm.examples("train")[row["index"]]))
        pos, negs = row["relations"][0], row["relations"][1:]
        assert pos in gold and row["labels"] == [1, 0, 0, 0] and not gold & set(negs)
        same = [r for r in dm.inventory.relations if schema_domain(r) == schema_domain(pos) and r not in gold]
        if len(same) >= 3:
            assert all(schema_domain(n) == schema_domain(pos) for n in negs)
    assert dm.rows("train") == _dm(world).rows("train")  # deterministic given the seed
    assert dm.rows("train") != _dm(world, seed=1).rows("train")
    # the item text read after the question, from the world's schema.json
    assert dm.item_text("people.person.place_of_birth") == "[D] person [N] place of birth [R] city"


def test_class_groups_and_batches(world):
    dm = _dm(world, kind="class", batch_size=2, eval_candidates=5)
    assert "film.film_genre" in dm.inventory and "type.int" not in dm.inventory
    rows = dm.rows("train")
    assert rows and all(r["relations"][0] in gold_classes(dm.examples("train")[r["index"]]) for r in rows)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert batch["group_sizes"].tolist() == [4, 4] and batch["input_ids"].shape[0] == 8
    tokens = dm.tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    assert "[UNK]" not in tokens and tokens.count("[SEP]") == 2  # (q, [D] domain [N] class-name)
    val = dm.rows("val")[0]
    assert len(val["relations"]) == 5  # the BM25 recall size
    with pytest.raises(UserInputError):
        _dm(world, kind="entity")
