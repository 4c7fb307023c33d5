"""CoQ's "separately trained" generator pair: LF beams from the module under test, answers from another checkpoint.

Two tiny generators trained on the same hand-made data (so the same cached tokenizer): an LF-only
one (``alpha: 0``, a couple of steps) and an answer-only one (``lf_weight: 0``, 30 steps: it answers
"London" to everything). Evaluated execution-guided against a real Oxigraph store built from the
questions' KB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L
import pytest

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.callbacks.prediction_writer import PredictionWriter
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.errors import UserInputError
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.foreign_checkpoints import write_foreign_checkpoint
from tests.helpers.tiny import ONE_LAYER_T5
from tests.helpers.toy import born_in, born_in_kb


def _datamodule(root: Path, vocab_size: int = 200, answer_task: bool = True) -> GenerationDataModule:
    return GenerationDataModule(
        data_dir=str(root), vocab_size=vocab_size, use_decomposition=False, patterns="none", mask_entities=True,
        answer_task=answer_task,
        linking="predicted", linking_store=str(root / "store"), linking_build_from=[str(root / "kb.nt")],
        batch_size=8, eval_batch_size=4, cache_dir=str(root / "cache"),
    )  # fmt: skip


def _trainer(**kwargs: Any) -> L.Trainer:
    return L.Trainer(
        accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, **kwargs,
    )  # fmt: skip


def _train(dm: GenerationDataModule, path: Path, steps: int, **hparams: Any) -> Path:
    L.seed_everything(0)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer, learning_rate=0.01, **hparams)
    trainer = _trainer(max_steps=steps, limit_val_batches=0)
    trainer.fit(model, datamodule=dm)
    trainer.save_checkpoint(str(path))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pair")
    train, test = born_in(8, padded=True), born_in(4, offset=2, prefix="t")
    (root / "kb.nt").write_text(born_in_kb(train + test), encoding="utf-8")
    write_jsonl(train, root / "train.jsonl")
    write_jsonl(train[:2], root / "dev.jsonl")
    write_jsonl(test, root / "test.jsonl")
    dm = _datamodule(root)
    return {
        "root": root,
        "dm": dm,
        "lf": _train(dm, root / "lf_only.ckpt", steps=2, alpha=0.0),
        "answer": _train(dm, root / "answer_only.ckpt", steps=30, lf_weight=0.0, alpha=1.0),
    }


def _lf_module_without_its_answers(path: Path) -> tuple[MultitaskGenerator, list[str]]:
    """The LF-only module, whose own ``generate_answer`` must not be used (it records any call)."""
    module = MultitaskGenerator.load_from_checkpoint(str(path))
    calls: list[str] = []

    def refuse(batch: Any, max_new_tokens: int = 32) -> list[str]:
        calls.append("generate_answer")
        return ["from the LF module"] * len(batch["index"])

    module.generate_answer = refuse  # type: ignore[method-assign]
    return module, calls


def test_the_answer_texts_come_from_the_separate_answer_model(world: dict[str, Any], tmp_path: Path) -> None:
    dm, root = world["dm"], world["root"]
    answer_ckpt = str(world["answer"])
    # what each generator answers on its own
    dm.setup("test")
    batches = list(dm.test_dataloader())
    answer_model = MultitaskGenerator.load_from_checkpoint(answer_ckpt).eval()
    expected = [t for b in batches for t in answer_model.generate_answer(b, max_new_tokens=16)]
    lf_own = MultitaskGenerator.load_from_checkpoint(str(world["lf"])).eval()
    own = [t for b in batches for t in lf_own.generate_answer(b, max_new_tokens=16)]
    assert expected == ["London"] * 4 and own != expected

    lf, calls = _lf_module_without_its_answers(world["lf"])
    callback = ExecutionGuidedEval(
        store=str(root / "store"), num_beams=2, max_new_tokens=16, workers=1, stages=["test"],
        predictions_dir=str(tmp_path / "test"), answer_model=answer_ckpt,
    )  # fmt: skip
    _trainer(callbacks=[callback]).test(lf, datamodule=dm, verbose=False)
    rows = callback.last_rows
    assert [r["answer_text"] for r in rows] == expected and calls == []
    assert all(r["answer_source"] == answer_ckpt for r in rows)
    # the fallback rows answer with the answer model's text, mapped to the KB by name ("London" = m.c0)
    fallbacks = [r for r in rows if r["fallback"]]
    assert fallbacks and all(r["answers"] == ["m.c0"] for r in fallbacks)
    assert [r["f1"] for r in fallbacks] == [1.0 if r["gold"] == ["m.c0"] else 0.0 for r in fallbacks]

    # kbqa predict's writer takes the same switch
    writer = PredictionWriter(
        store=str(root / "store"), num_beams=2, max_new_tokens=16, workers=1,
        predictions_dir=str(tmp_path / "predict"), answer_model=answer_ckpt,
    )  # fmt: skip
    _trainer(callbacks=[writer]).predict(lf, datamodule=dm, return_predictions=False)
    # (the module's own predict_step writes a greedy answer of its own, which no row uses)
    assert [r["answer_text"] for r in writer.last_rows] == expected
    assert all(r["answer_source"] == answer_ckpt for r in writer.last_rows)


def test_a_bad_answer_model_is_a_typed_error_naming_the_file(world: dict[str, Any], tmp_path: Path) -> None:
    root, dm = world["root"], world["dm"]
    store = str(root / "store")
    missing = tmp_path / "nowhere.ckpt"
    with pytest.raises(UserInputError, match=rf"answer_model: no checkpoint file: {missing}"):
        ExecutionGuidedEval(store=store, answer_model=str(missing))
    with pytest.raises(UserInputError, match="no checkpoint file"):
        PredictionWriter(store=store, answer_model=str(missing))

    not_a_checkpoint = tmp_path / "notes.ckpt"
    not_a_checkpoint.write_text("not a checkpoint", encoding="utf-8")
    foreign = write_foreign_checkpoint(tmp_path / "other.ckpt")
    other_vocab = tmp_path / "other_vocab"
    other_vocab.mkdir()
    for name in ("train.jsonl", "dev.jsonl", "test.jsonl", "kb.nt"):
        (other_vocab / name).write_bytes((root / name).read_bytes())
    cases = [
        (not_a_checkpoint, dm, "is not a Lightning checkpoint"),
        (foreign, dm, "another module"),
        (world["lf"], dm, "trained without the answer task"),
        (world["answer"], _datamodule(other_vocab, vocab_size=150), "another tokenizer than the data's"),
    ]
    for path, data, message in cases:
        lf = MultitaskGenerator.load_from_checkpoint(str(world["lf"]))
        callback = ExecutionGuidedEval(store=store, workers=1, stages=["test"], answer_model=str(path))
        with pytest.raises(UserInputError, match=message) as err:
            _trainer(callbacks=[callback]).test(lf, datamodule=data, verbose=False)
        assert str(path) in str(err.value)


def test_without_the_answer_task_there_is_no_fallback_text(world: dict[str, Any], tmp_path: Path) -> None:
    """``answer_task: false`` (the "w/o answer task" ablation): rows have no answer text; an answer_model needs it."""
    root, store = world["root"], str(world["root"] / "store")
    no_answers = _datamodule(root, answer_task=False)
    lf = MultitaskGenerator.load_from_checkpoint(str(world["lf"]))
    callback = ExecutionGuidedEval(
        store=store, num_beams=2, max_new_tokens=16, workers=1, stages=["test"], predictions_dir=str(tmp_path)
    )
    _trainer(callbacks=[callback]).test(lf, datamodule=no_answers, verbose=False)
    rows = callback.last_rows
    assert len(rows) == 4 and all(r["answer_text"] is None and r["answer_source"] == "module" for r in rows)
    assert all(r["answers"] == [] for r in rows if r["fallback"])
    paired = ExecutionGuidedEval(store=store, workers=1, stages=["test"], answer_model=str(world["answer"]))
    with pytest.raises(UserInputError, match="no answer-task inputs"):
        _trainer(callbacks=[paired]).test(lf, datamodule=no_answers, verbose=False)
