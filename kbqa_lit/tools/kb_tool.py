"""``kbqa kb``: build knowledge-base stores from triple files and run SPARQL against them.

Commands:

- ``kbqa kb build --format {nt,tsv,metaqa,pathquestion} --store DIR [--overwrite] FILE...``
  bulk-loads the files into a new on-disk Oxigraph store and prints JSON statistics
  (``store``, ``triples``, ``seconds``, ...).
- ``kbqa kb query --store DIR_OR_URL [--timeout S] QUERY`` runs one SPARQL query (text, or
  ``@file``) on an Oxigraph store directory or an http(s) SPARQL endpoint and prints JSON
  ``{ok, answers, error, elapsed}``; the exit status is 0 when the query executed and 1 when it
  failed (bad query, timeout). An endpoint that does not answer (or a URL that is no SPARQL
  endpoint) is a message on stderr and exit status 2.
- ``kbqa kb serve-virtuoso --data FILE.nt [FILE.nt ...] --dir DIR [--port 8890] [--isql-port 1111]
  [--graph IRI] [--memory 1G] [--foreground]`` writes ``DIR/virtuoso.ini``, starts a local
  OpenLink Virtuoso (detached unless ``--foreground``), bulk-loads the files into ``--graph``
  and prints JSON ``{endpoint, pid, triples_loaded, seconds, ...}``; without ``--data`` it serves
  the database already in ``DIR``.
- ``kbqa kb stop-virtuoso --dir DIR [--clean]`` shuts that server down (``--clean`` also deletes
  the database files).
- ``kbqa kb entity-index --store DIR_OR_URL [--backend auto|memory|disk] [--index FILE] [--rebuild]
  [--timeout S]`` builds (or checks) the entity index that linking uses, once per store, and prints
  its statistics as JSON (``backend``, ``path``, ``entities``, ``build_seconds``...): a large KB's on-disk
  index takes minutes (``docs/kb.md``), better spent once than inside the first command that links.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError
from kbqa_lit.tools.common import check_reachable, command_group, print_json, read_text_arg

_STORE_HELP = "an Oxigraph store directory or an http(s) SPARQL endpoint URL"


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
        StoreError: When the store directory exists and ``--overwrite`` is not given, or another
            ``kbqa kb build`` of the same store is running.
        DataFormatError: For a malformed line in an input file.

    """
    from kbqa_lit.kb.store.loaders import build_store, exclusive_build

    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:
        raise UserInputError(f"no such file: {', '.join(missing)}")
    with exclusive_build(args.store):  # a second build of the same store stops at once
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
        EndpointUnreachableError: When the endpoint does not answer (after its retries).

    """
    from kbqa_lit.kb.store import open_store

    sparql = read_text_arg(args.query)
    if not sparql.strip():
        raise UserInputError("empty query")
    kwargs: dict[str, Any] = {"cache_size": 0}
    if args.timeout is not None:
        kwargs["timeout"] = args.timeout
    store = check_reachable(open_store(args.store, **kwargs))
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


def cmd_entity_index(args: argparse.Namespace) -> int:
    """Build or load a store's entity index (``kbqa kb entity-index``) and print its statistics.

    Args:
        args: Parsed arguments: ``store``, ``backend``, ``index``, ``rebuild``, ``timeout``.

    Returns:
        The exit status (0).

    Raises:
        StoreError: When the store does not exist or a read fails.
        UserInputError: For an endpoint's on-disk index without ``--index``.
    """
    import time

    from kbqa_lit.kb.index.entity_db import DiskEntityIndex
    from kbqa_lit.kb.index.entity_index import EntityIndex, index_cache_path
    from kbqa_lit.kb.store import open_store

    store = check_reachable(open_store(args.store, timeout=args.timeout, cache_size=0))
    try:
        t0 = time.perf_counter()
        index = EntityIndex.for_store(store, path=args.index, refresh=args.rebuild, backend=args.backend)
        seconds = time.perf_counter() - t0
    finally:
        store.close()
    disk = isinstance(index, DiskEntityIndex)
    path = index.path if disk else args.index
    if path is None and getattr(store, "path", None) is not None:
        path = index_cache_path(store.path)
    print_json(
        {"backend": "disk" if disk else "memory", "path": str(path) if path else None, "seconds": round(seconds, 3)}
        | index.stats
    )
    return 0


def _virtuoso_server(args: argparse.Namespace) -> Any:
    from kbqa_lit.kb.virtuoso.server import VirtuosoServer

    state = VirtuosoServer(args.dir).read_state() if Path(args.dir).is_dir() else {}
    try:
        return VirtuosoServer(
            args.dir,
            http_port=args.port or state.get("http_port") or 8890,
            isql_port=args.isql_port or state.get("isql_port") or 1111,
            graph=args.graph,
            memory=args.memory,
            max_query_seconds=args.max_query_seconds,
            max_rows=args.max_rows,
            startup_timeout=args.timeout,
        )
    except ValueError as exc:  # a bad --memory
        raise UserInputError(str(exc)) from None


def cmd_serve_virtuoso(args: argparse.Namespace) -> int:
    """Prepare, start and load a local Virtuoso (``kbqa kb serve-virtuoso``); print JSON.

    Args:
        args: Parsed arguments: ``data``, ``dir``, ``port``, ``isql_port``, ``graph``, ``memory``,
            ``max_query_seconds``, ``max_rows``, ``loaders``, ``timeout``, ``overwrite``,
            ``foreground``.

    Returns:
        The exit status (0).

    Raises:
        UserInputError: For a missing data file, no data for an empty directory, or data for a
            directory that already holds a database (without ``--overwrite``).
        StoreError: When Virtuoso is not installed, a server already runs on the directory, a
            port is taken, the server does not come up, or the loader rejects a file.

    """
    import signal
    import time

    from kbqa_lit.errors import StoreError

    start = time.perf_counter()
    files = list(args.data or [])
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise UserInputError(f"no such file: {', '.join(missing)}")
    server = _virtuoso_server(args)
    server.binaries()  # fail early, with the install hint
    if server.is_running():
        raise StoreError(
            f"a Virtuoso server already runs on {server.directory} (pid {server.pid}, {server.endpoint}); "
            f"stop it with `kbqa kb stop-virtuoso --dir {args.dir}`"
        )
    if files and server.has_database:
        if not args.overwrite:
            raise UserInputError(
                f"{server.directory} already holds a Virtuoso database: pass --overwrite to replace it, "
                "or omit --data to serve it as it is"
            )
        server.cleanup()
        server = _virtuoso_server(args)
    if not files and not server.has_database:
        raise UserInputError(f"no Virtuoso database in {server.directory}: pass --data FILE.nt to load one")
    server.prepare(data_dirs=sorted({str(Path(f).resolve().parent) for f in files}))
    start_seconds = server.start(detach=not args.foreground)
    try:
        load = server.load(files, loaders=args.loaders) if files else None
        graph_empty = not load and not server.has_triples()
    except BaseException:
        server.stop()
        raise
    report: dict[str, Any] = {
        "endpoint": server.endpoint,
        "pid": server.pid,
        "graph": server.graph,
        "dir": str(server.directory),
        "triples_loaded": load["triples"] if load else 0,
        "start_seconds": round(start_seconds, 3),
        "load_seconds": load["seconds"] if load else 0.0,
        "seconds": round(time.perf_counter() - start, 3),
    }
    if graph_empty:
        report["warning"] = (
            f"the graph <{server.graph}> is empty in this database: pass the graph it was loaded into "
            "with --graph, or query without default-graph-uri (all graphs)"
        )
    print_json(report)
    if not args.foreground:
        return 0
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        assert server.process is not None
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def cmd_stop_virtuoso(args: argparse.Namespace) -> int:
    """Shut down the Virtuoso server of a directory (``kbqa kb stop-virtuoso``); print JSON.

    Args:
        args: Parsed arguments: ``dir``, ``clean``.

    Returns:
        The exit status (0; also when no server was running).

    Raises:
        UserInputError: When ``--dir`` is not a Virtuoso directory made by ``serve-virtuoso``.

    """
    from kbqa_lit.kb.virtuoso.server import INI_FILE, STATE_FILE, VirtuosoServer

    directory = Path(args.dir)
    if not (directory / STATE_FILE).is_file() and not (directory / INI_FILE).is_file():
        raise UserInputError(f"no Virtuoso directory at {directory} (no {STATE_FILE} or {INI_FILE})")
    server = VirtuosoServer(directory)
    pid = server.pid
    stopped = server.stop()
    if args.clean:
        server.cleanup()
    print_json({"dir": str(server.directory), "stopped": stopped, "pid": pid, "cleaned": bool(args.clean)})
    return 0


def _register_virtuoso(kb_sub: argparse._SubParsersAction) -> None:
    serve = kb_sub.add_parser(
        "serve-virtuoso",
        help="start a local OpenLink Virtuoso SPARQL endpoint and bulk-load N-Triples into it",
        description="Write DIR/virtuoso.ini (listening on 127.0.0.1 only), start virtuoso-t (detached "
        "unless --foreground), bulk-load the files into --graph and print JSON {endpoint, pid, "
        "triples_loaded, seconds}. Without --data, serve the database already in DIR. Needs the "
        "Debian package virtuoso-opensource-7-bin.",
    )
    serve.add_argument("--data", nargs="+", metavar="FILE", help="N-Triples files (.nt, .nt.gz; also .ttl/.nq)")
    serve.add_argument("--dir", required=True, help="the database directory (created when missing)")
    serve.add_argument("--port", type=int, default=None, help="HTTP port of /sparql (default 8890)")
    serve.add_argument("--isql-port", type=int, default=None, help="isql port (default 1111)")
    serve.add_argument("--graph", default=None, help="named graph to load into and query (default http://freebase.com)")
    serve.add_argument(
        "--memory", default="1G", help="memory for Virtuoso's page buffers, e.g. 2G; full Freebase: 32G-64G"
    )
    serve.add_argument("--max-query-seconds", type=int, default=60, help="server-side query time limit (0: none)")
    serve.add_argument("--max-rows", type=int, default=100_000, help="rows returned at most per query")
    serve.add_argument("--loaders", type=int, default=1, help="parallel bulk-loader sessions (many files)")
    serve.add_argument("--timeout", type=_positive, default=120.0, help="seconds to wait for the server to start")
    serve.add_argument("--overwrite", action="store_true", help="replace a database already in --dir")
    serve.add_argument(
        "--foreground",
        action="store_true",
        help="keep running until Ctrl-C / SIGTERM, then shut the server down",
    )
    serve.set_defaults(func=cmd_serve_virtuoso)

    stop = kb_sub.add_parser(
        "stop-virtuoso",
        help="shut down the Virtuoso server started by serve-virtuoso",
        description="Shut down the Virtuoso server of DIR (isql shutdown; SIGTERM/SIGKILL as fallbacks); "
        "prints JSON {dir, stopped, pid, cleaned}.",
    )
    stop.add_argument("--dir", required=True, help="the database directory given to serve-virtuoso")
    stop.add_argument("--clean", action="store_true", help="also delete the database files")
    stop.set_defaults(func=cmd_stop_virtuoso)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa kb build``, ``query``, ``entity-index``, ``serve-virtuoso`` and ``stop-virtuoso`` to ``kbqa``.

    Args:
        subparsers: The ``kbqa`` parser's subparsers.

    """
    kb_sub = command_group(
        subparsers,
        "kb",
        help="build knowledge-base stores and query them",
        description="Build knowledge-base stores from triple files and run SPARQL against them.",
    )

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
        "exit status 1 when the query failed, 2 (a message on stderr) when the endpoint does not answer.",
    )
    query.add_argument("--store", required=True, help=_STORE_HELP)
    query.add_argument("--timeout", type=_positive, default=None, help="seconds before the query is given up")
    query.add_argument("query", metavar="QUERY", help="SPARQL text, or @FILE to read it from a file")
    query.set_defaults(func=cmd_query)

    ent = kb_sub.add_parser(
        "entity-index",
        help="build (or check) the entity index that linking uses",
        description="Build the store's entity index once (in memory as <store>.entities.json, or on disk as "
        "<store>.entities.sqlite) and print its statistics as JSON.",
    )
    ent.add_argument("--store", required=True, help=_STORE_HELP)
    ent.add_argument(
        "--backend",
        choices=("auto", "memory", "disk"),
        default=None,
        help="memory, disk (SQLite) or auto (disk for >= 5e6 triples or when its file exists); "
        "default KBQA_ENTITY_INDEX, else auto",
    )
    ent.add_argument("--index", type=Path, default=None, help="the index file (default beside the store)")
    ent.add_argument("--rebuild", action="store_true", help="rebuild even when an up-to-date index exists")
    ent.add_argument("--timeout", type=_positive, default=600.0, help="store query timeout, seconds (default 600)")
    ent.set_defaults(func=cmd_entity_index)

    _register_virtuoso(kb_sub)
