"""``kbqa keqing``: Keqing's template bank and its end-to-end run.

- ``kbqa keqing templates --input train.jsonl --out templates.json``: mine question templates and
  their logical chains from training examples (see :mod:`kbqa_lit.data.keqing.templates`).
- ``kbqa keqing reasoning-data --input train.jsonl --store KB --templates bank.json --out rows.jsonl``:
  training rows of a fine-tuned reasoner (``--context step``, the paper's: one row per sub-question, the
  reasoning prompt over that step's triples → its answers' names; ``last`` / ``chain``: ours).
- ``kbqa keqing run --config configs/keqing/run.yaml [--set key=value ...] [--limit N]
  [--out F]``: answer a question file (decompose, match templates, execute chains, reason,
  respond), write one JSON line per question and print the figures per hop and stage.
"""

from __future__ import annotations

import argparse

from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import add_config_arguments, command_group, parse_set_pairs, print_json


def cmd_templates(args: argparse.Namespace) -> int:
    """``kbqa keqing templates``."""
    from pathlib import Path

    from kbqa_lit.data.keqing.templates import mine_templates
    from kbqa_lit.data.schema import read_jsonl

    if not Path(args.input).is_file():
        raise UserInputError(f"no such example file: {args.input}")
    bank = mine_templates(read_jsonl(args.input))
    bank.save(args.out)
    print_json(
        {
            "out": args.out,
            "templates": len(bank.templates),
            "chain_templates": len(bank.chains),
            "chains": sum(len(c) for c in bank.chains.values()),
            "steps": len(bank.steps),
            "skipped": bank.skipped,
        }
    )
    return 0


def cmd_reasoning_data(args: argparse.Namespace) -> int:
    """``kbqa keqing reasoning-data``."""
    from pathlib import Path

    from kbqa_lit.atomic import write_jsonl_atomic
    from kbqa_lit.data.keqing.templates import TemplateBank
    from kbqa_lit.data.schema import read_jsonl
    from kbqa_lit.kb.index.entity_index import EntityIndex
    from kbqa_lit.kb.store import open_store
    from kbqa_lit.pipelines.keqing.reasoning_data import reasoning_rows
    from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor

    if not Path(args.input).is_file():
        raise UserInputError(f"no such example file: {args.input}")
    examples = list(read_jsonl(args.input))
    if args.limit:  # an evenly spaced sample (split files are often ordered by hops)
        examples = examples[:: max(1, len(examples) // args.limit)][: args.limit]
    store = open_store(args.store)
    index = EntityIndex.for_store(store)
    if args.templates and not Path(args.templates).is_file():
        raise UserInputError(f"no such template bank: {args.templates} (kbqa keqing templates writes one)")
    bank = TemplateBank.load(args.templates) if args.templates else None
    executor = ChainExecutor(store, args.semantics)
    rows, skipped = reasoning_rows(examples, executor, index.label, args.max_triples, context=args.context, bank=bank)
    write_jsonl_atomic(rows, args.out)
    print_json({"out": str(args.out), "rows": len(rows), "skipped": dict(skipped)})
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """``kbqa keqing run``."""
    from kbqa_lit.pipelines.keqing.config import load_keqing_config
    from kbqa_lit.pipelines.keqing.run import run_keqing

    overrides = parse_set_pairs(args.set or [])
    if args.limit is not None:
        overrides["data.limit"] = args.limit
    config = load_keqing_config(args.config, overrides)
    print_json(run_keqing(config, out=args.out))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa keqing templates`` and ``kbqa keqing run`` to the ``kbqa`` parser."""
    sub = command_group(
        subparsers,
        "keqing",
        help="Keqing: mine question templates, answer questions end to end",
        description="Keqing: template mining and the decompose -> match -> retrieve -> reason -> respond run.",
    )

    templates = sub.add_parser("templates", help="mine templates and their chains from training examples")
    templates.add_argument("--input", required=True, help="training examples (JSON lines, common schema)")
    templates.add_argument("--out", required=True, help="the template bank (JSON)")
    templates.set_defaults(func=cmd_templates)

    data = sub.add_parser(
        "reasoning-data", help="training rows of a fine-tuned reasoner (gold chains' triples -> answers)"
    )
    data.add_argument("--input", required=True, help="training examples (JSON lines, common schema)")
    data.add_argument("--store", required=True, help="the KB (Oxigraph folder or SPARQL endpoint)")
    data.add_argument("--out", required=True, help="rows file (JSON lines: qid, prompt, response)")
    data.add_argument("--semantics", default="simple-path", choices=("simple-path", "plain"), help="answer semantics")
    data.add_argument("--max-triples", type=int, default=30, help="context triples per prompt")
    data.add_argument(
        "--context",
        default="step",
        choices=("step", "last", "chain"),
        help="step: one row per sub-question over its own triples (the paper's; needs --templates); "
        "last: the whole question over the last step's triples; chain: every hop's triples",
    )
    data.add_argument("--templates", default=None, help="the template bank the decomposer was trained with")
    data.add_argument("--limit", type=int, default=None, help="an evenly spaced sample of N examples")
    data.set_defaults(func=cmd_reasoning_data)

    run = sub.add_parser("run", help="answer a question file end to end; prints the figures")
    add_config_arguments(
        run, config_help="run YAML (see configs/keqing/run.yaml)", limit_help="answer only the first N questions"
    )
    run.add_argument("--out", default=None, help="per-question JSON lines (default: config 'out')")
    run.set_defaults(func=cmd_run)
