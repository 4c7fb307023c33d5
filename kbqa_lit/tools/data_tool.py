"""``kbqa data``: convert datasets to the common schema and build the synthetic world.

- ``kbqa data convert --format F --input PATH --out FILE.jsonl [--split S]`` reads a dataset in
  its own format and writes common-schema JSON lines atomically (the output appears only when
  every record was read); prints ``{"format", "input", "out", "examples"}``.
- ``kbqa data synth --out DIR [--seed N] [--size small|medium|large]`` writes the synthetic world
  (KB and questions) and prints the summary that ``build_world`` returns.
- ``kbqa data synth-kb --triples 1e6 --out DIR [--seed N] [--questions N]`` streams a
  Freebase-shaped KB of about that many triples (hubs, CVTs, a class hierarchy) and questions over
  it, for scale benchmarks; prints the summary that ``write_scale_kb`` returns.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.data.formats import READERS, read_dataset
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import print_json

SYNTH_SIZES = ("small", "medium", "large")


def register(subparsers: Any) -> None:
    """Add the ``data`` command group (``convert``, ``synth``) to the ``kbqa`` parser."""
    data = subparsers.add_parser("data", help="convert datasets to the common schema; build the synthetic world")
    sub = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    data.set_defaults(func=lambda _args: _missing_subcommand(data))

    conv = sub.add_parser(
        "convert",
        help="read a dataset in its own format and write common-schema JSON lines",
        description=(
            "Read a dataset file (or folder, for metaqa/synthetic) and write one common-schema "
            "example per line. Prints JSON {format, input, out, examples}."
        ),
    )
    conv.add_argument("--format", required=True, choices=sorted(READERS), help="the input's dataset format")
    conv.add_argument("--input", required=True, type=Path, help="dataset file, or folder for metaqa/synthetic")
    conv.add_argument("--out", required=True, type=Path, help="output JSON-lines file (written atomically)")
    conv.add_argument(
        "--split",
        default=None,
        help="split to read from a folder (metaqa: N-hop/qa_SPLIT.txt; synthetic: SPLIT.jsonl); "
        "default dev; ignored by single-file formats",
    )
    conv.set_defaults(func=run_convert)

    synth = sub.add_parser(
        "synth",
        help="write the deterministic synthetic world (KB + questions) to a folder",
        description="Build the synthetic world; the same seed and size give byte-identical files.",
    )
    synth.add_argument("--out", required=True, type=Path, help="output folder")
    synth.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    synth.add_argument("--size", choices=SYNTH_SIZES, default="small", help="world size (default small)")
    synth.set_defaults(func=run_synth)

    scale = sub.add_parser(
        "synth-kb",
        help="stream a Freebase-shaped KB of a chosen size (hubs, CVTs, classes) with questions over it",
        description=(
            "Write DIR/kb.nt (about --triples N-Triples lines, streamed: memory stays bounded), "
            "DIR/questions.jsonl (common schema, gold S-expressions) and DIR/summary.json. The same "
            "--triples and --seed give byte-identical files. Prints the summary as JSON."
        ),
    )
    scale.add_argument("--out", required=True, type=Path, help="output folder")
    scale.add_argument(
        "--triples",
        required=True,
        type=_triple_count,
        help="about how many triples to write, 1e3 to 1e8 (scientific notation accepted: 1e6)",
    )
    scale.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    scale.add_argument(
        "--questions",
        type=int,
        default=200,
        help="about how many questions to sample (default 200), plus 6 about the largest hubs",
    )
    scale.set_defaults(func=run_synth_kb)

    split = sub.add_parser(
        "split",
        help="split a common-schema JSON-lines file into train/dev/test.jsonl (by a hash of the qid)",
        description="Deterministic split: a question's split depends only on its qid, the seed and the fractions.",
    )
    split.add_argument("--input", required=True, type=Path, help="common-schema JSON-lines file")
    split.add_argument("--out", required=True, type=Path, help="output folder for train/dev/test.jsonl")
    split.add_argument(
        "--fractions",
        type=float,
        nargs="+",
        default=[0.8, 0.1, 0.1],
        help="train dev [test] (default 0.8 0.1 0.1)",
    )
    split.add_argument("--seed", type=int, default=0, help="seed of the assignment (default 0)")
    split.add_argument(
        "--max-per-split",
        type=int,
        default=None,
        metavar="N",
        help="keep at most N examples per split (a hash-drawn sample, not the first N); default all",
    )
    split.set_defaults(func=run_split)


def _triple_count(text: str) -> int:
    """Parse ``--triples`` (``100000``, ``1e5``, ``1_000_000``) as a positive integer."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of triples: {text!r}") from None
    if value != int(value) or value < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number of triples: {text!r}")
    return int(value)


def run_synth_kb(args: argparse.Namespace) -> int:
    """Handle ``kbqa data synth-kb``: write the Freebase-shaped scale KB and print its summary."""
    from kbqa_lit.data.synthetic.fb_kb import write_scale_kb

    print_json(write_scale_kb(args.out, triples=args.triples, seed=int(args.seed), questions=int(args.questions)))
    return 0


def run_split(args: argparse.Namespace) -> int:
    """Handle ``kbqa data split``."""
    from kbqa_lit.data.split import split_file

    if not args.input.is_file():
        raise UserInputError(f"no such file: {args.input}")
    counts = split_file(args.input, args.out, args.fractions, args.seed, args.max_per_split)
    print_json({"input": str(args.input), "out": str(args.out), "seed": args.seed, "examples": counts})
    return 0


def _missing_subcommand(parser: argparse.ArgumentParser) -> int:
    raise UserInputError(f"choose a subcommand: {parser.prog} convert|synth (see --help)")


def run_convert(args: argparse.Namespace) -> int:
    """Convert ``args.input`` (format ``args.format``) to common-schema JSON lines at ``args.out``.

    Returns:
        0 on success (user errors raise :class:`~kbqa_lit.errors.KBQAError`).

    """
    out: Path = args.out
    if out.exists() and out.is_dir():
        raise UserInputError(f"--out must be a file, got a directory: {out}")
    examples = read_dataset(args.format, args.input, split=args.split)
    try:
        n = write_jsonl(examples, out)
    except BaseException:
        # write_jsonl writes <out>.tmp and renames it at the end; drop the partial temp file.
        out.with_name(out.name + ".tmp").unlink(missing_ok=True)
        raise
    print_json({"format": args.format, "input": str(args.input), "out": str(out), "examples": n})
    return 0


def run_synth(args: argparse.Namespace) -> int:
    """Build the synthetic world in ``args.out`` and print its summary as JSON.

    Returns:
        0 on success.

    Raises:
        UserInputError: When this build has no synthetic world module.

    """
    try:
        from kbqa_lit.data.synthetic import build_world
    except ImportError as exc:  # ModuleNotFoundError, or a synthetic package without build_world
        if exc.name == "kbqa_lit.data.synthetic":
            raise UserInputError("the synthetic world is not available in this build") from None
        raise
    summary = build_world(Path(args.out), seed=int(args.seed), size=str(args.size))
    print_json(summary)
    return 0
