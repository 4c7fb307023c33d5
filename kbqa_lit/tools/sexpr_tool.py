"""``kbqa sexpr to-sparql`` and ``kbqa sexpr run``: S-expressions one at a time or in batches.

Batch input lines are JSON objects with ``qid`` and ``s_expression`` and optionally
``semantics`` (or, in a whole example of the common schema, ``meta.semantics``); other fields
are ignored. Output lines keep the input order: ``{qid, s_expression, sparql}`` /
``{qid, s_expression, answers}`` or ``{qid, s_expression, error}``. One bad line never stops a
batch; the output file is written atomically when the batch ends. An endpoint that stops answering
mid-run is waited for (``--retry-for``); one that stays away longer stops the run (exit status 2,
nothing written) instead of turning its questions into error rows.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.errors import EndpointUnreachableError, SExprError, UserInputError, check_choice
from kbqa_lit.kb.lf.semantics import ALIASES, SEMANTICS, SEMANTICS_NAMES, TIES, resolve_semantics
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.tools.common import parse_json_lines, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa sexpr to-sparql`` and ``kbqa sexpr run``."""
    parser = subparsers.add_parser("sexpr", help="S-expressions: convert to SPARQL, run on a store")
    sub = parser.add_subparsers(dest="sexpr_command", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("expr", nargs="?", help="an S-expression (omit with --batch)")
    common.add_argument("--batch", metavar="IN.jsonl", help="JSON lines with qid and s_expression")
    common.add_argument("--out", metavar="OUT.jsonl", help="output file of --batch (default: stdout)")
    aliases = ", ".join(f"{k}={v}" for k, v in ALIASES.items())
    common.add_argument(
        "--semantics",
        metavar="NAME",
        default=None,
        help=f"answer semantics for EXPR, and for batch lines that do not name one (default exclude-topic): "
        f"one of {', '.join(SEMANTICS)} or a dataset alias ({aliases})",
    )
    common.add_argument(
        "--ties",
        choices=TIES,
        default=None,
        help="ARGMAX/ARGMIN keep one member (first, ORDER BY ... LIMIT 1) or every tied one (all); "
        "default: first for exclude-topic/exclude-source (webqsp, cwq), all otherwise",
    )
    common.add_argument("--no-ties", action="store_true", help="the same as --ties first")
    common.add_argument(
        "--ontology",
        metavar="DIR",
        help="Freebase schema folder (fb_roles, fb_types, reverse_properties): ARGMAX casts by range, "
        "CVT hops for exclude-source",
    )
    p = sub.add_parser("to-sparql", parents=[common], help="convert S-expressions to SPARQL")
    p.set_defaults(func=_to_sparql)
    p = sub.add_parser("run", parents=[common], help="execute S-expressions on a store")
    p.add_argument("--store", required=True, help="an Oxigraph store directory or a SPARQL endpoint URL")
    p.add_argument("--timeout", type=float, default=30.0, help="per-query timeout in seconds (default 30)")
    p.add_argument("--workers", type=int, default=2, help="queries executed in parallel (default 2)")
    p.add_argument(
        "--retry-for",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="an endpoint that stops answering mid-run (a restart) is waited for this long (default 60); "
        "longer, and the run stops with exit status 2 and writes nothing",
    )
    p.set_defaults(func=_run)


def _check_args(args: argparse.Namespace) -> None:
    if args.semantics is not None:
        check_choice("--semantics", args.semantics, SEMANTICS_NAMES)
    if args.no_ties:
        args.ties = "first"
    args.onto = None
    if args.ontology:
        from kbqa_lit.kb.lf.ontology import Ontology

        if not Path(args.ontology).is_dir():
            raise UserInputError(f"no such ontology folder: {args.ontology}")
        args.onto = Ontology.load(args.ontology)
    if bool(args.expr) == bool(args.batch):
        raise UserInputError("give exactly one of EXPR or --batch IN.jsonl")
    if args.out and not args.batch:
        raise UserInputError("--out goes with --batch")


def _read_batch(path: str, default_semantics: str) -> Iterator[dict[str, Any]]:
    """Yield one job per input line; unusable lines become jobs that carry an error."""
    for lineno, obj, problem in parse_json_lines(path):
        if problem is not None:
            yield {"qid": None, "s_expression": None, "error": f"line {lineno}: {problem}"}
            continue
        if not isinstance(obj, dict):
            yield {"qid": None, "s_expression": None, "error": f"line {lineno}: not a JSON object"}
            continue
        job: dict[str, Any] = {"qid": obj.get("qid"), "s_expression": obj.get("s_expression")}
        meta = obj.get("meta") if isinstance(obj.get("meta"), dict) else {}
        semantics = obj.get("semantics") or meta.get("semantics") or default_semantics
        if not isinstance(job["s_expression"], str) or not job["s_expression"].strip():
            job["error"] = f"line {lineno}: no s_expression"
        elif semantics not in SEMANTICS_NAMES:
            job["error"] = f"line {lineno}: unknown semantics {semantics!r}"
        else:
            semantics = resolve_semantics(semantics)
        job["semantics"] = semantics
        yield job


def _convert(job: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    out = {"qid": job["qid"], "s_expression": job["s_expression"]}
    if job.get("error"):
        out["error"] = job["error"]
        return out
    try:
        out["sparql"] = sexpr_to_sparql(
            job["s_expression"], semantics=job["semantics"], ties=args.ties, ontology=args.onto
        )
    except SExprError as exc:
        out["error"] = f"bad S-expression: {exc}"
    return out


def _emit(rows: list[dict[str, Any]] | Iterator[dict[str, Any]], out: str | None) -> None:
    if out:
        n = write_jsonl_atomic(rows, out)
        import sys

        print(json.dumps({"out": out, "lines": n}), file=sys.stderr)
    else:
        for row in rows:
            print_json(row)


def _to_sparql(args: argparse.Namespace) -> int:
    _check_args(args)
    if args.expr:
        semantics = args.semantics or "exclude-topic"
        print(sexpr_to_sparql(args.expr, semantics=semantics, ties=args.ties, ontology=args.onto))
        return 0
    jobs = _read_batch(args.batch, args.semantics or "exclude-topic")
    _emit([_convert(j, args) for j in jobs], args.out)
    return 0


def _run(args: argparse.Namespace) -> int:
    from kbqa_lit.kb.store import is_endpoint, open_store
    from kbqa_lit.tools.common import check_reachable

    _check_args(args)
    store = open_store(
        args.store,
        timeout=args.timeout,
        **({"retry_for": args.retry_for} if is_endpoint(args.store) else {"workers": max(1, args.workers)}),
    )
    check_reachable(store)  # an endpoint that is down: one line on stderr, exit 2 (not an error per row)
    if args.expr:
        job = {"qid": None, "s_expression": args.expr, "semantics": args.semantics or "exclude-topic"}
        row = _execute(store, _convert(job, args))
        if "error" in row:
            if row["error"].startswith("bad S-expression"):
                raise SExprError(row["error"][len("bad S-expression: ") :])
            print_json({"s_expression": args.expr, "error": row["error"]})
            return 1
        print_json({"s_expression": args.expr, "answers": row["answers"]})
        return 0
    jobs = [_convert(j, args) for j in _read_batch(args.batch, args.semantics or "exclude-topic")]
    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        futures = [pool.submit(_execute, store, j) for j in jobs]
        try:
            rows = [f.result() for f in futures]
        except EndpointUnreachableError:
            for f in futures:
                f.cancel()
            raise
    _emit(rows, args.out)
    return 0


def _execute(store: Any, job: dict[str, Any]) -> dict[str, Any]:
    out = {"qid": job["qid"], "s_expression": job["s_expression"]}
    if "error" in job:
        out["error"] = job["error"]
        return out
    result = store.execute(job["sparql"])
    if result.unreachable:  # the endpoint, not the query: an error row here would be a wrong figure
        raise EndpointUnreachableError(
            f"{result.error} (waited up to --retry-for {getattr(store, 'retry_for', 0):g} s); stopped, nothing "
            "written: run the same command again when the endpoint is back"
        )
    if result.ok:
        out["answers"] = list(result.answers)
    else:
        out["error"] = result.error or "query failed"
    return out
