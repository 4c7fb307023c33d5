"""FC's skeleton-parser and composer datamodules: rows, no gold at evaluation, batches the generator trains on."""

from __future__ import annotations

import shutil

import lightning as L
import pytest

from kbqa_lit.data.fc.composer_examples import FC_META, Components, components_meta, composer_row, predicted_components
from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.gold_pairs import gold_pairs
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.fc.composer import ComposerDataModule
from kbqa_lit.datamodules.fc.skeleton import SkeletonParserDataModule
from kbqa_lit.errors import UserInputError
from kbqa_lit.lightning_cli import mark_oracle_run
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.no_gold import strip_gold
from tests.helpers.tiny import TINY_T5

#: Today's composer rows, ours: relation–entity pairs in the input, gold components plus distractors at training.
OURS = {"input_format": "entity-pairs", "train_components": "gold+distractors"}


def _stand_in_detection(ex) -> Components:
    """A stand-in for ``kbqa fc detect`` on a training question: a wrong pair first, then the gold pairs, best first."""
    gold = [Pair(p.kind, p.first, p.second, 1.0) for p in gold_pairs(ex.s_expression)] if ex.s_expression else []
    pairs = [Pair("class-relation", "film.film", "film.film.genre", 2.0), *gold]
    pairs = [p for kind in ("class-relation", "relation-relation", "relation-entity") for p in pairs if p.kind == kind]
    entities = {"m.pred": "Predicted Name", **ex.topic_entities}
    return Components(pairs, entities, ["(JOIN (R <rel>) <entity>)", "(AND <class> (JOIN <rel> <entity>))"])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The small synthetic world, its dev file cut to 12 rows that carry a pipeline's meta["fc"], and a training file
    as ``kbqa fc detect`` would write it (``detected_train.jsonl``)."""
    root = tmp_path_factory.mktemp("fc_s2s") / "world"
    build_world(root, seed=0, size="small")
    dev = list(read_jsonl(root / "dev.jsonl"))[:12]
    for k, ex in enumerate(dev):  # a stand-in for the FC pipeline's detection
        pairs = [
            Pair("relation-entity", "film.film.genre", "m.pred", 1.5),
            Pair("class-relation", "film.film", "film.film.genre", 1.0),
        ]
        comp = Components(pairs, {"m.pred": "Predicted Name"}, ["(JOIN (R <rel>) <entity>)"])
        if k:  # the first row has none
            ex.meta[FC_META] = {**components_meta(comp), "mentions": ["Predicted Name"]}
    write_jsonl([ex for ex in dev], root / "dev.jsonl")
    shutil.copy(root / "dev.jsonl", root / "full_dev.jsonl")
    write_jsonl([strip_gold(ex) for ex in dev], root / "stripped_dev.jsonl")
    train = list(read_jsonl(root / "train.jsonl"))
    for ex in train:
        ex.meta[FC_META] = components_meta(_stand_in_detection(ex))
    write_jsonl(train, root / "detected_train.jsonl")
    return root


def _args(world, **kw):
    return {"data_dir": str(world), "vocab_size": 300, "batch_size": 4, "eval_batch_size": 4, **kw}


def test_skeleton_rows_mask_gold_mentions_at_training_and_predicted_ones_at_evaluation(world):
    dm = SkeletonParserDataModule(**_args(world))
    train = dm.row_texts("train")
    assert all("<entity0>" in s for s, t in train[:20] if t and "<entity>" in t)
    gold = dm.gold_examples("train")[0]
    assert next(iter(gold.topic_entities.values())) not in train[0][0]
    val = dm.row_texts("val")
    assert all(t is not None and "<rel>" in t for _, t in val)  # gold skeletons: the validation loss
    stripped = SkeletonParserDataModule(**_args(world, val_file="stripped_dev.jsonl")).row_texts("val")
    assert [s for s, _ in val] == [s for s, _ in stripped]  # no gold reaches the sources
    oracle = SkeletonParserDataModule(**_args(world, oracle="linking"))
    assert oracle.oracle_inputs() == ["linking"] and dm.oracle_inputs() == []
    assert any("<entity0>" in s for s, _ in oracle.row_texts("val")[:1])  # the gold mention of row 0
    with pytest.raises(UserInputError):
        SkeletonParserDataModule(**_args(world, oracle="components"))
    plain = SkeletonParserDataModule(**_args(world, mask_mentions=False))
    assert plain.row_texts("train")[0] == (gold.question, train[0][1])
    assert [s for s, _ in plain.row_texts("val")] == [ex.question for ex in plain.gold_examples("val")]


def test_composer_rows_read_the_pipeline_at_evaluation_and_never_the_gold(world):
    dm = ComposerDataModule(**_args(world, num_distractors=2, **OURS))
    source, target = dm.row_texts("train")[0]
    assert "[REL]" in source and "[LF]" in source and target.startswith("(")
    val = dm.row_texts("val")
    assert dm.missing["val"] == 1 and ";" not in val[0][0]  # no meta["fc"]: the question and its (no) entities
    assert "[REL][ film , film , genre ] [ENT][E0]" in val[1][0] and "Predicted Name" not in val[1][0]
    assert dm.examples("val")[1].topic_entities == {"m.pred": "Predicted Name"}  # what the callback unmasks with
    stripped = ComposerDataModule(**_args(world, num_distractors=2, val_file="stripped_dev.jsonl", **OURS))
    assert [s for s, _ in val] == [s for s, _ in stripped.row_texts("val")]
    oracle = ComposerDataModule(**_args(world, num_distractors=2, oracle="components", **OURS))
    assert oracle.oracle_inputs() == ["components"]
    config = {"data": {"init_args": {"linking": "predicted", "oracle": "components"}},
              "trainer": {"logger": {"init_args": {"name": "logs"}}}}  # fmt: skip
    assert mark_oracle_run(config) and config["trainer"]["logger"]["init_args"]["name"] == "logs-oracle-components"
    assert oracle.row_texts("val")[1][0] != val[1][0]  # the gold components
    bare = ComposerDataModule(**_args(world, knowledge="none", use_skeletons=False, **OURS)).row_texts("val")[1][0]
    assert "[REL]" not in bare and "[LF]" not in bare
    unpaired = ComposerDataModule(**_args(world, knowledge="components", **OURS)).row_texts("val")[1][0]
    assert "[CL][ film , film ]; [REL][ film , film , genre ]; [ENT][E0]" in unpaired  # components without pairs
    with pytest.raises(UserInputError):
        ComposerDataModule(**_args(world, knowledge="all", **OURS))
    with pytest.raises(UserInputError, match="meta"):
        ComposerDataModule(**_args(world, val_file="train.jsonl", **OURS)).row_texts("val")


def test_composer_trains_on_the_detected_training_file_as_it_is_tested(world):
    """The default, the paper's: training rows are the training questions' own meta["fc"], in the §4.5 format."""
    dm = ComposerDataModule(**_args(world, train_file="detected_train.jsonl"))
    golds = dm.gold_examples("train")
    assert dm.hparams.input_format == "paper" and dm.hparams.train_components == "detected"
    assert dm.detected_training() == [predicted_components(ex) for ex in golds]  # same reader, order and size
    assert dm.row_texts("train") == [composer_row(ex, predicted_components(ex), max_tokens=None) for ex in golds]
    ex = next(g for g in golds if any(p.kind == "relation-entity" for p in gold_pairs(g.s_expression)))
    source, target = composer_row(ex, predicted_components(ex))
    assert "[CL][ film , film ] [REL][ film , film , genre ]; " in source and "] [ENT]" not in source  # no r–e pair
    assert source.count("[ENT]") == len(predicted_components(ex).entities)  # every linked entity, bare
    assert source.endswith("; [LF](JOIN (R <rel>) <entity>); [LF](AND <class> (JOIN <rel> <entity>))")
    assert "[E" in target  # the gold entity is among the detected ones: its input slot
    question = dm.gold_examples("val")[1].question
    assert dm.row_texts("val")[1][0] == (  # evaluation: the same format
        f"{question}; [CL][ film , film ] [REL][ film , film , genre ]; [ENT][E0]; [LF](JOIN (R <rel>) <entity>)"
    )
    ours = ComposerDataModule(**_args(world, train_file="detected_train.jsonl", **OURS))
    assert ours.row_texts("train") != dm.row_texts("train")  # gold components plus distractors, shuffled
    assert "[REL][ film , film , genre ] [ENT][E0]" in ours.row_texts("val")[1][0]


def test_detected_training_needs_meta_fc(world):
    with pytest.raises(UserInputError, match=r"train\.jsonl: training question .*no meta\['fc'\].*kbqa fc detect"):
        ComposerDataModule(**_args(world))  # the plain training file (the tokenizer is trained on the rows)
    with pytest.raises(UserInputError, match="no detected training file .*nowhere.jsonl"):
        ComposerDataModule(**_args(world, train_file="nowhere.jsonl"))
    with pytest.raises(UserInputError, match="train_components"):
        ComposerDataModule(**_args(world, train_components="gold"))
    with pytest.raises(UserInputError, match="input_format"):
        ComposerDataModule(**_args(world, **{**OURS, "input_format": "pairs"}))


@pytest.mark.parametrize("cls", [SkeletonParserDataModule, ComposerDataModule])
def test_the_generator_trains_and_generates_on_the_batches(world, cls):
    dm = cls(**_args(world, **({"train_file": "detected_train.jsonl"} if cls is ComposerDataModule else {})))
    model = MultitaskGenerator(model_config=TINY_T5, tokenizer=dm.tokenizer, alpha=0.0, max_target_length=24)
    trainer = L.Trainer(fast_dev_run=1, accelerator="cpu", logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False)  # fmt: skip
    trainer.fit(model, datamodule=dm)
    batch = next(iter(dm.val_dataloader()))
    assert set(batch) == {"input_ids", "attention_mask", "labels", "index"}
    beams = model.generate_lf(batch, num_beams=2, num_return_sequences=2, max_new_tokens=8)
    assert len(beams) == batch["input_ids"].shape[0] and all(len(b) == 2 for b in beams)
