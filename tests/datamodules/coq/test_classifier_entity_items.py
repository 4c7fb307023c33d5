"""Entity items list predicted relations at evaluation (gold only as an oracle); the cross-fold pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.coq.classifier import SchemaDataModule
from kbqa_lit.datamodules.coq.classifier_inputs import ENT_TASK, entity_text, fold_of, gold_relations
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.store.loaders import build_store


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("entity_items")
    build_world(d / "w", seed=0)
    build_store(d / "kb", [d / "w" / "kb.nt"], "nt")
    small = d / "small"
    small.mkdir()
    train = list(read_jsonl(d / "w" / "train.jsonl"))[:12]
    write_jsonl(train, small / "train.jsonl")
    dev = list(read_jsonl(d / "w" / "dev.jsonl"))[:6]
    dev[0] = replace(dev[0], meta={**dev[0].meta, "refined_relations": [["people.person.spouse", 0.9]]})
    write_jsonl(dev, small / "dev.jsonl")
    write_jsonl(dev, small / "test.jsonl")
    return d


def make_dm(world: Path, **kw) -> SchemaDataModule:
    return SchemaDataModule(
        data_dir=str(world / "small"),
        store=str(world / "kb"),
        relations_file=str(world / "w" / "schema.json"),
        vocab_size=300,
        num_candidates=6,
        candidates="sampled",
        **kw,
    )


def _entity_texts(dm: SchemaDataModule, split: str, i: int) -> list[str]:
    return [t for t, _, k in dm.example_texts(split, i) if k == ENT_TASK]


def _expected(dm: SchemaDataModule, split: str, i: int, listed: list[str]) -> list[str]:
    ex, cands = dm.examples(split)[i], dm.candidates(split, i)
    d = dm._decomposition(ex, split)
    hops = cands.entity_relations
    return [
        entity_text(ex.question, d, label, [r for r in dict.fromkeys(listed) if r in set(hops.get(e, []))][:8])
        for e, label in cands.entities.items()
    ]


def test_validation_lists_predicted_relations_only(world: Path) -> None:
    dm = make_dm(world)
    for split in ("val", "test"):
        for i, ex in enumerate(dm.examples(split)):
            if "refined_relations" in ex.meta:
                listed = ["people.person.spouse"]
            else:
                listed = list(dm.candidates(split, i).relations)
            assert _entity_texts(dm, split, i) == _expected(dm, split, i, listed)
    # the oracle setting lists gold relations at validation (an upper bound), and says so by name
    oracle = make_dm(world, entity_item_relations="oracle")
    ex = oracle.examples("val")[0]
    listed = list(dict.fromkeys([*gold_relations(ex), "people.person.spouse"]))
    assert _entity_texts(oracle, "val", 0) == _expected(oracle, "val", 0, listed)


def test_training_lists_gold_or_predicted(world: Path, tmp_path: Path) -> None:
    gold = make_dm(world)
    ex = gold.examples("train")[1]
    assert _entity_texts(gold, "train", 1) == _expected(gold, "train", 1, gold_relations(ex))
    # predicted: the cross-fold pass's refined relations, read back by qid
    refined = [replace(e, meta={**e.meta, "refined_relations": [["film.film.genre", 0.8]]}) for e in [ex]]
    write_jsonl(refined, tmp_path / "fold0.jsonl")
    pred = make_dm(world, entity_item_relations="predicted", refined_relations_files=[str(tmp_path / "fold0.jsonl")])
    assert pred.examples("train")[1].meta["refined_relations"] == [["film.film.genre", 0.8]]
    assert _entity_texts(pred, "train", 1) == _expected(pred, "train", 1, ["film.film.genre"])
    # an example the pass did not cover lists its candidate relations (with a warning)
    with pytest.warns(UserWarning, match="cross-fold"):
        texts = _entity_texts(pred, "train", 0)
    assert texts == _expected(pred, "train", 0, list(pred.candidates("train", 0).relations))
    with pytest.raises(UserInputError, match="refined-relations file"):
        make_dm(world, refined_relations_files=[str(tmp_path / "missing.jsonl")])


def test_cross_fold_splits_train_and_predict(world: Path) -> None:
    all_train = [e.qid for e in read_jsonl(world / "small" / "train.jsonl")]
    seen: list[str] = []
    for fold in (0, 1):
        dm = make_dm(world, num_folds=2, fold=fold, predict_file=str(world / "small" / "train.jsonl"))
        train = [e.qid for e in dm.examples("train")]
        held = [e.qid for e in dm.examples("predict")]
        assert not set(train) & set(held) and sorted(train + held) == sorted(all_train)
        assert all(fold_of(q, 2) == fold for q in held)
        assert len(dm.examples("val")) == 6  # validation is not folded
        assert held and train
        seen += held
    assert sorted(seen) == sorted(all_train)  # every training question is held out exactly once
    for bad in ({"num_folds": 2}, {"num_folds": 1, "fold": 0}, {"num_folds": 2, "fold": 2}):
        with pytest.raises(UserInputError, match="num_folds"):
            make_dm(world, **bad)
    with pytest.raises(UserInputError, match="entity_item_relations"):
        make_dm(world, entity_item_relations="gold-ish")


def test_cross_fold_predict_writes_refined_relations_read_back(world: Path, tmp_path: Path) -> None:
    """The cross-fold step: ``kbqa predict`` on a held-out fold of train writes ``meta.refined_relations``."""
    from kbqa_lit.lightning_cli import build_cli

    config = Path(__file__).resolve().parents[3] / "configs" / "coq" / "schema_classifier.yaml"
    out = tmp_path / "fold1.jsonl"
    args = [
        "predict",
        "--config",
        str(config),
        f"--data.init_args.data_dir={world / 'small'}",
        "--data.init_args.synthetic_seed=null",
        f"--data.init_args.store={world / 'kb'}",
        f"--data.init_args.relations_file={world / 'w' / 'schema.json'}",
        "--data.init_args.vocab_size=300",
        "--data.init_args.candidates=sampled",
        "--data.init_args.num_folds=2",
        "--data.init_args.fold=1",
        f"--data.init_args.predict_file={world / 'small' / 'train.jsonl'}",
        "--model.init_args.model_config={d_model: 32, d_ff: 64, num_layers: 1, num_heads: 2, d_kv: 16}",
        f"--trainer.default_root_dir={tmp_path}",
        "--trainer.logger=false",
        "--trainer.enable_progress_bar=false",
        f"--trainer.callbacks.init_args.out={out}",
    ]
    build_cli(args, run=True)
    rows = list(read_jsonl(out))
    assert rows and all(fold_of(r.qid, 2) == 1 and "refined_relations" in r.meta for r in rows)
    dm = make_dm(world, entity_item_relations="predicted", refined_relations_files=[str(out)])
    got = {e.qid: e.meta.get("refined_relations") for e in dm.examples("train")}
    assert all(got[r.qid] == r.meta["refined_relations"] for r in rows)
