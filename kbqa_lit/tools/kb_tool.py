"""``kbqa kb``: build knowledge-base stores from triple files and run SPARQL against them.

Commands:

- ``kbqa kb build --format {nt,tsv,metaqa,pathquestion} --store DIR [--overwrite] FILE...``
  bulk-loads the files into a new on-disk Oxigraph store and prints JSON statistics
  (``store``, ``triples``, ``seconds``, ...).
- ``kbqa kb query --store DIR_OR_URL [--timeout S] QUERY`` runs one SPARQL query (text, or
  ``@file``) on an Oxigraph store directory or an http(s) SPARQL endpoint and prints JSON
  ``{ok, answers, error, elapsed}``; the exit status is 0 when the query executed and 1 when it
  failed (bad query, timeout, unreachable endpoint).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import print_json, read_text_arg


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {value!r}")
    return number


def cmd_build(args: argparse.Namespace) -> int:
    """Build a store (``kbqa kb build``) and print its statistics.

    Args:
        args: Parsed arguments: ``format``, ``store``, ``overwrite``, ``files``.

    Returns:
        The exit status (0).

    Raises:
        UserInputError: When an input file does not exist.
        StoreError: When the store directory exists and ``--overwrite`` is not given.
        DataFormatError: For a malformed line in an input file.

    """
    from kbqa_lit.kb.loaders import build_store

    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:
        raise UserInputError(f"no such file: {', '.join(missing)}")
    stats = build_store(args.store, args.files, args.format, overwrite=args.overwrite)
    print_json(stats)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    """Run one query (``kbqa kb query``) and print the result as JSON.

    Args:
        args: Parsed arguments: ``store``, ``timeout``, ``query``.

    Returns:
        0 when the query executed, 1 when it failed.

    Raises:
        UserInputError: When ``@file`` does not exist or the query is empty.
        StoreError: When the store directory does not exist.

    """
    from kbqa_lit.kb.store import open_store

    sparql = read_text_arg(args.query)
    if not sparql.strip():
        raise UserInputError("empty query")
    kwargs: dict[str, Any] = {"cache_size": 0}
    if args.timeout is not None:
        kwargs["timeout"] = args.timeout
    store = open_store(args.store, **kwargs)
    try:
        result = store.execute(sparql)
    finally:
        store.close()
    print_json(
        {
            "ok": result.ok,
            "answers": result.answers,
            "error": result.error,
            "elapsed": round(result.elapsed, 6),
        }
    )
    return 0 if result.ok else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa kb build`` and ``kbqa kb query`` to the ``kbqa`` parser.

    Args:
        subparsers: The ``kbqa`` parser's subparsers.

    """
    kb = subparsers.add_parser(
        "kb",
        help="build knowledge-base stores and query them",
        description="Build knowledge-base stores from triple files and run SPARQL against them.",
    )
    kb_sub = kb.add_subparsers(dest="kb_command", metavar="SUBCOMMAND")
    kb.set_defaults(func=lambda _args: (kb.print_help(), 2)[1])

    build = kb_sub.add_parser(
        "build",
        help="bulk-load triple files into a new on-disk Oxigraph store",
        description="Bulk-load triple files into a new on-disk Oxigraph store; prints JSON statistics.",
    )
    build.add_argument(
        "--format",
        required=True,
        choices=("nt", "tsv", "metaqa", "pathquestion"),
        help="input format: N-Triples, GrailQA mini-KB TSV, MetaQA kb.txt (head|rel|tail), "
        "PathQuestion KB (subject TAB rel TAB object)",
    )
    build.add_argument("--store", required=True, help="the store directory to create")
    build.add_argument("--overwrite", action="store_true", help="replace an existing store at --store")
    build.add_argument("files", nargs="+", metavar="FILE", help="triple files, all in --format")
    build.set_defaults(func=cmd_build)

    query = kb_sub.add_parser(
        "query",
        help="run one SPARQL query on a store directory or endpoint URL",
        description="Run one SPARQL SELECT/ASK query; prints JSON {ok, answers, error, elapsed}; "
        "exit status 1 when the query failed.",
    )
    query.add_argument(
        "--store", required=True, help="an Oxigraph store directory or an http(s) SPARQL endpoint URL"
    )
    query.add_argument("--timeout", type=_positive, default=None, help="seconds before the query is given up")
    query.add_argument("query", metavar="QUERY", help="SPARQL text, or @FILE to read it from a file")
    query.set_defaults(func=cmd_query)
