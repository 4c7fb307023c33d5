"""FC-KBQA inference end to end on the synthetic world: tiny real parts, a real Oxigraph store, no gold read."""

from __future__ import annotations

import re

import lightning as L
import pytest
import torch

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.fc.composer_examples import FC_META, Components, predicted_components
from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.schema import KBQAExample, read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.fc.composer import ComposerDataModule
from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.datamodules.fc.skeleton import SkeletonParserDataModule
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.lf.normalize import schema_to_words
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from kbqa_lit.pipelines.fc.components import ComponentStage
from kbqa_lit.pipelines.fc.compose import ComposerStage, pair_grammar, view_of
from kbqa_lit.pipelines.fc.detection import ComponentDetector
from kbqa_lit.pipelines.fc.linking import FCEntityLinker, IndexMentionLinker
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from tests.helpers.no_gold import strip_gold
from tests.helpers.tiny import TINY_BERT, TINY_T5

#: The composer rows these tests were written with (ours): the world's plain training file, gold plus distractors.
OURS = {"input_format": "entity-pairs", "train_components": "gold+distractors"}


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("fc_e2e")
    world = root / "world"
    build_world(world, seed=0, size="small")
    build_store(root / "kb", [world / "kb.nt"], "nt")
    store = open_store(root / "kb")
    torch.manual_seed(0)
    rel_dm = ExtractorDataModule(data_dir=str(world), tokenizer_name_or_path=None)
    cls_dm = ExtractorDataModule(kind="class", data_dir=str(world), tokenizer_name_or_path=None)
    rel = ComponentExtractor(
        "relation", encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=rel_dm.tokenizer
    )
    rel.set_ontology(rel_dm.ontology)
    cls = ComponentExtractor("class", encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=cls_dm.tokenizer)
    # top_k = recall_size: the kept relations and classes are BM25's, whatever the untrained (near-tied,
    # thread-order dependent) extractor scores say, so every question has KB-connected pairs
    detector = ComponentDetector(rel, rel_dm.inventory, cls, list(cls_dm.inventory.relations), recall_size=12, top_k=12)
    linker = FCEntityLinker(IndexMentionLinker(EntityIndex.for_store(store)), store, top_k=5)
    pairs = PairBuilder(rel_dm.ontology, store, type_match="kb")
    sk_dm = SkeletonParserDataModule(data_dir=str(world), vocab_size=300)
    parser = MultitaskGenerator(model_config=TINY_T5, tokenizer=sk_dm.tokenizer, alpha=0.0).eval()
    co_dm = ComposerDataModule(data_dir=str(world), vocab_size=600, oracle="components", **OURS)
    composer = MultitaskGenerator(model_config=TINY_T5, tokenizer=co_dm.tokenizer, alpha=0.0).eval()
    stage = ComponentStage(detector, linker, pairs, parser, skeleton_beams=3, max_new_tokens=24)
    dev = list(read_jsonl(world / "dev.jsonl"))[:6]
    yield {"root": root, "world": world, "store": store, "stage": stage, "composer": composer, "dev": dev}
    store.close()


def test_components_are_detected_without_gold_and_feed_the_composer_datamodule(parts):
    stage, dev = parts["stage"], parts["dev"]
    annotated = stage.annotate(dev)
    assert [ex.meta[FC_META] for ex in stage.annotate([strip_gold(ex) for ex in dev])] == [
        ex.meta[FC_META] for ex in annotated
    ]  # the stages read no gold field
    found = [predicted_components(ex) for ex in annotated]
    # two skeletons unless the untrained parser's beams all read the same (the rule then has one)
    assert all(c is not None and c.pairs and 1 <= len(c.skeletons) <= 2 for c in found)
    assert any(c.entities for c in found)  # the KB's names link the mentions
    write_jsonl(annotated, parts["world"] / "dev_fc.jsonl")
    dm = ComposerDataModule(data_dir=str(parts["world"]), val_file="dev_fc.jsonl", vocab_size=600, **OURS)
    rows = dm.row_texts("val")
    assert len(rows) == len(dev) and all("[LF]" in s for s, _ in rows)


