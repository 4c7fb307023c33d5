"""``kbqa decompose``: CoQ step 1, progressive question decomposition by an LLM.

``kbqa decompose --config CONFIG.yaml --input FILE.jsonl --out FILE.jsonl [--variant
full|placeholders|no_answers|none] [--source backend|gold] [--limit N] [--batch-size N] [--cache FILE]
[--set KEY=VALUE ...] [--no-progress] [--training-rows [--chains-from TRAIN.jsonl]]`` reads common-schema examples,
writes them with ``decomposition`` and
``meta["decomposition_schema"|"decomposition_status"|"decomposition_error"]`` (see
:mod:`kbqa_lit.pipelines.coq.decomposition.variants`) and prints one JSON object::

    {"n", "ok", "failed", "gold", "none", "cached", "generated", "resumed", "seconds",
     "variant", "source", "out"}

``--training-rows`` writes, instead, the ``{"prompt", "response"}`` rows that fine-tune CoQ's trained
decomposer (the stand-in for the paper's LLM): the config's prompt for each question, and its gold
decomposition in the config's variant with the ``[SCHEMA]`` part
(:mod:`kbqa_lit.pipelines.coq.decomposition.training_rows`). With ``--chains-from`` a dataset without
decompositions (MetaQA, PathQuestion) gets them from its gold relation chains
(:mod:`kbqa_lit.pipelines.coq.decomposition.chain_gold`).

The config (``configs/coq/decompose/*.yaml``) names the backend by ``class_path``/``init_args``, the
prompt's cases, the batch size and the cache file; the flags override it. An interrupted run
resumes where it stopped when run again (``<out>.partial`` holds the finished rows).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.tools.common import print_json

VARIANTS = ("full", "placeholders", "no_answers", "none")
SOURCES = ("backend", "gold")


def register(subparsers: Any) -> None:
    """Add the ``decompose`` command to the ``kbqa`` parser."""
    p = subparsers.add_parser(
        "decompose",
        help="decompose questions progressively with an LLM (CoQ step 1)",
        description=(
            "Decompose each question of a JSON-lines file into [SUBQ] q1 [ANS] a1 ... with an LLM "
            "(an OpenAI-compatible server or a local Hugging Face model) or take the gold "
            "decompositions; writes the examples with the decomposition fields and prints a JSON summary."
        ),
    )
    p.add_argument("--config", required=True, type=Path, help="decomposition YAML (configs/coq/decompose/*.yaml)")
    p.add_argument("--input", required=True, type=Path, help="common-schema JSON lines")
    p.add_argument("--out", required=True, type=Path, help="output JSON lines (written atomically)")
    p.add_argument("--variant", choices=VARIANTS, default=None, help="override the config's variant")
    p.add_argument("--source", choices=SOURCES, default=None, help="override the config's source")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N examples")
    p.add_argument("--batch-size", type=int, default=None, metavar="N", help="override the config's batch size")
    p.add_argument("--cache", default=None, metavar="FILE", help="override the config's cache file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value by its dotted key (backend.init_args.model=FOLDER); repeatable",
    )
    p.add_argument(
        "--training-rows",
        action="store_true",
        help="write {prompt, response} rows of the gold decompositions (to fine-tune the trained decomposer) instead",
    )
    p.add_argument(
        "--chains-from",
        type=Path,
        default=None,
        metavar="TRAIN.jsonl",
        help="with --training-rows: an example without a gold decomposition gets one from its gold relation chain, "
        "each hop worded as TRAIN's one-hop questions word it (MetaQA, PathQuestion: datasets without decompositions)",
    )
    p.set_defaults(func=run_decompose)


def run_decompose(args: argparse.Namespace) -> int:
    """Run ``kbqa decompose`` and print the summary JSON.

    Returns:
        0 on success (user errors raise :class:`~kbqa_lit.errors.KBQAError`).
    """
    from kbqa_lit.errors import UserInputError, split_key_value
    from kbqa_lit.llm.response_cache import DecompositionCache
    from kbqa_lit.pipelines.coq.decomposition.config import load_job, parse_config
    from kbqa_lit.pipelines.coq.decomposition.decompose import decompose_file

    if args.chains_from is not None and not args.training_rows:
        raise UserInputError("--chains-from builds training rows: give it with --training-rows")
    overrides = dict(split_key_value(pair, "--set") for pair in args.set)
    given = {"variant": args.variant, "source": args.source, "batch_size": args.batch_size, "cache": args.cache}
    overrides.update({k: v for k, v in given.items() if v is not None})
    if args.training_rows:
        from kbqa_lit.pipelines.coq.decomposition.training_rows import write_training_rows

        job = load_job(args.config, overrides, with_backend=False)
        rows = write_training_rows(
            args.input, args.out, job.prompt, job.variant, job.mask_entities, chains_from=args.chains_from
        )
        print_json(rows)
        return 0
    cfg = parse_config(args.config, overrides)
    needs_backend = cfg.source == "backend" and cfg.variant != "none"
    job = load_job(args.config, overrides, with_backend=needs_backend)
    cache = DecompositionCache(job.cache) if job.cache and needs_backend else None
    try:
        summary = decompose_file(
            args.input,
            args.out,
            backend=job.backend,
            prompt=job.prompt,
            variant=job.variant,
            source=job.source,
            batch_size=job.batch_size,
            cache=cache,
            limit=args.limit,
            gold_relations=job.gold_relations,
            progress=not args.no_progress,
            mask_entities=job.mask_entities,
        )
    finally:
        if cache is not None:
            cache.close()
        if job.backend is not None:
            job.backend.close()
    print_json({**summary.to_dict(), "variant": job.variant, "source": job.source, "out": str(args.out)})
    return 0
