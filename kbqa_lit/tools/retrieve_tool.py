"""``kbqa retrieve``: CoQ step 2a candidates written into common-schema JSON lines.

- ``kbqa retrieve entities --store DIR --input F.jsonl --out F.jsonl [--top-l 10]`` links each
  question with :class:`~kbqa_lit.kb.index.entity_index.EntityIndex` (built once, persisted next to the
  store) and writes ``meta["entity_candidates"]`` ``{id: label}`` in rank order,
  ``meta["entity_candidate_scores"]`` ``{id: score}`` and ``meta["entity_relations"]``
  ``{id: [1-hop relation ids]}``.
- ``kbqa retrieve relations --checkpoint CKPT --store DIR --input F.jsonl --out F.jsonl
  [--top-l 10] [--bm25-top N]`` ranks the store's relation inventory (BM25 top-N first when the
  inventory is larger than N) with a trained
  :class:`~kbqa_lit.modules.cross_encoder.CrossEncoderRetriever` and writes
  ``meta["relation_candidates"]`` ``[[relation, score], ...]`` best first.

With ``--schema-query`` (default on) the ``[SCHEMA]`` part of a *predicted* decomposition
(``meta["decomposition_schema"]``, status ``ok``; CoQ step 1) is used as well: its relation phrases
are extra queries of the relation ranking (the BM25 pre-filter takes the union of the pools, and a
relation's score is its best over the question and the phrases), its entity names extra mentions
of the entity index (candidates of every mention merged by score).

Outputs are written atomically. Each prints a JSON summary with ``recall@1`` and ``recall@<l>``
over the examples that have gold (topic entities / gold S-expression relations).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import DataFormatError, KBQAError, UserInputError
from kbqa_lit.tools.common import command_group, iter_json_lines, print_json

#: Where a ``CrossEncoderRetriever`` checkpoint comes from (for error messages).
RETRIEVER_HINT = "kbqa fit --config configs/coq/relation_retriever.yaml writes one"


def _read_examples(path: Path) -> list[KBQAExample]:
    out = []
    for lineno, obj in iter_json_lines(path):
        try:
            out.append(KBQAExample.from_dict(obj))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(path, lineno, f"not a common-schema example ({exc})") from None
    return out


def _gold_entities(ex: KBQAExample) -> list[str]:
    if ex.topic_entities:
        return list(ex.topic_entities)
    if ex.s_expression:
        from kbqa_lit.kb.lf.sexpr import schema_items

        try:
            return list(schema_items(ex.s_expression).entities)
        except KBQAError:
            return []
    return []


def schema_part(ex: KBQAExample, kind: str) -> list[str]:
    """The ``[SCHEMA]`` ``entities`` or ``relations`` of a predicted decomposition (``[]`` for gold or none)."""
    from kbqa_lit.data.linking import PREDICTED_DECOMPOSITION_STATUSES

    if ex.meta.get("decomposition_status") not in PREDICTED_DECOMPOSITION_STATUSES:
        return []
    schema = ex.meta.get("decomposition_schema") or {}
    return [str(x) for x in schema.get(kind) or [] if str(x).strip()]


def rank_relations(
    model: Any, bm25: Any, question: str, phrases: list[str], top_l: int, batch_size: int
) -> list[tuple[str, float]]:
    """Rank relations for the question, the schema's relation phrases as extra queries (best score wins)."""
    if not phrases:
        return model.rank(question, bm25.prefilter(question), top_l=top_l, batch_size=batch_size)
    pool = list(dict.fromkeys(r for q in [question, *phrases] for r in bm25.prefilter(q)))
    best: dict[str, float] = {}
    for q in [question, *phrases]:
        for r, score in model.rank(q, pool, top_l=len(pool), batch_size=batch_size):
            best[r] = max(score, best.get(r, score))
    return sorted(best.items(), key=lambda x: -x[1])[:top_l]


def link_entities(index: Any, question: str, mentions: list[str], top_l: int, fuzzy_threshold: float) -> list[Any]:
    """Entity candidates of the question and of the schema's entity mentions, merged by score (stable)."""
    found: dict[str, Any] = {}
    for text in [question, *mentions]:
        for c in index.search(text, top_l=top_l, fuzzy_threshold=fuzzy_threshold):
            if c.id not in found or c.score > found[c.id].score:
                found[c.id] = c
    return sorted(found.values(), key=lambda c: -c.score)[:top_l]


def _top_l(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return n


def _open(store_spec: str, timeout: float) -> Any:
    from kbqa_lit.kb.store import open_store

    return open_store(store_spec, timeout=timeout)


class _Recall:
    def __init__(self, ks: list[int]) -> None:
        self.ks = ks
        self.sums = dict.fromkeys(ks, 0.0)
        self.n = 0

    def add(self, gold: list[str], ranked: list[str]) -> None:
        from kbqa_lit.kb.index.relation_inventory import recall_at

        if gold:
            self.n += 1
            for k in self.ks:
                self.sums[k] += recall_at(gold, ranked, k)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"with_gold": self.n}
        for k in self.ks:
            out[f"recall@{k}"] = round(self.sums[k] / self.n, 4) if self.n else None
        return out


