"""FC-KBQA's pilot study on the synthetic world: fine vs coarse ranking of 1-hop candidate logical forms.

Trains, on the CPU with small budgets, the relation and class extractors (the fine ranker: the sum
of their softmax-normalised scores of a form's relation and class; ``fine_with_skeleton`` adds the
probability the skeleton parser, trained for as many steps, gives the form's skeleton) and a coarse ranker (one
cross-encoder over question + whole normalised form), each for the same number of steps of
batch 8 groups with the same number of negatives and the same encoder, then ranks up to 100
candidate forms per 1-hop test question and prints top-1 accuracy per generalisation level as JSON.
The candidates (``--candidates``): ``kb`` (default, the paper's coarse baseline's) — the 1-hop forms the
KB has around the gold's entity, with and without their answers' classes
(:mod:`kbqa_lit.pipelines.fc.pilot_kb`; a candidate with the gold's answers counts as right); ``swap``
(ours, before) — the gold's structure with same-domain relations and classes swapped in
(:mod:`kbqa_lit.pipelines.fc.pilot`). Levels: computed against the training
split (:mod:`kbqa_lit.data.fc.levels`; the synthetic world's 1-hop test questions are i.i.d. or
zero-shot — a one-relation form cannot be a new composition).

    OMP_NUM_THREADS=1 python benchmarks/fc_pilot.py                       # tiny BERT, 300 steps each
    OMP_NUM_THREADS=1 python benchmarks/fc_pilot.py --encoder minilm --steps 100
    OMP_NUM_THREADS=1 python benchmarks/fc_pilot.py --candidates swap            # the earlier candidates
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import TypeVar

import lightning as L
import torch

from kbqa_lit.backbones.encoders import MINILM, build_encoder_tokenizer
from kbqa_lit.data.fc.levels import split_levels
from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.datamodules.fc.skeleton import SkeletonParserDataModule
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.modules.fc.lf_ranker import LogicalFormRanker
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from kbqa_lit.pipelines.fc.pilot import (
    coarse_scores,
    coarse_training_groups,
    fine_scores,
    pilot_questions,
    top1_accuracy,
)

TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}


def _encoder(kind: str) -> dict:
    if kind == "minilm":
        return {"encoder_name_or_path": MINILM}
    return {"encoder_name_or_path": None, "encoder_config": TINY}


M = TypeVar("M", bound=L.LightningModule)


def _fit(model: M, dm: L.LightningDataModule, args: argparse.Namespace) -> M:
    """``model`` trained ``args.steps`` steps on ``dm`` (no validation, logging or checkpoints), in eval mode."""
    trainer = L.Trainer(
        max_steps=args.steps, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
    )  # fmt: skip
    trainer.fit(model, datamodule=dm)
    model.eval()
    return model


def train_extractor(kind: str, world: Path, args: argparse.Namespace) -> ComponentExtractor:
    """A relation or class extractor trained for ``args.steps`` steps (the real datamodule and Trainer)."""
    dm = ExtractorDataModule(
        kind=kind,
        data_dir=str(world),
        tokenizer_name_or_path=MINILM if args.encoder == "minilm" else None,
        num_negatives=args.negatives,
        eval_candidates=0,
        batch_size=8,
        seed=args.seed,
    )
    model = ComponentExtractor(
        kind=kind,
        ontology=str(world / "schema.json"),
        tokenizer=dm.tokenizer,
        learning_rate=args.lr,
        **_encoder(args.encoder),
    )
    return _fit(model, dm, args)


def train_skeleton_parser(world: Path, args: argparse.Namespace) -> MultitaskGenerator:
    """FC-KBQA's skeleton parser (a tiny T5, its config's shape) trained ``args.steps`` steps on the training split."""
    dm = SkeletonParserDataModule(data_dir=str(world), oracle="linking", vocab_size=1000, max_source_length=48,
                                  max_target_length=48, batch_size=16)  # fmt: skip
    model = MultitaskGenerator(
        model_config={"d_model": 128, "d_ff": 256, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4,
                      "d_kv": 32, "dropout_rate": 0.05},
        tokenizer=dm.tokenizer, alpha=0.0, learning_rate=3e-3, warmup_ratio=0.05, max_target_length=48,
    )  # fmt: skip
    return _fit(model, dm, args)


def train_coarse(groups: list[tuple[str, list[str]]], args: argparse.Namespace) -> LogicalFormRanker:
    """The coarse ranker, trained on (question, [gold form, negatives]) groups with the same loss and budget."""
    if args.encoder == "minilm":
        tokenizer = build_encoder_tokenizer(MINILM)
    else:
        texts = [q for q, _ in groups] + [t for _, g in groups for t in g]
        tokenizer = build_encoder_tokenizer(None, train_texts=texts, vocab_size=2000)
    model = LogicalFormRanker(tokenizer=tokenizer, learning_rate=args.lr, **_encoder(args.encoder))
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    rng = random.Random(args.seed)
    model.train()
    for step in range(args.steps):
        if step % max(1, len(groups) // 8) == 0:
            rng.shuffle(groups)
        batch = [groups[(step * 8 + i) % len(groups)] for i in range(8)]
        firsts = [q for q, g in batch for _ in g]
        seconds = [t for _, g in batch for t in g]
        enc = tokenizer(firsts, seconds, truncation=True, max_length=64, padding=True, return_tensors="pt")
        scores = model(enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids"))
        loss = model.group_loss(scores, torch.tensor([len(g) for _, g in batch]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    return model


def main() -> None:
    """Parse the options, train the three parts, print the accuracies."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="small", choices=["small", "medium", "large"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder", default="tiny", choices=["tiny", "minilm"])
    parser.add_argument("--steps", type=int, default=300, help="training steps of each ranker (batch 8 groups)")
    parser.add_argument("--negatives", type=int, default=15)
    parser.add_argument("--lr", type=float, default=None, help="default: 1e-3 tiny, 5e-5 minilm")
    parser.add_argument("--n-candidates", type=int, default=100, help="candidates per question (the paper: 100)")
    parser.add_argument("--candidates", default="kb", choices=["kb", "swap"], help="kb: the KB's forms; swap: ours")
    args = parser.parse_args()
    args.lr = args.lr or (1e-3 if args.encoder == "tiny" else 5e-5)
    L.seed_everything(args.seed, verbose=False)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        build_world(world, args.seed, args.size)
        train, test = list(read_jsonl(world / "train.jsonl")), list(read_jsonl(world / "test.jsonl"))
        store = None
        if args.candidates == "kb":
            build_store(world / "kb", [world / "kb.nt"], "nt")
            store = open_store(world / "kb")
        t0 = time.perf_counter()
        relation = train_extractor("relation", world, args)
        klass = train_extractor("class", world, args)
        parser_model = train_skeleton_parser(world, args)
        relations = list(ExtractorDataModule(kind="relation", data_dir=str(world)).inventory.relations)
        classes = list(ExtractorDataModule(kind="class", data_dir=str(world)).inventory.relations)
        train_q = pilot_questions(train, relations, classes, n=args.n_candidates, seed=args.seed, store=store)
        coarse = train_coarse(coarse_training_groups(train_q, args.negatives, args.seed), args)
        t1 = time.perf_counter()
        levels = split_levels(test, train)
        test_q = pilot_questions(test, relations, classes, levels, args.n_candidates, args.seed, store)
        fine = top1_accuracy(test_q, lambda q: fine_scores(q, relation.score, klass.score))
        shaped = top1_accuracy(
            test_q, lambda q: fine_scores(q, relation.score, klass.score, parser_model.target_logprobs)
        )
        whole = top1_accuracy(test_q, lambda q: coarse_scores(q, coarse.score))
        t2 = time.perf_counter()
    sizes = [len(q.candidates) for q in test_q]
    report = {
        "settings": vars(args),
        "oracle": "the gold's entity and the gold among the candidates (both rankers; a ranking study)",
        "test_questions": len(test_q),
        "candidates_per_question": [min(sizes), max(sizes)] if sizes else [],
        "right_per_question": round(sum(max(1, len(q.correct)) for q in test_q) / max(1, len(test_q)), 2),
        "fine_top1": fine,
        "fine_with_skeleton_top1": shaped,
        "coarse_top1": whole,
        "seconds": {"training": round(t1 - t0, 1), "ranking": round(t2 - t1, 1)},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
