"""Run ExecutionGuidedEval over an untrained one-layer T5 on a folder of born-in style questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.tiny import ONE_LAYER_T5


def untrained_test(root: Path, **settings: Any) -> ExecutionGuidedEval:
    """``trainer.test`` on ``root``'s splits (``kb.nt`` beside them, predicted linking); the callback after it.

    Args:
        root: A folder with ``train.jsonl``, ``dev.jsonl``, ``test.jsonl`` and ``kb.nt``.
        settings: More :class:`ExecutionGuidedEval` arguments.
    """
    dm = GenerationDataModule(
        data_dir=str(root), vocab_size=200, use_decomposition=False, patterns="none", mask_entities=True,
        linking="predicted", linking_store=str(root / "store"), linking_build_from=[str(root / "kb.nt")],
        batch_size=4, eval_batch_size=4, cache_dir=str(root / "cache"), answer_task=False,
    )  # fmt: skip
    L.seed_everything(0)
    model = MultitaskGenerator(model_config=ONE_LAYER_T5, tokenizer=dm.tokenizer)
    callback = ExecutionGuidedEval(
        store=str(root / "store"), num_beams=2, max_new_tokens=12, workers=1, stages=["test"], **settings
    )
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[callback], default_root_dir=str(root))  # fmt: skip
    trainer.test(model, datamodule=dm, verbose=False)
    return callback
