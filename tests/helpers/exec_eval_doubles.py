"""Test doubles for ExecutionGuidedEval: a tiny real KB, a fixed-output generator, a tiny datamodule.

Only the MODEL side is faked (``FakeGenerator.generate_lf``/``generate_answer`` return fixed
strings per example index); the store is a real Oxigraph store built from N-Triples.

Run as a script, this file is the DDP job of ``test_execution_eval.py``: Lightning's subprocess
launcher re-runs it once per rank.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.datamodules.samplers import UnrepeatedDistributedSampler
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"
LABELS = {"m.a": "Alpha", "m.b": "Beta", "m.d1": "Dee One", "m.d2": "Dee Two", "m.us": "Usland"}
KB_NT = "".join(
    f"<{NS}{s}> <{NS}{p}> {o} .\n"
    for s, p, o in [
        ("m.a", "film.film.directed_by", f"<{NS}m.d1>"),
        ("m.a", "film.film.directed_by", f"<{NS}m.d2>"),
        ("m.b", "film.film.directed_by", f"<{NS}m.d1>"),
        ("m.a", "film.film.country", f"<{NS}m.us>"),
        ("m.d1", "people.person.nationality", f"<{NS}m.us>"),
        *[(e, "type.object.name", f'"{n}"@en') for e, n in LABELS.items()],
    ]
)

DIRECTORS_OF_ALPHA = "(JOIN (R film.film.directed_by) m.a)"
FILMS_OF_DEE_ONE = "(JOIN film.film.directed_by m.d1)"
FILMS_OF_DEE_TWO = "(JOIN film.film.directed_by m.d2)"
EMPTY = "(JOIN (R film.film.edited_by) m.a)"
COUNT_ONE = "(COUNT (JOIN film.film.directed_by m.d2))"
COUNT_ZERO = "(COUNT (JOIN film.film.edited_by m.d1))"
NATIONALITY = "(JOIN (R people.person.nationality) m.d1)"
UNMAPPABLE = "( join ( reverse [ film , film , directed by ] ) [ Gamma Zeta Omega ] )"
BROKEN = "( join ( reverse [ film , film , directed by ] [ Alpha ] "


def _n(expr: str) -> str:
    return normalize_sexpr(expr, LABELS)


def _ex(qid: str, question: str, gold: list[tuple[str, str, str]], sexpr: str | None, topics: list[str]) -> KBQAExample:
    return KBQAExample(
        qid=qid,
        question=question,
        answers=[Answer(i, n, k) for i, n, k in gold],  # type: ignore[arg-type]
        topic_entities={t: LABELS[t] for t in topics},
        s_expression=sexpr,
        meta={"semantics": "exclude-topic", "entity_candidates": dict(LABELS)},  # as from a linker
    )


#: (example, beams in order, generated answer text); seven questions: an odd number for 2 ranks.
CASES: list[tuple[KBQAExample, list[str], str]] = [
    (  # second beam executes: F1 1, EM 1
        _ex("q0", "who directed Alpha?", [("m.d1", "Dee One", "entity"), ("m.d2", "Dee Two", "entity")],
            DIRECTORS_OF_ALPHA, ["m.a"]),
        [_n(EMPTY), _n(DIRECTORS_OF_ALPHA)],
        "Dee One",
    ),
    (  # first beam executes with half the answers: P 1, R 1/2, F1 2/3, EM 0
        _ex("q1", "what films did Dee One direct?", [("m.a", "Alpha", "entity"), ("m.b", "Beta", "entity")],
            FILMS_OF_DEE_ONE, ["m.d1"]),
        [_n(FILMS_OF_DEE_TWO), _n(FILMS_OF_DEE_ONE)],
        "Alpha | Beta",
    ),
    (  # COUNT 0 is skipped, COUNT 1 wins
        _ex("q2", "how many films did Dee Two direct?", [("1", "1", "literal")], COUNT_ONE, ["m.d2"]),
        [_n(COUNT_ZERO), _n(COUNT_ONE)],
        "2",
    ),
    (  # nothing maps: fallback to the text, mapped by name
        _ex("q3", "where is Beta's director from?", [("m.us", "Usland", "entity")],
            "(JOIN (R people.person.nationality) (JOIN (R film.film.directed_by) m.b))", ["m.b"]),
        [UNMAPPABLE, BROKEN],
        "Usland",
    ),
    (  # no gold S-expression (EM not measured); fallback, one part unknown: P 1/2, R 1, hit1 1/2
        _ex("q4", "who edited Alpha?", [("m.d1", "Dee One", "entity")], None, ["m.a"]),
        [_n(EMPTY)],
        "Somebody | Dee One",
    ),
    (  # a wrong beam executes: all zero
        _ex("q5", "which film is from Usland?", [("m.a", "Alpha", "entity")], "(JOIN film.film.country m.us)",
            ["m.us"]),
        [_n(NATIONALITY), _n("(JOIN film.film.country m.us)")],
        "Alpha",
    ),
    (  # duplicates skipped, third beam wins
        _ex("q6", "what did Dee Two direct?", [("m.a", "Alpha", "entity")], FILMS_OF_DEE_TWO, ["m.d2"]),
        [_n(EMPTY), _n(EMPTY), _n(FILMS_OF_DEE_TWO), _n(NATIONALITY)],
        "Beta",
    ),
]  # fmt: skip
EXAMPLES = [c[0] for c in CASES]

#: Hand-computed metrics over the seven questions (see the comments of CASES).
EXPECTED = {
    "f1": (1 + 2 / 3 + 1 + 1 + 2 / 3 + 0 + 1) / 7,
    "hit1": (1 + 1 + 1 + 1 + 0.5 + 0 + 1) / 7,
    "hit1_any": 6 / 7,
    "em": 3 / 6,
    "executable": 5 / 7,
    "fallback_rate": 2 / 7,
}
#: Per question: (chosen beam, sorted answers, executable, fallback).
EXPECTED_ROWS = {
    "q0": (1, ["m.d1", "m.d2"], True, False),
    "q1": (0, ["m.a"], True, False),
    "q2": (1, ["1"], True, False),
    "q3": (None, ["m.us"], False, True),
    "q4": (None, ["Somebody", "m.d1"], False, True),
    "q5": (0, ["m.us"], True, False),
    "q6": (2, ["m.a"], True, False),
}


def build_kb(root: Path) -> Path:
    """Build the tiny KB as an on-disk Oxigraph store under ``root``; return the store directory."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "kb.nt").write_text(KB_NT, encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


