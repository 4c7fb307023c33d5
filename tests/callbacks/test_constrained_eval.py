"""ExecutionGuidedEval(constrained="schema"): every beam of an untrained generator is a well-formed expression
over the store's relations and the question's linked entities, and each row says it was constrained."""

from __future__ import annotations

import re
from pathlib import Path

import lightning as L
import pytest
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from kbqa_lit.callbacks.constrained_decoding import ConstrainedDecoding
from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.decoding.grammar import BaseRules, SExprGrammar
from kbqa_lit.kb.store import open_store
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.tiny import ONE_LAYER_T5
from tests.helpers.toy import born_in, born_in_kb


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("constrained")
    train, test = born_in(8, padded=True), born_in(4, offset=2, prefix="t")
    (root / "kb.nt").write_text(born_in_kb(train + test), encoding="utf-8")
    write_jsonl(train, root / "train.jsonl")
    write_jsonl(train[:2], root / "dev.jsonl")
    write_jsonl(test, root / "test.jsonl")
    return root


def _datamodule(root: Path) -> GenerationDataModule:
    return GenerationDataModule(
        data_dir=str(root), vocab_size=200, use_decomposition=False, patterns="none", mask_entities=True,
        linking="predicted", linking_store=str(root / "store"), linking_build_from=[str(root / "kb.nt")],
        batch_size=4, eval_batch_size=4, cache_dir=str(root / "cache"),
    )  # fmt: skip


def _test_rows(root: Path, constrained: str, **extra: object) -> list[dict]:
    dm = _datamodule(root)
    L.seed_everything(0)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    callback = ExecutionGuidedEval(
        store=str(root / "store"), num_beams=3, max_new_tokens=20, workers=1, stages=["test"],
        constrained=constrained, predictions_dir=str(root / f"pred_{constrained}"), **extra,
    )  # fmt: skip
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[callback])  # fmt: skip
    trainer.test(model, datamodule=dm, verbose=False)
    rows = callback.last_rows
    assert rows and all(r["constrained"] == constrained for r in rows)
    return rows


def test_schema_constrained_beams_use_only_the_store_and_linked_entities(root: Path) -> None:
    rows = _test_rows(root, "schema")
    grammar = SExprGrammar([BaseRules([f"[E{k}]" for k in range(8)])])
    for r in rows:
        for beam in r["beams"]:
            assert grammar.accepts(beam.split()), beam
            brackets = [b.strip() for b in beam.split("[")[1:]]
            for b in brackets:
                content = b.split("]")[0].strip()
                assert " , " not in content or content == "people , person , place of birth", beam
                assert " , " in content or content in r["linked"].values(), (beam, r["linked"])
    with pytest.raises(ValueError, match="constrained"):
        ExecutionGuidedEval(store=str(root / "store"), constrained="strict")  # type: ignore[arg-type]


def test_connected_beams_join_a_person_only_along_the_edge_the_kb_has(root: Path) -> None:
    """The toy KB has ``person place_of_birth city`` only: ``( join [ place of birth ] person )`` is empty."""
    forward = re.compile(r"\( join \[ people , person , place of birth \] (\[E\d\]|\[ [^\]]* \])")
    rows = _test_rows(root, "connected")
    grammar = SExprGrammar([BaseRules([f"[E{k}]" for k in range(8)])])
    for r in rows:
        people = {f"[ {name} ]" for eid, name in r["linked"].items() if eid.startswith("m.p")}
        for beam in r["beams"]:
            assert grammar.accepts(beam.split()), beam
            assert not any(m in people or m.startswith("[E") for m in forward.findall(beam)), beam
    # the grammars the mode builds, on the linked (never gold) views, with the edges read from the store
    dm = _datamodule(root)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    views = dm.examples("test")
    with open_store(root / "store") as store:
        grammars = ConstrainedDecoding("connected", 3, 20).processor(model, {}, views, store).grammars
        schema = ConstrainedDecoding("schema", 3, 20).processor(model, {}, views, store).grammars
    linked = [(g, s) for view, g, s in zip(views, grammars, schema, strict=True) if view.topic_entities]
    assert linked  # the toy KB names some ids twice: the linker finds the person of some questions
    for g, s in linked:
        assert g.accepts("( join ( reverse [ people , person , place of birth ] ) [E0] )".split())
        assert not g.accepts("( join [ people , person , place of birth ] [E0] )".split())
        assert s.accepts("( join [ people , person , place of birth ] [E0] )".split())  # schema alone allows it


class _EosFrom(LogitsProcessor):
    """Counts the beam search's steps and, from step ``first`` on, makes EOS free (log-probability 0)."""

    def __init__(self, eos: int, first: int) -> None:
        self.eos, self.first, self.steps = eos, first, 0

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.steps += 1
        if self.steps >= self.first:
            scores[:, self.eos] = 0.0
        return scores


def test_early_stopping_reaches_the_search(root: Path) -> None:
    dm = _datamodule(root)
    dm.setup("test")
    batch = next(iter(dm.test_dataloader()))
    L.seed_everything(0)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    steps = {}
    for stop in ("never", True):
        counter = _EosFrom(dm.tokenizer.eos_token_id, first=4)
        beams = model.generate_lf(batch, num_beams=3, num_return_sequences=3, max_new_tokens=20,
                                  logits_processor=LogitsProcessorList([counter]), early_stopping=stop)  # fmt: skip
        assert len(beams) == len(batch["index"]) and all(len(b) == 3 for b in beams)
        steps[stop] = counter.steps
    assert steps[True] == 4 and steps["never"] > 4  # True: done once every question has 3 finished beams
    rows = _test_rows(root, "schema", early_stopping=True)  # the callback's setting: beams still well-formed
    grammar = SExprGrammar([BaseRules([f"[E{k}]" for k in range(8)])])
    assert all(grammar.accepts(beam.split()) for r in rows for beam in r["beams"])
    with pytest.raises(ValueError, match="early_stopping"):
        ExecutionGuidedEval(store=str(root / "store"), early_stopping="sometimes")  # type: ignore[arg-type]


def test_the_generation_limit_defaults_to_the_longest_trained_target(root: Path) -> None:
    dm = _datamodule(root)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer, max_target_length=24)
    unset = ExecutionGuidedEval(store=str(root / "store"))
    assert unset.generation_limit(model) == 24  # the module's max_target_length
    assert ExecutionGuidedEval(store=str(root / "store"), max_new_tokens=40).generation_limit(model) == 40
    assert unset.generation_limit(L.LightningModule()) == 128  # a module that does not say
    assert unset._decoder(24).max_new_tokens == 24  # the budget guard gets the same limit
