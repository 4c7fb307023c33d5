"""Batched execution benchmark: raw pyoxigraph vs ``OxigraphStore.execute`` vs ``execute_many`` on MetaQA.

Builds an on-disk Oxigraph store from MetaQA's KB (``../shared/data/metaqa/kb.txt``, via
``build_store(..., "metaqa")``) in a temp dir and samples MetaQA dev questions (``read_metaqa``,
the ``exact`` lines). Each question gets 10 beams' worth of queries: its gold S-expression and 9
variants with other MetaQA relations (then other questions' gold queries, when a question has
fewer variants), converted with ``sexpr_to_sparql``. Caches are off, so every query runs.

Part 1 prints, per hop, p50/p90 milliseconds per query for

- raw ``pyoxigraph`` in this process (``run_query``: the worker's own query-and-collect code),
- ``OxigraphStore.execute`` one query at a time (one round trip to the worker per query),
- ``OxigraphStore.execute_many`` per question (one round trip for its 10 queries),

each query timed alone (raw, execute) and per question (ms per query = the question's time / 10,
for all three), with the ratios to raw (p50 over p50, and total over total). The three are interleaved question
by question, so machine load hits them alike; their answers are checked to be equal.

Part 2 times ``ExecutionGuidedSelector`` (workers=1) per question over normalised beams with
several ``chunks`` schedules, in two scenarios: the gold beam first (a trained MetaQA model,
whose first beam mostly executes) and the gold beam at a random position. It counts the queries
run and checks that every schedule chooses the same beam.

Usage: ``python benchmarks/bench_execute_many.py [--questions 300] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pyoxigraph

from kbqa_lit.data.formats import read_metaqa
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.kb.store.oxigraph_runner import run_query
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "metaqa"
RELATIONS = [
    f"metaqa.movie.{r}"
    for r in (
        "directed_by",
        "written_by",
        "starred_actors",
        "release_year",
        "has_genre",
        "has_tags",
        "in_language",
        "has_imdb_rating",
        "has_imdb_votes",
    )
]
BEAMS = 10
SCHEDULES: dict[str, tuple[int, ...]] = {
    "one at a time (default)": (1,),
    "1, 4, 16": (1, 4, 16),
    "1, then the rest": (1, 1000),
    "5, then the rest": (5, 1000),
    "all at once": (1000,),
}


def exact_examples(hop: int) -> list[KBQAExample]:
    """The dev questions of one hop count whose gold answers this KB reproduces exactly."""
    check = (DATA / f"{hop}-hop" / "qa_dev_kbcheck.txt").read_text(encoding="utf-8").splitlines()
    return [
        ex
        for ex, flag in zip(read_metaqa(DATA, "dev", hops=(hop,)), check, strict=False)
        if flag.strip() == "exact" and ex.s_expression
    ]


def variants(sexpr: str, rng: random.Random) -> list[str]:
    """S-expressions that swap one relation of ``sexpr`` for another MetaQA relation."""
    out: list[str] = []
    for rel in (r for r in RELATIONS if r in sexpr):
        out += [sexpr.replace(rel, other, 1) for other in RELATIONS if other != rel]
    rng.shuffle(out)
    return list(dict.fromkeys(out))


def beams_of(ex: KBQAExample, rng: random.Random) -> list[str]:
    """Gold S-expression first, then up to ``BEAMS - 1`` relation variants."""
    assert ex.s_expression is not None
    return [ex.s_expression, *variants(ex.s_expression, rng)][:BEAMS]


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def part1(store_dir: Path, examples: list[KBQAExample], rng: random.Random) -> None:
    queries = []
    golds = [sexpr_to_sparql(ex.s_expression, semantics=ex.semantics) for ex in examples]  # type: ignore[arg-type]
    for ex in examples:
        qs = [sexpr_to_sparql(s, semantics=ex.semantics) for s in beams_of(ex, rng)]
        while len(qs) < BEAMS:
            qs.append(rng.choice(golds))
        queries.append(qs)
    raw_store = pyoxigraph.Store.read_only(str(store_dir))
    raw: list[float] = []
    one: list[float] = []
    many: list[float] = []
    with OxigraphStore(store_dir, cache_size=0, timeout=30.0) as store:
        for qs in queries[:5]:  # warm both processes' page caches and code paths
            store.execute_many(qs)
            [run_query(raw_store, q) for q in qs]
        for k, qs in enumerate(queries):
            order = [0, 1, 2][k % 3 :] + [0, 1, 2][: k % 3]
            answers: dict[int, list[list[str]]] = {}
            for method in order:
                if method == 0:
                    got = []
                    for q in qs:
                        t = time.perf_counter()
                        got.append(run_query(raw_store, q)["answers"])
                        raw.append(time.perf_counter() - t)
                elif method == 1:
                    got = []
                    for q in qs:
                        t = time.perf_counter()
                        got.append(store.execute(q).answers)
                        one.append(time.perf_counter() - t)
                else:
                    t = time.perf_counter()
                    results = store.execute_many(qs)
                    many.extend([(time.perf_counter() - t) / len(qs)] * len(qs))
                    got = [r.answers for r in results]
                answers[method] = got
            assert answers[0] == answers[1] == answers[2], f"answers differ for {qs[0]}"
    n = BEAMS

    def per_question(times: list[float]) -> list[float]:
        return [sum(times[i : i + n]) / n for i in range(0, len(times), n)]

    p50_raw = pct(raw, 0.5)
    print("  each query timed alone:")
    for name, times in (("raw pyoxigraph", raw), ("execute one by one", one)):
        print(
            f"    {name:<26} p50 {pct(times, 0.5) * 1e3:6.3f} ms  p90 {pct(times, 0.9) * 1e3:6.3f} ms  "
            f"ratio to raw p50 {pct(times, 0.5) / p50_raw:4.2f}x"
        )
    print(f"  per question ({n} queries; ms per query = question's time / {n}):")
    raw_q = per_question(raw)
    for name, times in (("raw pyoxigraph", raw), ("execute one by one", one), ("execute_many", many)):
        q = per_question(times)
        print(
            f"    {name:<26} p50 {pct(q, 0.5) * 1e3:6.3f} ms  p90 {pct(q, 0.9) * 1e3:6.3f} ms  "
            f"ratio to raw: p50 {pct(q, 0.5) / pct(raw_q, 0.5):4.2f}x  total {sum(times) / sum(raw):4.2f}x"
        )


def part2(store_dir: Path, examples: list[KBQAExample], rng: random.Random) -> None:
    with OxigraphStore(store_dir, cache_size=0, timeout=30.0) as store:
        for scenario in ("gold first", "gold at a random position"):
            cases = []
            for ex in examples:
                labels = ex.entity_labels()
                beams = [normalize_sexpr(s, labels) for s in beams_of(ex, rng)]
                if scenario != "gold first":
                    gold = beams.pop(0)
                    beams.insert(rng.randrange(len(beams) + 1), gold)
                cases.append((ex, beams, invert_labels(labels)))
            selectors = {name: ExecutionGuidedSelector(store, chunks=c) for name, c in SCHEDULES.items()}
            times = {name: 0.0 for name in SCHEDULES}
            runs = {name: 0 for name in SCHEDULES}
            names = list(SCHEDULES)
            for k, (ex, beams, label_to_ids) in enumerate(cases):
                chosen = set()
                for name in names[k % len(names) :] + names[: k % len(names)]:
                    before = store.misses
                    t = time.perf_counter()
                    sel = selectors[name].select(beams, semantics=ex.semantics, label_to_ids=label_to_ids)
                    times[name] += time.perf_counter() - t
                    runs[name] += store.misses - before
                    chosen.add((sel.chosen_beam, tuple(sel.answers)))
                assert len(chosen) == 1, f"schedules disagree on {ex.qid}: {chosen}"
            base = times[names[0]]
            print(f"  selection, {scenario}:")
            for name in names:
                print(
                    f"    {name:<20} {times[name] / len(cases) * 1e3:6.3f} ms/question  "
                    f"queries run {runs[name]:5d}  vs one at a time {times[name] / base:4.2f}x"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300, help="sampled dev questions per hop")
    parser.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-") as tmp:
        t = time.perf_counter()
        build_store(Path(tmp) / "store", [DATA / "kb.txt"], "metaqa")
        print(f"store built in {time.perf_counter() - t:.1f} s")
        for hop in args.hops:
            pool = exact_examples(hop)
            examples = rng.sample(pool, min(args.questions, len(pool)))
            print(f"{hop}-hop: {len(examples)} questions × {BEAMS} queries")
            part1(Path(tmp) / "store", examples, rng)
            part2(Path(tmp) / "store", examples, rng)


if __name__ == "__main__":
    main()
