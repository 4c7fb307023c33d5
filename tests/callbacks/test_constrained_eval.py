"""ExecutionGuidedEval(constrained="schema"): every beam of an untrained generator is a well-formed expression
over the store's relations and the question's linked entities, and each row says it was constrained."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.kb.grammar import BaseRules, SExprGrammar
from kbqa_lit.modules.coq.multitask_generator import MultitaskGenerator
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


def test_schema_constrained_beams_use_only_the_store_and_linked_entities(root: Path) -> None:
    dm = GenerationDataModule(
        data_dir=str(root), vocab_size=200, use_decomposition=False, patterns="none", mask_entities=True,
        linking="predicted", linking_store=str(root / "store"), linking_build_from=[str(root / "kb.nt")],
        batch_size=4, eval_batch_size=4, cache_dir=str(root / "cache"),
    )  # fmt: skip
    L.seed_everything(0)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    callback = ExecutionGuidedEval(
        store=str(root / "store"), num_beams=3, max_new_tokens=20, workers=1, stages=["test"],
        constrained="schema", predictions_dir=str(root / "pred"),
    )  # fmt: skip
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[callback])  # fmt: skip
    trainer.test(model, datamodule=dm, verbose=False)
    rows = callback.last_rows
    assert rows and all(r["constrained"] == "schema" for r in rows)
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
