"""The ``kbqa`` tool subcommands (kb, sexpr, data, eval), one module per group.

Each module exposes ``register(subparsers)``, which adds its parser(s) and sets ``func`` on each
leaf parser to a handler ``(args: argparse.Namespace) -> int``. Handlers print JSON to stdout,
raise :class:`kbqa_lit.errors.KBQAError` for user mistakes (``cli.main`` prints the message to
stderr and exits 2), and never print tracebacks for them.
"""
