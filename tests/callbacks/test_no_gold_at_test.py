"""No gold at test time: stripping every gold entity from the test file changes nothing a model sees or answers.

The generator's test-time inputs (topic-entity slots) and the execution-guided callback's label map come
from linking (kbqa_lit.data.linking), so a test file with its gold topic entities and gold-form labels
and the same file without them give identical inputs, beams, answers and metrics. With ``linking: gold``
the run is an oracle: its metrics are logged under ``oracle/`` and its logger's run name says so.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import lightning as L
import pytest

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.lightning_cli import ORACLE_RUN_SUFFIX, mark_oracle_run
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.no_gold import strip_gold
from tests.helpers.tiny import ONE_LAYER_T5
from tests.helpers.toy import born_in, born_in_kb


def _named_ids(examples: list[KBQAExample]) -> list[KBQAExample]:
    """One KB id per person name (born_in numbers its topic ids per split)."""
    out = []
    for ex in examples:
        ((old, name),) = ex.topic_entities.items()
        new = "m.person_" + name.lower().replace(" ", "_")
        out.append(dataclasses.replace(ex, topic_entities={new: name}, s_expression=ex.s_expression.replace(old, new)))
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nogold")
    train = _named_ids(born_in(12, padded=True, decomposition=True))
    test = _named_ids(born_in(6, offset=2, prefix="t", decomposition=True))  # gold decompositions end with the answer
    for ex in test:  # gold-form labels a linker could never produce
        ex.meta["entity_labels"] = {"m.gold_only": "Gold Only Person"}
    (root / "kb.nt").write_text(born_in_kb(train + test), encoding="utf-8")
    dirs = {}
    variants = {
        "gold": test,
        "stripped": [strip_gold(ex, keep_answers=True) for ex in test],  # gold answers kept for scoring
        "bare": [strip_gold(ex) for ex in test],
    }
    for name, rows in variants.items():
        d = root / name
        d.mkdir()
        write_jsonl(train, d / "train.jsonl")
        write_jsonl(train[:4], d / "dev.jsonl")
        write_jsonl(rows, d / "test.jsonl")
        dirs[name] = d
    dirs["root"] = root
    return dirs


def _datamodule(data_dir: Path, root: Path, linking: str = "predicted") -> GenerationDataModule:
    return GenerationDataModule(
        data_dir=str(data_dir),
        vocab_size=200,
        use_decomposition=True,
        patterns="none",
        mask_entities=True,
        linking=linking,
        linking_store=str(root / "store"),
        linking_build_from=[str(root / "kb.nt")],
        batch_size=4,
        eval_batch_size=8,
        tokenizer_name_or_path=None,
        cache_dir=str(root / f"cache_{data_dir.name}_{linking}"),
    )


def _test(dm: GenerationDataModule, root: Path, name: str) -> ExecutionGuidedEval:
    L.seed_everything(0)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    callback = ExecutionGuidedEval(
        store=str(root / "store"), num_beams=3, max_new_tokens=12, workers=1, stages=["test"],
        predictions_dir=str(root / f"pred_{name}"),
    )  # fmt: skip
    trainer = L.Trainer(
        accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[callback]
    )
    trainer.test(model, datamodule=dm, verbose=False)
    return callback


def test_gold_fields_in_the_test_file_change_nothing(world) -> None:
    root = world["root"]
    gold_dm, stripped_dm = _datamodule(world["gold"], root), _datamodule(world["stripped"], root)
    gold_dm.setup("test")
    stripped_dm.setup("test")
    views = gold_dm.examples("test")
    assert [v.topic_entities for v in views] == [v.topic_entities for v in stripped_dm.examples("test")]
    assert all("Gold Only Person" not in v.entity_labels().values() for v in views)
    assert all(
        g.topic_entities.keys() <= v.topic_entities.keys()
        for g, v in zip(gold_dm.gold_examples("test"), views, strict=True)
    )
    assert gold_dm.dataset("test").data["input_ids"] == stripped_dm.dataset("test").data["input_ids"]
    with_gold, without = _test(gold_dm, root, "gold"), _test(stripped_dm, root, "stripped")
    keys = ("beams", "chosen_sexpr", "answers", "linked")
    assert [[r[k] for k in keys] for r in with_gold.last_rows] == [[r[k] for k in keys] for r in without.last_rows]
    assert all(r["linking"] == "predicted" for r in with_gold.last_rows)
    # the gold file's scores are real scores (gold answers stay for scoring); the stripped file has the same answers
    assert with_gold.last_metrics["f1"] == pytest.approx(without.last_metrics["f1"])
    bare_dm = _datamodule(world["bare"], root)  # no gold answers either: the same predictions, nothing to score
    bare = _test(bare_dm, root, "bare")
    assert [[r[k] for k in keys] for r in bare.last_rows] == [[r[k] for k in keys] for r in with_gold.last_rows]


def test_gold_linking_is_an_oracle_and_says_so(world) -> None:
    root = world["root"]
    dm = _datamodule(world["gold"], root, linking="gold")
    dm.setup("test")
    assert dm.examples("test") == dm.gold_examples("test")
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    callback = ExecutionGuidedEval(store=str(root / "store"), num_beams=2, max_new_tokens=8, workers=1, stages=["test"])
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, callbacks=[callback],
                        default_root_dir=str(root / "oracle"))  # fmt: skip
    logged = trainer.test(model, datamodule=dm, verbose=False)[0]
    assert "oracle/test/f1" in logged and "test/f1" not in logged
    assert callback.last_path.name.startswith("oracle_test_predictions")
    config = {"data": {"init_args": {"linking": "gold"}}, "trainer": {"logger": {"init_args": {"name": "logs"}}}}
    assert mark_oracle_run(config) and config["trainer"]["logger"]["init_args"]["name"] == "logs" + ORACLE_RUN_SUFFIX
    honest = {"data": {"init_args": {"linking": "predicted"}}, "trainer": {"logger": {"init_args": {"name": "logs"}}}}
    assert not mark_oracle_run(honest) and honest["trainer"]["logger"]["init_args"]["name"] == "logs"


def test_predicted_linking_without_a_source_warns(world) -> None:
    root = world["root"]
    dm = GenerationDataModule(
        data_dir=str(world["gold"]), vocab_size=200, patterns="none", mask_entities=True, linking="predicted",
        cache_dir=str(root / "cache_nostore"),
    )  # fmt: skip
    with pytest.warns(UserWarning, match="gave no entity to any of the 6 test questions: set linking_store"):
        views = dm.examples("test")
    assert all(v.topic_entities == {} for v in views)  # the gold ones are not a fallback


def test_oracle_patterns_are_an_oracle_and_say_so(world) -> None:
    root = world["root"]
    dm = _datamodule(world["gold"], root)
    assert dm.oracle_inputs() == []
    dm = GenerationDataModule(data_dir=str(world["gold"]), vocab_size=200, patterns="gold", linking="gold")
    assert dm.oracle_inputs() == ["linking", "patterns"]
    config = {"data": {"init_args": {"patterns": "gold"}}, "trainer": {"logger": {"init_args": {"name": "logs"}}}}
    assert mark_oracle_run(config) and config["trainer"]["logger"]["init_args"]["name"] == "logs-oracle-patterns"
    assert GenerationDataModule(data_dir=str(world["gold"])).hparams.patterns == "none"  # no oracle by default


def test_gold_decompositions_never_reach_test_inputs(tmp_path: Path) -> None:
    """The synthetic world's decompositions end with the gold answers: test inputs must not carry them."""
    dm = GenerationDataModule(
        data_dir=str(tmp_path / "syn"), synthetic_seed=0, vocab_size=300, use_decomposition=True, patterns="none",
        linking="dataset-given",
    )  # fmt: skip
    golds, views = dm.gold_examples("test"), dm.examples("test")
    assert all(g.decomposition for g in golds)  # the leak this guards against
    assert all(v.decomposition is None for v in views)
    texts = dm.tokenizer.batch_decode(list(dm.dataset("test").data["input_ids"][:50]), skip_special_tokens=False)
    assert texts and all("[ANS]" not in t for t in texts)
    train_texts = dm.tokenizer.batch_decode(dm.dataset("train").data["input_ids"][:20], skip_special_tokens=False)
    assert any("[ANS]" in t for t in train_texts)  # training keeps the file's decompositions
