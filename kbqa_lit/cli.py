"""The ``kbqa`` entry point.

Two families of subcommands live side by side:

- ``kbqa fit|validate|test|predict``: LightningCLI on YAML configs (``kbqa_lit.lightning_cli``);
- ``kbqa kb|sexpr|data|eval ...``: tools for knowledge bases, S-expressions, datasets and
  evaluation (``kbqa_lit.tools``), each printing JSON to stdout.

User mistakes (a bad file, a malformed S-expression, an unreachable endpoint) print one line to
stderr and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kbqa_lit import __version__
from kbqa_lit.errors import KBQAError, find_kbqa_error

LIGHTNING_SUBCOMMANDS = ("fit", "validate", "test", "predict")
#: Tool modules under ``kbqa_lit.tools``; each exposes ``register(subparsers)``.
TOOL_MODULES = (
    "kb_tool",
    "sexpr_tool",
    "data_tool",
    "eval_tool",
    "lora_tool",
    "decompose_tool",
    "retrieve_tool",
    "pipeline_tool",
    "compare_tool",
    "keqing_tool",
    "fc_tool",
    "forms_tool",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the argparse parser of the tool subcommands."""
    parser = argparse.ArgumentParser(
        prog="kbqa",
        description=(
            "kbqa_lit: train and evaluate KBQA systems. Training: kbqa fit|validate|test|predict "
            "--config FILE.yaml (LightningCLI). Tools: kb, sexpr, data, eval, lora, decompose, retrieve, "
            "pipeline, compare, extensions."
        ),
    )
    parser.add_argument("--version", action="version", version=f"kbqa_lit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in LIGHTNING_SUBCOMMANDS:
        sub.add_parser(name, help=f"LightningCLI {name} (see `kbqa {name} --help`)", add_help=False)
    for mod_name in TOOL_MODULES:
        # A tool that cannot be imported is a broken install: fail loudly, never drop the command.
        module = importlib.import_module(f"kbqa_lit.tools.{mod_name}")
        module.register(sub)
    return parser


def run_tools(argv: Sequence[str]) -> int:
    """Run a tool subcommand and return its exit status."""
    parser = build_parser()
    args = parser.parse_args(list(argv))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except KBQAError as exc:
        print(f"kbqa {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kbqa: interrupted", file=sys.stderr)
        return 130


def run_lightning(command: str, argv: Sequence[str] | None) -> int:
    """Run ``kbqa fit|validate|test|predict`` and return its exit status.

    The project's own errors (a :class:`KBQAError`, also when jsonargparse re-raised it while
    instantiating a class from the config) print one line to stderr and give status 2, like the
    tools; Lightning's and jsonargparse's configuration errors are left exactly as they are.

    Args:
        command: The subcommand (``fit``, ``validate``, ``test`` or ``predict``), for the message.
        argv: The arguments starting with the subcommand; ``None``: LightningCLI reads ``sys.argv``
            itself (the process's own arguments).
    """
    from kbqa_lit.lightning_cli import run_lightning_cli

    try:
        run_lightning_cli(argv)
    except Exception as exc:
        error = find_kbqa_error(exc)
        if error is None:
            raise
        print(f"kbqa {command}: error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to LightningCLI or to a tool subcommand."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in LIGHTNING_SUBCOMMANDS:
        return run_lightning(args[0], None if argv is None else args)
    return run_tools(args)


if __name__ == "__main__":
    sys.exit(main())
