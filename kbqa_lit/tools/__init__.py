"""The ``kbqa`` tool subcommands (kb, sexpr, data, eval, lora, decompose, retrieve, pipeline, compare).

One module per group, listed in :data:`kbqa_lit.cli.TOOL_MODULES`. Each exposes
``register(subparsers)``, which adds its parser(s) and sets ``func`` on each leaf parser to a
handler ``(args: argparse.Namespace) -> int``. Handlers print JSON to stdout, raise
:class:`kbqa_lit.errors.KBQAError` for user mistakes (``cli.main`` prints the message to stderr and
exits 2), and never print tracebacks for them. A tool module that fails to import makes every
``kbqa`` tool command fail with that import error: a command is never silently missing.
"""
