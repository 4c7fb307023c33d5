"""Keqing end-to-end speed on MetaQA: questions per second and the share of time per stage.

Runs ``kbqa keqing run`` (:func:`kbqa_lit.pipelines.keqing.run.run_keqing`) on the first ``--questions``
questions of a MetaQA file with the trained parts of ``kbqa pipeline configs/keqing/pipeline_metaqa.yaml``
(``--work``, default ``outputs/keqing_mq``), once per decomposer source: the trained decomposer
(``backend``) and the gold decompositions (``gold``: no LLM, so the rest of the pipeline alone). Prints
one JSON line per run: questions per second, seconds per stage and each stage's share.

Usage: ``python benchmarks/bench_keqing.py [--questions 1000] [--work outputs/keqing_mq] [--file F]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from kbqa_lit.pipelines.keqing.config import load_keqing_config
from kbqa_lit.pipelines.keqing.run import run_keqing

RUN_YAML = Path(__file__).resolve().parents[1] / "configs" / "keqing" / "run.yaml"


def main() -> None:
    """Time the runs and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--work", default="outputs/keqing_mq")
    parser.add_argument("--file", default=None, help="question file (default: <work>/world/test.jsonl)")
    args = parser.parse_args()
    work = Path(args.work)
    if not (work / "decomposer" / "merged" / "config.json").is_file():
        raise SystemExit(f"no trained decomposer under {work}: run kbqa pipeline configs/keqing/pipeline_metaqa.yaml")
    base = {
        "data.file": args.file or str(work / "world" / "test.jsonl"),
        "data.limit": args.questions,
        "kb.store": str(work / "kb"),
        "templates": str(work / "templates.json"),
        "decomposer.backend.init_args.model": str(work / "decomposer" / "merged"),
        "matching.cache_dir": str(work / "cache"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for source in ("backend", "gold"):
            config = load_keqing_config(RUN_YAML, {**base, "decomposer.source": source})
            summary = run_keqing(config, out=str(Path(tmp) / f"{source}.jsonl"))
            stages = summary["stage_seconds"]
            total = sum(stages.values()) or 1.0
            print(
                json.dumps(
                    {
                        "decomposer": source,
                        "questions": summary["questions"],
                        "questions_per_s": summary["questions_per_s"],
                        "seconds": summary["seconds"],
                        "stage_seconds": stages,
                        "stage_share": {k: round(v / total, 3) for k, v in stages.items()},
                    }
                )
            )


if __name__ == "__main__":
    main()
