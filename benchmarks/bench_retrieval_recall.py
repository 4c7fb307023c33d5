"""Recall@1/@10 of CoQ's candidate retrieval: relations (BM25 alone vs a briefly trained
cross-encoder) and entities (EntityIndex), on the synthetic world's test split, MetaQA dev and
PathQuestion. Prints one JSON line per dataset.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_retrieval_recall.py [--questions 300] [--epochs 2]

MetaQA/PathQuestion ship no train questions here: the cross-encoder is fitted on a disjoint slice
of the same file (questions sampled with a fixed seed), scored on another. Real data is read from
../shared/data (skipped when absent); stores and converted files go to a temp folder.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import lightning as L

from kbqa_lit.cli import main as kbqa
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.relation_retrieval import RelationRetrievalDataModule, gold_relations
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.index.relation_inventory import BM25RelationRanker, RelationInventory, recall_at
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.modules.cross_encoder import CrossEncoderRetriever

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else float("nan")


def relation_recall(train: Path, test: Path, store: Path, epochs: int) -> dict:
    with open_store(store) as s:
        inventory = RelationInventory.from_store(s)
    bm25 = BM25RelationRanker(inventory, top_n=100)
    tests = list(read_jsonl(test))
    out: dict = {"inventory": len(inventory), "questions": len(tests)}
    for k in (1, 10):
        out[f"bm25_recall@{k}"] = _mean(
            [recall_at(gold_relations(e), [r for r, _ in bm25.rank(e.question, k)], k) for e in tests]
        )
    L.seed_everything(0)
    dm = RelationRetrievalDataModule(
        train_file=str(train),
        val_file=str(test),
        store=str(store),
        tokenizer_name_or_path=None,
        num_negatives=7,
        batch_size=16,
        eval_batch_size=20,
        max_length=40,
    )
    model = CrossEncoderRetriever(
        None, {"hidden_size": 64}, tokenizer=dm.tokenizer, learning_rate=3e-3, warmup_ratio=0.0, dropout=0.0
    )
    t0 = time.perf_counter()
    L.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    ).fit(model, datamodule=dm)
    out["fit_seconds"] = round(time.perf_counter() - t0, 1)
    ranked = [[r for r, _ in model.rank(e.question, bm25.prefilter(e.question), top_l=10)] for e in tests]
    for k in (1, 10):
        out[f"cross_encoder_recall@{k}"] = _mean(
            [recall_at(gold_relations(e), r, k) for e, r in zip(tests, ranked, strict=True)]
        )
    return out


def entity_recall(test: Path, store: Path) -> dict:
    with open_store(store, timeout=600) as s:
        t0 = time.perf_counter()
        index = EntityIndex.for_store(s, refresh=True)
        build = time.perf_counter() - t0
    tests = list(read_jsonl(test))
    t0 = time.perf_counter()
    found = [[c.id for c in index.search(e.question, 10)] for e in tests]
    per_q = (time.perf_counter() - t0) / max(1, len(tests))
    out = {"entities": len(index), "index_build_seconds": round(build, 2), "ms_per_question": round(1000 * per_q, 1)}
    for k in (1, 10):
        out[f"entity_recall@{k}"] = _mean(
            [recall_at(list(e.topic_entities), f, k) for e, f in zip(tests, found, strict=True)]
        )
    return out


def _slices(path: Path, out: Path, n: int) -> tuple[Path, Path]:
    rows = list(read_jsonl(path))
    random.Random(0).shuffle(rows)
    write_jsonl(rows[n : 3 * n], out / "train.jsonl")
    write_jsonl(rows[:n], out / "test.jsonl")
    return out / "train.jsonl", out / "test.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_world(root / "syn", seed=0, size="small")
        build_store(root / "syn_store", [root / "syn" / "kb.nt"], "nt")
        res = {
            "dataset": "synthetic",
            **relation_recall(
                root / "syn" / "train.jsonl", root / "syn" / "test.jsonl", root / "syn_store", args.epochs
            ),
        }
        print(json.dumps({**res, **entity_recall(root / "syn" / "test.jsonl", root / "syn_store")}), flush=True)
        if (SHARED / "metaqa").is_dir():
            t0 = time.perf_counter()
            build_store(root / "mq_store", [SHARED / "metaqa" / "kb.txt"], "metaqa")
            kb_s = round(time.perf_counter() - t0, 1)
            kbqa(
                [
                    "data",
                    "convert",
                    "--format",
                    "metaqa",
                    "--input",
                    str(SHARED / "metaqa"),
                    "--out",
                    str(root / "mq.jsonl"),
                    "--split",
                    "dev",
                ]
            )
            (root / "mq").mkdir()
            train, test = _slices(root / "mq.jsonl", root / "mq", args.questions)
            res = {
                "dataset": "metaqa",
                "store_build_seconds": kb_s,
                **relation_recall(train, test, root / "mq_store", args.epochs),
            }
            print(json.dumps({**res, **entity_recall(test, root / "mq_store")}), flush=True)
        if (SHARED / "pathquestion").is_dir():
            pq = SHARED / "pathquestion"
            build_store(root / "pq_store", [pq / "2H-kb.txt", pq / "3H-kb.txt"], "pathquestion")
            kbqa(
                [
                    "data",
                    "convert",
                    "--format",
                    "pathquestion",
                    "--input",
                    str(pq / "PQ-3H.txt"),
                    "--out",
                    str(root / "pq.jsonl"),
                ]
            )
            (root / "pq").mkdir()
            train, test = _slices(root / "pq.jsonl", root / "pq", args.questions)
            res = {"dataset": "pathquestion-3H", **relation_recall(train, test, root / "pq_store", args.epochs)}
            print(json.dumps({**res, **entity_recall(test, root / "pq_store")}), flush=True)


if __name__ == "__main__":
    main()
