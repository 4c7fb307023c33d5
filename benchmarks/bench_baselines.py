"""Trivial answer baselines on the synthetic world's test split (the quickstart's world: seed 0, small).

    python benchmarks/bench_baselines.py [--world DIR] [--seed 0] [--size small]

Prints one JSON line per baseline with the test metrics (``kbqa eval``'s F1, Hit@1, ... over every
test question): ``no-answer`` (an empty answer set for every question) and ``most-frequent``
(every question answered with the answer that occurs in most training questions; ties broken by
the smaller id). Without ``--world`` the world is built into a temp folder (a few seconds).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

from kbqa_lit.data.gold import gold_parses
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.metrics.functional import mean_scores, score_question, sum_scores


def most_frequent_answer(train: list[KBQAExample]) -> str:
    """The answer id found in the most training questions (ties: the smallest id)."""
    counts = Counter(a for ex in train for a in {ans.id for ans in ex.answers})
    return min(counts, key=lambda a: (-counts[a], a))


def baseline_metrics(test: list[KBQAExample], answers: list[str]) -> dict[str, float]:
    """Question-averaged metrics when every test question gets ``answers``."""
    sums = sum_scores(score_question(answers, gold_parses(ex)) for ex in test)
    values = mean_scores(sums)
    return {key: round(values[key], 4) for key in ("f1", "precision", "recall", "hit1", "hit1_any", "accuracy")}


def run(world: Path) -> list[dict[str, object]]:
    """The baselines of the world in ``world`` (``train.jsonl``, ``test.jsonl``)."""
    train = list(read_jsonl(world / "train.jsonl"))
    test = list(read_jsonl(world / "test.jsonl"))
    answer = most_frequent_answer(train)
    return [
        {"baseline": "no-answer", "test_questions": len(test), **baseline_metrics(test, [])},
        {
            "baseline": "most-frequent",
            "answer": answer,
            "test_questions": len(test),
            **baseline_metrics(test, [answer]),
        },
    ]


def main() -> None:
    """Build (or read) the world and print the baselines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=Path, default=None, help="a synthetic world folder (default: build one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", default="small")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = args.world
        if world is None:
            world = Path(tmp) / "world"
            build_world(world, seed=args.seed, size=args.size)
        for row in run(world):
            print(json.dumps(row))


if __name__ == "__main__":
    main()
