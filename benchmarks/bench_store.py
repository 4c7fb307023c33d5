"""Knowledge-base store benchmark: Oxigraph (embedded, on disk) vs rdflib on MetaQA.

Loads MetaQA's KB (``../shared/data/metaqa/kb.txt``) into an on-disk Oxigraph store, then runs the
1/2/3-hop relation paths of the MetaQA dev questions (topic entity in ``[brackets]``, path from
``qa_dev_qtype.txt``) as hand-written SPARQL with full IRIs and simple-path semantics (no node
repeats), and prints p50/p95 latency per hop for

- raw ``pyoxigraph.Store.query`` in this process,
- ``OxigraphStore.execute`` (timeout-enforcing worker process, caches off),
- rdflib on a sample of the same queries (the same N-Triples in an ``rdflib.Graph``),

plus the rdflib/Oxigraph latency ratio on that sample, and checks answers against the gold
answers of the ``exact`` dev lines. Usage: ``python benchmarks/bench_store.py [--sample 200]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import pyoxigraph

from kbqa_lit.kb.lf.iri import NAME_RELATION, NS, entity_id_for_name, relation_id_for
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store, write_ntriples

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "metaqa"
#: qtype node name → MetaQA relation from the movie to that node.
RELATION = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "genre": "has_genre",
    "tag": "has_tags",
    "tags": "has_tags",
    "language": "in_language",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}


def iri(local: str) -> str:
    return f"<{NS}{local}>"


def path_query(topic: str, qtype: str) -> str:
    """SPARQL for a MetaQA relation path from the topic entity, with no node repeated."""
    kinds = qtype.split("_to_")
    nodes = [iri(entity_id_for_name(topic, "metaqa"))] + [f"?v{i}" for i in range(1, len(kinds) - 1)] + ["?x"]
    triples = []
    for i, (a, b) in enumerate(zip(kinds, kinds[1:], strict=False)):
        if a == "movie":
            triples.append(f"{nodes[i]} {iri(relation_id_for(RELATION[b], 'metaqa'))} {nodes[i + 1]} .")
        else:
            triples.append(f"{nodes[i + 1]} {iri(relation_id_for(RELATION[a], 'metaqa'))} {nodes[i]} .")
    distinct = [f"{nodes[j]} != {nodes[i]}" for j in range(1, len(nodes)) for i in range(j)]
    return f"SELECT DISTINCT ?x WHERE {{ {' '.join(triples)} FILTER({' && '.join(distinct)}) }}"


def load_questions(hop: int) -> list[tuple[str, set[str], bool]]:
    """(query, gold answer ids, line is `exact`) for each dev question of one hop count."""
    folder = DATA / f"{hop}-hop"
    lines = (folder / "qa_dev.txt").read_text(encoding="utf-8").splitlines()
    qtypes = (folder / "qa_dev_qtype.txt").read_text(encoding="utf-8").splitlines()
    checks = (folder / "qa_dev_kbcheck.txt").read_text(encoding="utf-8").splitlines()
    out = []
    for line, qtype, check in zip(lines, qtypes, checks, strict=True):
        question, answers = line.split("\t")
        topic = question[question.index("[") + 1 : question.index("]")]
        gold = {entity_id_for_name(a, "metaqa") for a in answers.split("|")}
        out.append((path_query(topic, qtype.strip()), gold, check.strip() == "exact"))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1e3:7.3f} ms  p95 {pct(values, 0.95) * 1e3:7.3f} ms"


def time_raw(store: pyoxigraph.Store, queries: list[str]) -> tuple[list[float], list[set[str]]]:
    times, answers = [], []
    for q in queries:
        start = time.perf_counter()
        got = {s[0].value[len(NS) :] for s in store.query(q)}
        times.append(time.perf_counter() - start)
        answers.append(got)
    return times, answers


def time_rdflib(graph: object, queries: list[str]) -> tuple[list[float], list[set[str]]]:
    times, answers = [], []
    for q in queries:
        start = time.perf_counter()
        got = {str(row[0])[len(NS) :] for row in graph.query(q)}  # type: ignore[attr-defined]
        times.append(time.perf_counter() - start)
        answers.append(got)
    return times, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=200, help="queries per hop for rdflib (and the ratio)")
    parser.add_argument("--store-sample", type=int, default=2000, help="queries/hop via OxigraphStore")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (DATA / "kb.txt").is_file():
        raise SystemExit(f"MetaQA data not found at {DATA}")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        nt = Path(tmp) / "metaqa.nt"
        start = time.perf_counter()
        n_lines = write_ntriples([DATA / "kb.txt"], "metaqa", nt)
        print(f"N-Triples written: {n_lines} statements in {time.perf_counter() - start:.2f} s")
        stats = build_store(Path(tmp) / "store", [DATA / "kb.txt"], "metaqa")
        print(f"Oxigraph on-disk build from kb.txt: {stats['triples']} triples in {stats['seconds']:.2f} s")
        nt_stats = build_store(Path(tmp) / "store_nt", [nt], "nt")
        n_nt, sec_nt = nt_stats["triples"], nt_stats["seconds"]
        print(f"Oxigraph on-disk bulk load of that .nt: {n_nt} triples in {sec_nt:.2f} s")
        raw = pyoxigraph.Store.read_only(str(Path(tmp) / "store"))
        wrapped = OxigraphStore(Path(tmp) / "store", timeout=30, cache_size=0)

        import rdflib

        start = time.perf_counter()
        graph = rdflib.Graph()
        graph.parse(str(nt), format="nt")
        print(f"rdflib load: {len(graph)} triples in {time.perf_counter() - start:.2f} s")
        name_check = next(iter(graph.objects(predicate=rdflib.URIRef(NS + NAME_RELATION))))
        assert isinstance(name_check, rdflib.Literal)

        for hop in (1, 2, 3):
            rows = load_questions(hop)
            queries = [q for q, _, _ in rows]
            times, answers = time_raw(raw, queries)
            exact = [(got, gold) for got, (_, gold, ok) in zip(answers, rows, strict=True) if ok]
            right = sum(got == gold for got, gold in exact)
            print(f"\n{hop}-hop: {len(queries)} queries")
            print(f"  oxigraph raw       {ms(times)}  (exact lines reproduced: {right}/{len(exact)})")
            picked = rng.sample(range(len(queries)), min(args.store_sample, len(queries)))
            store_times = []
            for i in picked:
                result = wrapped.execute(queries[i])
                assert result.ok, result.error
                store_times.append(result.elapsed)
            overhead = statistics.median(t - times[i] for t, i in zip(store_times, picked, strict=True))
            print(
                f"  OxigraphStore      {ms(store_times)}  (worker process, {len(picked)} queries; "
                f"median overhead vs raw {overhead * 1e3:.3f} ms)"
            )
            sample = rng.sample(range(len(queries)), min(args.sample, len(queries)))
            ox_times = [times[i] for i in sample]
            rd_times, rd_answers = time_rdflib(graph, [queries[i] for i in sample])
            agree = sum(a == answers[i] for a, i in zip(rd_answers, sample, strict=True))
            ratio = statistics.median(rd_times) / statistics.median(ox_times)
            print(f"  rdflib             {ms(rd_times)}  ({len(sample)} queries, same answers: {agree})")
            print(f"  rdflib/oxigraph p50 ratio: {ratio:.0f}x")
        wrapped.close()


if __name__ == "__main__":
    main()
