"""Experiments laid out as the kbqa CLI lays them out with Lightning's CSVLogger, made in tmp.

``root`` plays the folder the runs were started in (relative paths in the configs are relative
to it); ``mtime`` orders the runs as they would have run:

======================================  =====  ===================================================
run                                     stage  what it shows
======================================  =====  ===================================================
``exp/logs/version_0``                  fit    α 0.2, checkpoints in ``exp/checkpoints``
``copy/exp/logs/version_0``             fit    the same config started in ``copy/`` (later): must
                                               not take the test below
``exp/logs/version_1``                  test   ``--ckpt_path exp/checkpoints/last.ckpt``
``exp2/logs/version_0``                 fit    α 0.6, no ``dirpath``: Lightning's default folder
``exp2/logs/version_1``                 test   a checkpoint in ``exp2/logs/version_0/checkpoints``
``exp2/logs/version_2``                 valid. no checkpoint, same config as exp2's fit
``lonely/logs/version_0``               test   α 0.9, no checkpoint: joins nothing
======================================  =====  ===================================================
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

EPOCHS = 3
STEPS_PER_EPOCH = 4
HOPS = (1, 2, 3)
QUESTIONS_PER_HOP = 4


def expected_val_f1(alpha: float, epoch: int) -> float:
    """Made-up validation F1 of the run with ``alpha`` after ``epoch``."""
    return round(0.25 + 0.15 * epoch + 0.1 * alpha, 6)


def expected_test_f1(alpha: float) -> float:
    """Made-up test F1 of the model trained with ``alpha``."""
    return round(0.5 + 0.2 * alpha, 6)


def cli_config(save_dir: str, alpha: float, dirpath: str | None, ckpt_path: str | None) -> dict:
    """A resolved LightningCLI config in the shape the kbqa CLI saves (the parts that matter here)."""
    return {
        "seed_everything": 0,
        "trainer": {
            "logger": {
                "class_path": "lightning.pytorch.loggers.CSVLogger",
                "init_args": {"save_dir": save_dir, "name": "logs"},
            },
            "callbacks": [
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {"dirpath": dirpath, "monitor": "val/f1"},
                },
                {"class_path": "kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval", "init_args": {"num_beams": 5}},
            ],
            "max_epochs": EPOCHS,
            "default_root_dir": save_dir,
        },
        "model": {
            "class_path": "kbqa_lit.modules.multitask_generator.MultitaskGenerator",
            "init_args": {"alpha": alpha, "learning_rate": 0.003},
        },
        "data": {
            "class_path": "kbqa_lit.datamodules.coq.generation.GenerationDataModule",
            "init_args": {"data_dir": "data/metaqa", "test_file": "data/metaqa/test.jsonl", "batch_size": 32},
        },
        "ckpt_path": ckpt_path,
    }


def write_run(
    root: Path,
    save_dir: str,
    stage: str,
    alpha: float,
    *,
    dirpath: str | None = None,
    ckpt_path: str | None = None,
    mtime: float,
) -> Path:
    """One CSVLogger run as ``kbqa fit|test|validate`` writes it; returns its ``version_<n>`` folder."""
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(save_dir=str(root / save_dir), name="logs")
    config = cli_config(save_dir, alpha, dirpath, ckpt_path)
    logger.log_hyperparams({"alpha": alpha, "learning_rate": 0.003, "batch_size": 32, "backbone": "t5"})
    logger.log_hyperparams({"config_yaml": yaml.safe_dump(config), "stage": stage})
    if stage == "FITTING":
        step = 0
        for epoch in range(EPOCHS):
            for _ in range(STEPS_PER_EPOCH):
                logger.log_metrics({"train/loss": 4.0 / (step + 1), "epoch": epoch}, step=step)
                step += 1
            f1 = expected_val_f1(alpha, epoch)
            logger.log_metrics({"val/f1": f1, "val/hit1": round(f1 - 0.05, 6), "epoch": epoch}, step=step - 1)
    else:
        prefix = "test" if stage == "TESTING" else "val"
        f1 = expected_test_f1(alpha) if prefix == "test" else expected_val_f1(alpha, EPOCHS - 1)
        logger.log_metrics({f"{prefix}/f1": f1, f"{prefix}/hit1": round(f1 - 0.1, 6), "epoch": 0}, step=0)
    logger.save()
    logger.finalize("success")
    run = Path(logger.log_dir)
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for path in (run / "hparams.yaml", run / "metrics.csv", run / "config.yaml", run):
        os.utime(path, (mtime, mtime))
    return run


def write_metaqa_predictions(run: Path, root: Path) -> tuple[Path, Path]:
    """A gold file with ``meta.hops`` and ExecutionGuidedEval rows scoring 1-hop best, 3-hop worst."""
    gold, rows = [], []
    for hop in HOPS:
        for i in range(QUESTIONS_PER_HOP):
            qid = f"metaqa-{hop}hop-test-{i}"
            gold.append(
                {
                    "qid": qid,
                    "question": f"q {qid}",
                    "answers": [{"id": f"m.a{i}", "name": f"a{i}", "kind": "entity"}],
                    "topic_entities": {},
                    "meta": {"dataset": "metaqa", "hops": hop},
                }
            )
            right = i < QUESTIONS_PER_HOP - hop + 1  # 4, 3, 2 of 4 right
            rows.append(
                {
                    "index": len(rows),
                    "qid": qid,
                    "answers": [f"m.a{i}"] if right else ["m.wrong"],
                    "f1": 1.0 if right else 0.0,
                    "precision": 1.0 if right else 0.0,
                    "recall": 1.0 if right else 0.0,
                    "hit1": 1.0 if right else 0.0,
                    "hit1_any": 1.0 if right else 0.0,
                    "em": None,
                    "executable": True,
                }
            )
    gold_path = root / "data" / "metaqa" / "test.jsonl"
    gold_path.parent.mkdir(parents=True, exist_ok=True)
    gold_path.write_text("".join(json.dumps(g) + "\n" for g in gold), encoding="utf-8")
    pred_path = run / "test_predictions_epoch0.jsonl"
    pred_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return gold_path, pred_path


@pytest.fixture(scope="package")
def experiments_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs of the module docstring under one tmp folder (plus MetaQA-style predictions)."""
    root = tmp_path_factory.mktemp("experiments")
    t0 = 1_700_000_000.0
    write_run(root, "exp", "FITTING", 0.2, dirpath="exp/checkpoints", mtime=t0)
    write_run(root / "copy", "exp", "FITTING", 0.2, dirpath="exp/checkpoints", mtime=t0 + 10)
    test = write_run(root, "exp", "TESTING", 0.2, ckpt_path="exp/checkpoints/last.ckpt", mtime=t0 + 20)
    write_run(root, "exp2", "FITTING", 0.6, mtime=t0 + 30)
    ckpt = "exp2/logs/version_0/checkpoints/epoch=2-step=12.ckpt"
    write_run(root, "exp2", "TESTING", 0.6, ckpt_path=ckpt, mtime=t0 + 40)
    write_run(root, "exp2", "VALIDATING", 0.6, mtime=t0 + 50)
    write_run(root, "lonely", "TESTING", 0.9, mtime=t0 + 60)
    write_metaqa_predictions(test, root)
    return root