def test_constrained_composition_and_the_first_executable_beam(parts):
    stage, dev = parts["stage"], parts["dev"]
    components = [d.components for d in stage.run(dev)]
    executable = {}
    for constraint in ("trie", "bag", "none"):
        composer = ComposerStage(
            parts["composer"], parts["store"], constraint=constraint, num_beams=3, max_new_tokens=40
        )
        beams = composer.beams(dev, components)
        assert [len(b) for b in beams] == [3] * len(dev)
        if constraint == "trie":  # complete expressions, no relation outside the question's pairs
            for bs, c, ex in zip(beams, components, dev, strict=True):
                allowed = {
                    schema_to_words(x.removeprefix("(R ").removesuffix(")"))
                    for p in c.pairs
                    for x in (p.first, p.second)
                }
                grammar = pair_grammar(c, view_of(ex, c), "trie")  # the stage's other settings: the paper's defaults
                for b in bs:
                    assert grammar.accepts(b.split()) or not c.pairs, b  # with a pair, a complete expression exists
                    assert {m for m in re.findall(r"\[ ([^\]]*?) \]", b) if " , " in m} <= allowed, (b, c.pairs)
        selections = composer.answer(dev, components)
        assert len(selections) == len(dev)
        assert all(sel.executable == (sel.chosen_beam is not None) and sel.beams_tried <= 3 for sel in selections)
        executable[constraint] = sum(sel.executable for sel in selections) / len(dev)
    assert executable["trie"] >= executable["none"]  # an untrained composer: only constrained beams execute
    with pytest.raises(UserInputError):
        ComposerStage(parts["composer"], constraint="tree")  # type: ignore[arg-type]


def test_the_stage_and_its_grammar_take_the_papers_decoding_settings_by_default():
    components = Components(
        pairs=[
            Pair("relation-relation", "a.b.c", "d.e.f", 1.0),
            Pair("relation-relation", "d.e.f", "g.h.i", 1.0),
            Pair("relation-entity", "g.h.i", "m.a", 1.0),
        ],
        entities={"m.a": "Alpha"},
    )
    view = view_of(KBQAExample("q", "what?"), components)
    (paper,) = pair_grammar(components, view).rules[1:]
    assert (paper.mode, paper.partners, paper.start_relations) == ("bag", "last", {"g , h , i"})
    (ours,) = pair_grammar(components, view, "trie", 2, "any").rules[1:]
    assert (ours.mode, ours.partners, ours.start_relations) == ("trie", "any", {"a , b , c", "d , e , f", "g , h , i"})
    stage = ComposerStage(None)  # type: ignore[arg-type]
    assert (stage.constraint, stage.chain_heads, stage.partners) == ("bag", 0, "last")
    with pytest.raises(UserInputError, match="partners"):
        ComposerStage(None, partners="first")  # type: ignore[arg-type]


def test_the_callback_constrains_the_composer_with_the_datamodule_pair_rules(parts):
    """ExecutionGuidedEval(constrained="datamodule") asks ComposerDataModule.decoding_rules per question."""
    write_jsonl(parts["stage"].annotate(parts["dev"]), parts["world"] / "dev_cb.jsonl")
    dm = ComposerDataModule(
        data_dir=str(parts["world"]), val_file="dev_cb.jsonl", vocab_size=600, eval_batch_size=6, **OURS
    )
    root = parts["root"]
    callback = ExecutionGuidedEval(store=str(root / "kb_cb"), build_from=[str(parts["world"] / "kb.nt")], num_beams=2,
                                   max_new_tokens=30, workers=1, stages=["validate"], constrained="datamodule",
                                   predictions_dir=str(root / "pred"))  # fmt: skip
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[callback], default_root_dir=str(root / "cb"))  # fmt: skip
    trainer.validate(parts["composer"], datamodule=dm, verbose=False)
    rows = callback.last_rows
    assert len(rows) == len(parts["dev"]) and all(r["constrained"] == "datamodule" for r in rows)
    for r, ex in zip(
        sorted(rows, key=lambda r: r["qid"]), sorted(dm.examples("val"), key=lambda e: e.qid), strict=True
    ):
        c = predicted_components(ex)
        allowed = {
            schema_to_words(x.removeprefix("(R ").removesuffix(")")) for p in c.pairs for x in (p.first, p.second)
        }
        for beam in r["beams"]:
            assert {m for m in re.findall(r"\[ ([^\]]*?) \]", beam) if " , " in m} <= allowed, beam