def run_entities(args: argparse.Namespace) -> int:
    """Handle ``kbqa retrieve entities``."""
    from kbqa_lit.kb.index.entity_index import EntityIndex

    examples = _read_examples(args.input)
    t0 = time.perf_counter()
    store = _open(args.store, args.timeout)
    try:
        index = EntityIndex.for_store(store, path=args.index, refresh=args.rebuild)
        t_index = time.perf_counter() - t0
        recall = _Recall(sorted({1, args.top_l}))
        for ex in examples:
            mentions = schema_part(ex, "entities") if args.schema_query else []
            cands = link_entities(index, ex.question, mentions, args.top_l, args.fuzzy_threshold)
            ids = [c.id for c in cands]
            ex.meta["entity_candidates"] = {c.id: c.label for c in cands}
            ex.meta["entity_candidate_scores"] = {c.id: round(c.score, 4) for c in cands}
            ex.meta["entity_relations"] = index.relations_of(ids) if ids else {}
            recall.add(_gold_entities(ex), ids)
    finally:
        store.close()
    n = write_jsonl_atomic((ex.to_dict() for ex in examples), args.out)
    print_json(
        {
            "command": "entities",
            "input": str(args.input),
            "out": str(args.out),
            "examples": n,
            "top_l": args.top_l,
            "index": index.stats,
            "index_seconds": round(t_index, 3),
            "seconds": round(time.perf_counter() - t0, 3),
            **recall.summary(),
        }
    )
    return 0


def run_relations(args: argparse.Namespace) -> int:
    """Handle ``kbqa retrieve relations``."""
    from kbqa_lit.datamodules.relation_retrieval import gold_relations
    from kbqa_lit.kb.index.relation_inventory import BM25RelationRanker, RelationInventory, load_inventory
    from kbqa_lit.modules.checkpoint_loading import load_module_checkpoint
    from kbqa_lit.modules.cross_encoder import CrossEncoderRetriever

    if args.store is None and args.inventory is None:
        raise UserInputError("give --store or --inventory (where the candidate relations come from)")
    t0 = time.perf_counter()
    model = load_module_checkpoint(args.checkpoint, CrossEncoderRetriever, hint=RETRIEVER_HINT).eval()
    examples = _read_examples(args.input)
    inventory = RelationInventory.from_file(args.inventory) if args.inventory else load_inventory(args.store)
    bm25 = BM25RelationRanker(inventory, top_n=args.bm25_top)
    recall = _Recall(sorted({1, args.top_l}))
    for ex in examples:
        phrases = schema_part(ex, "relations") if args.schema_query else []
        ranked = rank_relations(model, bm25, ex.question, phrases, args.top_l, args.batch_size)
        ex.meta["relation_candidates"] = [[r, round(s, 4)] for r, s in ranked]
        recall.add(gold_relations(ex, args.input), [r for r, _ in ranked])
    n = write_jsonl_atomic((ex.to_dict() for ex in examples), args.out)
    print_json(
        {
            "command": "relations",
            "input": str(args.input),
            "out": str(args.out),
            "examples": n,
            "top_l": args.top_l,
            "inventory": len(inventory),
            "bm25_top": args.bm25_top,
            "seconds": round(time.perf_counter() - t0, 3),
            **recall.summary(),
        }
    )
    return 0


def _add_schema_query(parser: argparse.ArgumentParser) -> None:
    """Add ``--schema-query/--no-schema-query`` (default on) to a ``kbqa retrieve`` subcommand."""
    parser.add_argument(
        "--schema-query",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also query with the [SCHEMA] part of predicted decompositions (default on)",
    )


def register(subparsers: Any) -> None:
    """Add the ``retrieve`` command group (``entities``, ``relations``) to the ``kbqa`` parser."""
    sub = command_group(subparsers, "retrieve", help="CoQ candidate entities and relations into JSON lines")

    ent = sub.add_parser(
        "entities",
        help="link question n-grams to KB entities by name (exact, normalised, fuzzy)",
        description="Write meta entity_candidates, entity_candidate_scores, entity_relations; print a JSON summary.",
    )
    ent.add_argument("--store", required=True, help="store directory (or SPARQL endpoint URL)")
    ent.add_argument("--input", required=True, type=Path, help="common-schema JSON-lines file")
    ent.add_argument("--out", required=True, type=Path, help="output JSON-lines file (written atomically)")
    ent.add_argument("--top-l", type=_top_l, default=10, help="candidates per question (default 10)")
    ent.add_argument("--fuzzy-threshold", type=float, default=0.8, help="least fuzzy similarity (default 0.8)")
    ent.add_argument(
        "--index",
        type=Path,
        default=None,
        help="entity index file: *.sqlite on disk, else in memory (default beside the store; KBQA_ENTITY_INDEX)",
    )
    ent.add_argument("--rebuild", action="store_true", help="rebuild the entity index even if it exists")
    ent.add_argument("--timeout", type=float, default=600.0, help="store query timeout in seconds (default 600)")
    _add_schema_query(ent)
    ent.set_defaults(func=run_entities)

    rel = sub.add_parser(
        "relations",
        help="rank the KB's relations per question with a trained cross-encoder",
        description="Write meta relation_candidates [[relation, score], ...]; print a JSON summary.",
    )
    rel.add_argument("--checkpoint", required=True, type=Path, help="CrossEncoderRetriever checkpoint (.ckpt)")
    rel.add_argument("--store", default=None, help="store directory or endpoint URL (the relation inventory)")
    rel.add_argument("--inventory", type=Path, default=None, help="relation inventory file instead of --store")
    rel.add_argument("--input", required=True, type=Path, help="common-schema JSON-lines file")
    rel.add_argument("--out", required=True, type=Path, help="output JSON-lines file (written atomically)")
    rel.add_argument("--top-l", type=_top_l, default=10, help="candidates per question (default 10)")
    rel.add_argument(
        "--bm25-top",
        type=int,
        default=100,
        help="BM25 pre-filter size when the inventory is larger (0: off; default 100)",
    )
    rel.add_argument("--batch-size", type=_top_l, default=64, help="pairs per forward pass (default 64)")
    _add_schema_query(rel)
    rel.set_defaults(func=run_relations)


__all__ = ["link_entities", "rank_relations", "register", "run_entities", "run_relations", "schema_part"]
