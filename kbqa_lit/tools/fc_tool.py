"""``kbqa fc``: FC-KBQA's inference stages as commands.

- ``kbqa fc detect --config configs/fc/detect.yaml [--set key=value ...] [--limit N]``: run
  detection, linking with pruning, the skeleton parser and the pair builder on question files
  (:mod:`kbqa_lit.pipelines.fc.build`) and write them to ``out_dir`` with ``meta["fc"]`` — the
  validation and test files the composer (``configs/fc/composer.yaml``) reads. No gold field is
  read. Prints per file: questions, the share with a linked entity, with two skeletons, the
  mean number of pairs and, when the file has gold S-expressions, the component figures
  (:func:`~kbqa_lit.pipelines.fc.figures.detection_figures`: relation/class recall@k, entity
  accuracy, skeleton top-1/top-2, gold-pair coverage).
- ``kbqa fc compose --config configs/fc/compose.yaml [--set key=value ...] [--limit N]``: answer a
  detected file by filling its skeletons with the KB-connected components, optionally after or
  before the composer's own choice (:mod:`kbqa_lit.pipelines.fc.composition`); writes prediction
  lines ``kbqa eval`` reads (atomically) and prints where each form came from.
- ``kbqa fc levels --train T --input F --out O [--given keep|ignore]``: write ``F`` with each
  question's generalisation level against the training split ``T`` in ``meta["level"]``
  (:mod:`kbqa_lit.data.fc.levels`), for ``kbqa eval --group-by level``. Reads the gold
  S-expressions: levels are scored after the fact, never an input of a stage. With ``--store``, also
  ``meta["kbcheck"]``: what the gold S-expression gives on that KB (``exact``, ``extra``, ``missing``,
  ``none``), so ``kbqa eval --group-by kbcheck`` scores the questions a mini-KB can answer.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import add_config_arguments, apply_set_pairs, command_group, parse_set_pairs, print_json


def _config_mapping(args: argparse.Namespace) -> dict[str, Any]:
    """The mapping of ``--config`` with the ``--set`` overrides put in place (typed by the command's parser)."""
    from kbqa_lit.pipelines.config_files import read_config_mapping

    return apply_set_pairs(read_config_mapping(args.config, "FC"), parse_set_pairs(args.set or []))


def cmd_detect(args: argparse.Namespace) -> int:
    """``kbqa fc detect``."""
    from kbqa_lit.data.fc.composer_examples import FC_META
    from kbqa_lit.data.schema import read_jsonl, write_jsonl
    from kbqa_lit.pipelines.fc.build import build_component_stage
    from kbqa_lit.pipelines.fc.config import parse_detect_config
    from kbqa_lit.pipelines.fc.figures import detection_figures

    cfg = parse_detect_config(_config_mapping(args), args.config)
    files = [Path(f) for f in cfg.files]
    if not files:
        raise UserInputError("the FC config names no files to annotate")
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise UserInputError(f"no such question file: {', '.join(missing)}")
    store = cfg.kb.open()
    report: dict[str, Any] = {"out_dir": cfg.out_dir, "files": {}}
    try:
        stage = build_component_stage(cfg, store)
        for path in files:
            examples = list(read_jsonl(path))[: args.limit] if args.limit else list(read_jsonl(path))
            annotated = stage.annotate(examples)
            out = Path(cfg.out_dir) / path.name
            write_jsonl(annotated, out)
            metas = [ex.meta[FC_META] for ex in annotated]
            n = max(1, len(metas))
            report["files"][str(path)] = {
                "out": str(out),
                "questions": len(metas),
                "with_entity": sum(bool(m["entities"]) for m in metas) / n,
                "with_two_skeletons": sum(len(m["skeletons"]) == 2 for m in metas) / n,
                "mean_pairs": sum(len(m["pairs"]) for m in metas) / n,
            }
            if any(ex.s_expression for ex in examples):  # scored after the fact; the stages never read it
                report["files"][str(path)]["figures"] = detection_figures(examples, annotated)
    finally:
        store.close()
    print_json(report)
    return 0


def _read_generated(path: str) -> dict[str, dict[str, Any]]:
    """The composer's per-question choices by qid, from its ``kbqa test`` predictions file.

    Raises:
        UserInputError: When the file does not exist.
        DataFormatError: On a line that is not a JSON object with a ``qid``.
    """
    from kbqa_lit.errors import DataFormatError
    from kbqa_lit.tools.common import iter_json_lines

    found: dict[str, dict[str, Any]] = {}
    for lineno, row in iter_json_lines(path):
        if "qid" not in row:
            raise DataFormatError(Path(path), lineno, "expected a JSON object with a 'qid'")
        found[str(row["qid"])] = row
    return found


def cmd_compose(args: argparse.Namespace) -> int:
    """``kbqa fc compose``."""
    import dataclasses
    import time
    from collections import Counter

    from kbqa_lit.atomic import write_jsonl_atomic
    from kbqa_lit.data.schema import read_jsonl
    from kbqa_lit.pipelines.fc.compose_config import parse_compose_config
    from kbqa_lit.pipelines.fc.composition import FillComposition, extensions_from
    from kbqa_lit.pipelines.fc.fill import SkeletonFiller
    from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector

    cfg = parse_compose_config(_config_mapping(args), args.config)
    if not cfg.file or not cfg.out:
        raise UserInputError(f"the FC compose config needs {'file' if not cfg.file else 'out'}")
    path, out, form = Path(cfg.file), cfg.out, cfg.resolved_form()
    if not path.is_file():
        raise UserInputError(f"no such question file: {path} (a file written by `kbqa fc detect`)")
    generated = _read_generated(cfg.generated) if cfg.generated else None
    filler = SkeletonFiller(**dataclasses.asdict(cfg.fill))  # FillConfig's fields are SkeletonFiller's arguments
    paths, types = extensions_from(form, cfg.paths, cfg.answer_type)
    store = cfg.kb.open()
    start = time.perf_counter()
    try:
        selector = ExecutionGuidedSelector(store, max_beams=cfg.max_executions)
        composer = FillComposition(filler, selector, cfg.composition, generated, paths, types, form)
        examples = list(read_jsonl(path))[: args.limit] if args.limit else list(read_jsonl(path))
        rows = [composer.answer(ex) for ex in examples]
    finally:
        store.close()
    seconds = time.perf_counter() - start
    write_jsonl_atomic(rows, out)
    n = max(1, len(rows))
    print_json(
        {
            "out": out,
            "form": form.tag(),
            "composition": cfg.composition if form.on("fill_composition") else "generate",
            "questions": len(rows),
            "executable": sum(r["executable"] for r in rows) / n,
            "source": dict(Counter(r["composition"] for r in rows)),
            "answer_type_changes": sum(bool(r.get("answer_type")) for r in rows),
            "mean_fillings": sum(r["fillings"] for r in rows) / n,
            "seconds_per_question": seconds / n,
        }
    )
    return 0


def cmd_levels(args: argparse.Namespace) -> int:
    """``kbqa fc levels``."""
    import dataclasses
    from collections import Counter

    from kbqa_lit.data.fc.levels import split_levels
    from kbqa_lit.data.schema import read_jsonl, write_jsonl

    for path in (args.train, args.input):
        if not Path(path).is_file():
            raise UserInputError(f"no such question file: {path}")
    rows = list(read_jsonl(args.input))
    levels = split_levels(rows, read_jsonl(args.train), args.given)
    labelled = [dataclasses.replace(ex, meta={**ex.meta, "level": levels[ex.qid]}) for ex in rows]
    report: dict[str, Any] = {"out": str(args.out), "questions": len(rows)}
    report["levels"] = dict(Counter(map(str, levels.values())))
    if args.store:
        from kbqa_lit.kb.store import open_store
        from kbqa_lit.pipelines.fc.kb_check import gold_kbcheck

        store = open_store(args.store)
        try:
            labelled = [
                dataclasses.replace(ex, meta={**ex.meta, "kbcheck": gold_kbcheck(ex, store)}) for ex in labelled
            ]
        finally:
            store.close()
        report["kbcheck"] = dict(Counter(ex.meta["kbcheck"] for ex in labelled))
    write_jsonl(labelled, args.out)
    print_json(report)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa fc detect`` to the ``kbqa`` parser."""
    sub = command_group(
        subparsers,
        "fc",
        help="FC-KBQA: detect components, link, parse skeletons and build pairs for question files",
        description="FC-KBQA inference stages.",
    )
    detect = sub.add_parser("detect", help="write question files with meta.fc (pairs, entities, skeletons)")
    add_config_arguments(
        detect,
        config_help="detection YAML (see configs/fc/detect.yaml)",
        limit_help="only the first N questions of each file",
    )
    detect.set_defaults(func=cmd_detect)
    compose = sub.add_parser("compose", help="answer a detected file: the composer's choice (paper) or by filling")
    add_config_arguments(
        compose, config_help="composition YAML (see configs/fc/compose.yaml)", limit_help="only the first N questions"
    )
    compose.set_defaults(func=cmd_compose)
    levels = sub.add_parser("levels", help="label questions with their generalisation level against a training split")
    levels.add_argument("--train", required=True, type=Path, help="the training split (gold S-expressions)")
    levels.add_argument("--input", required=True, type=Path, help="the questions to label")
    levels.add_argument("--out", required=True, type=Path, help="where to write them, meta.level set")
    levels.add_argument(
        "--given", choices=("keep", "ignore"), default="keep", help="keep a level the row states, or always compute"
    )
    levels.add_argument(
        "--store",
        default=None,
        help="also execute each gold S-expression on this KB store and write meta.kbcheck (exact/extra/missing/none)",
    )
    levels.set_defaults(func=cmd_levels)


__all__ = ["register"]