def collate(indices: list[int]) -> dict[str, torch.Tensor]:
    """A batch is just the example indices."""
    return {"index": torch.tensor(indices, dtype=torch.long)}


class TinyDataModule(L.LightningDataModule):
    """Examples for every split; loaders of indices.

    With ``shard`` (like ``GenerationDataModule``), evaluation loaders under DDP use
    :class:`UnrepeatedDistributedSampler` (each question on exactly one rank); without it, a plain
    loader that Lightning gives its padding ``DistributedSampler``.
    """

    def __init__(self, shard: bool = True, batch_size: int = 2) -> None:
        super().__init__()
        self.shard = shard
        self.batch_size = batch_size

    def examples(self, split: str) -> list[KBQAExample]:
        assert split in ("val", "test", "predict"), split
        return EXAMPLES

    def _loader(self) -> DataLoader:
        idx = list(range(len(EXAMPLES)))
        trainer = self.trainer
        sampler = None
        if self.shard and trainer is not None and trainer.world_size > 1:
            sampler = UnrepeatedDistributedSampler(idx, trainer.world_size, trainer.global_rank)  # type: ignore[arg-type]
        return DataLoader(idx, batch_size=self.batch_size, collate_fn=collate, sampler=sampler)

    def train_dataloader(self) -> DataLoader:
        return self._loader()

    def val_dataloader(self) -> DataLoader:
        return self._loader()

    def test_dataloader(self) -> DataLoader:
        return self._loader()

    def predict_dataloader(self) -> DataLoader:
        return self._loader()


class FakeGenerator(L.LightningModule):
    """The model side only: fixed beams and answer texts per example index."""

    def __init__(self, predict_returns_outputs: bool = False) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.predict_returns_outputs = predict_returns_outputs
        self.lf_calls: list[dict[str, Any]] = []

    def generate_lf(
        self, batch: dict[str, torch.Tensor], num_beams: int, num_return_sequences: int, max_new_tokens: int
    ) -> list[list[str]]:
        assert not torch.is_grad_enabled()
        self.lf_calls.append({"num_beams": num_beams, "n": num_return_sequences, "max_new_tokens": max_new_tokens})
        return [list(CASES[int(i)][1][:num_return_sequences]) for i in batch["index"]]

    def generate_answer(self, batch: dict[str, torch.Tensor], max_new_tokens: int) -> list[str]:
        return [CASES[int(i)][2] for i in batch["index"]]

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.layer(torch.ones(len(batch["index"]), 1)).pow(2).sum()

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        return None

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        return None

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> dict[str, Any] | None:
        if not self.predict_returns_outputs:
            return None
        idx = [int(i) for i in batch["index"]]
        return {"beams": [CASES[i][1] for i in idx], "answer_texts": [CASES[i][2] for i in idx]}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    """The DDP job: validate on ``--devices`` CPU processes; every rank writes what it saw."""
    from lightning.pytorch.loggers import CSVLogger

    p = argparse.ArgumentParser()
    p.add_argument("--store", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--sampler", choices=["unrepeated", "lightning"], default="unrepeated")
    args = p.parse_args()
    callback = ExecutionGuidedEval(args.store, num_beams=4, workers=2, timeout=10.0)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=args.devices,
        strategy="ddp" if args.devices > 1 else "auto",
        logger=CSVLogger(args.out, name="csv"),
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.validate(FakeGenerator(), datamodule=TinyDataModule(shard=args.sampler == "unrepeated"))
    report = {
        "rank": trainer.global_rank,
        "world_size": trainer.world_size,
        "metrics": callback.last_metrics,
        "duplicates": callback.last_duplicates,
        "logged": {k: float(v) for k, v in trainer.callback_metrics.items()},
        "path": str(callback.last_path),
        "log_dir": trainer.log_dir,
    }
    (args.out / f"rank{trainer.global_rank}.json").write_text(json.dumps(report), encoding="utf-8")
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # a gloo group left to process exit can abort it (SIGABRT)


if __name__ == "__main__":
    main()
