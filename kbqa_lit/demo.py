"""``python -m kbqa_lit.demo``: a check of the knowledge-base layer, no training (``make demo-kb``).

It builds the synthetic world (a Freebase-like KB written by kbqa_lit itself, no network, no
downloads), bulk-loads it into the embedded Oxigraph store, answers the test questions by
converting their *gold* S-expressions to SPARQL and executing them, prints a table of questions
and answers, and scores the answers against the gold with the project's metrics (F1 = 1 when the
KB layer is right). The main job is ``make demo``: ``kbqa fit`` / ``kbqa test`` with
``configs/quickstart.yaml``, which trains CoQ's generator and answers with it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.execute import run_sexpr
from kbqa_lit.kb.store.loaders import build_store


def main(argv: list[str] | None = None) -> int:
    """Build the world and the store, answer the test questions, print answers and scores."""
    from kbqa_lit.data.synthetic import build_world
    from kbqa_lit.metrics.functional import answer_f1, hit_at_1

    parser = argparse.ArgumentParser(prog="python -m kbqa_lit.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="outputs/demo", help="working directory (default outputs/demo)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic world")
    parser.add_argument("--show", type=int, default=12, help="questions to print")
    args = parser.parse_args(argv)

    console = Console()
    out = Path(args.out)
    start = time.perf_counter()
    world = build_world(out / "world", seed=args.seed, size="small")
    console.print(f"[bold]synthetic world[/]: {world['triples']} triples, questions {world['questions']}")
    stats = build_store(out / "kb", [out / "world" / "kb.nt"], "nt", overwrite=True)
    console.print(f"[bold]embedded Oxigraph store[/]: {stats['triples']} triples loaded in {stats['seconds']} s")

    store = OxigraphStore(out / "kb", timeout=10.0)
    examples = list(read_jsonl(out / "world" / "test.jsonl"))
    table = Table(title="test questions answered by executing their S-expressions")
    for col in ("question", "S-expression", "answers", "F1"):
        table.add_column(col, overflow="fold")
    f1s, hits, rows = [], [], []
    for i, ex in enumerate(examples):
        _, result = run_sexpr(store, ex.s_expression or "", semantics=ex.semantics)
        gold = [a.id for a in ex.answers]
        f1 = answer_f1(result.answers, gold)
        f1s.append(f1)
        hits.append(hit_at_1(result.answers, gold, ordered=False))
        rows.append({"qid": ex.qid, "answers": result.answers, "error": result.error})
        if i < args.show:
            names = {a.id: a.name for a in ex.answers}
            shown = ", ".join(names.get(a, a) for a in result.answers[:4]) + (" ..." if len(result.answers) > 4 else "")
            table.add_row(
                ex.question,
                ex.s_expression or "",
                shown if result.ok else f"error: {result.error}",
                f"{f1:.2f}",
            )
    console.print(table)
    (out / "test_predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    n = len(examples)
    summary = {
        "questions": n,
        "f1": round(sum(f1s) / max(1, n), 4),
        "hit1": round(sum(hits) / max(1, n), 4),
        "seconds": round(time.perf_counter() - start, 2),
    }
    console.print(f"[bold]gold S-expressions executed on the store[/]: {json.dumps(summary)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
