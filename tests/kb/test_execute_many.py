"""Batched execution (``execute_many``) on real Oxigraph stores: equal to one by one, timeouts alone, caches first."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.kb.store import BatchKnowledgeBase, ExecutionResult, KnowledgeBase, OxigraphStore
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.store.execute import execute_many
from kbqa_lit.kb.store.loaders import build_store
from tests.kb.test_store import KB_NT, NS, PATHOLOGICAL

DIRECTORS = f"SELECT DISTINCT ?x WHERE {{ ?m <{NS}film.film.directed_by> ?x }} ORDER BY ?x"
FILMS = f"SELECT ?f WHERE {{ ?f <{NS}film.film.directed_by> <{NS}m.d1> }} ORDER BY ?f"
QUERIES = [
    DIRECTORS,
    "SELEC ?x WHERE { ?x ?p ?o }",  # syntax error (cached as definitive)
    f"ASK {{ <{NS}m.a> ?p ?o }}",
    f"INSERT DATA {{ <{NS}m.z> <{NS}r.r.r> <{NS}m.y> }}",  # refused
    FILMS,
    DIRECTORS,  # repeated inside the batch
    f"SELECT ?n WHERE {{ <{NS}m.a> <{NS}film.film.runtime> ?n }}",
    "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",  # unsupported
    f"SELECT ?x WHERE {{ <{NS}m.a> <{NS}film.film.edited_by> ?x }}",  # no answers
]


def outcome(results: list[ExecutionResult]) -> list[tuple[list[str], bool, str | None]]:
    return [(r.answers, r.ok, r.error) for r in results]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kb")
    (root / "kb.nt").write_text(KB_NT, encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


@pytest.fixture(scope="module")
def big_store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 triples: the pathological 5-way cross product never ends (as in test_store.py)."""
    root = tmp_path_factory.mktemp("bigkb")
    lines = [f'<{NS}m.e{i}> <{NS}test.rel.r{i % 7}> "v{i}" .\n' for i in range(2000)]
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_execute_many_equals_execute_one_by_one(store_dir: Path, isolation: str) -> None:
    with (
        OxigraphStore(store_dir, cache_size=0, isolation=isolation) as one,
        OxigraphStore(store_dir, cache_size=0, isolation=isolation) as many,
    ):
        assert isinstance(many, BatchKnowledgeBase)
        expected = outcome([one.execute(q) for q in QUERIES])
        got = many.execute_many(QUERIES)
        assert outcome(got) == expected
        assert got[0].answers == ["m.d1", "m.d2"] and got[2].answers == ["true"] and got[6].answers == ["9"]
        assert "syntax" in (got[1].error or "") and "read-only" in (got[3].error or "")
        assert many.execute_many([]) == []
        assert outcome(many.execute_many([42, DIRECTORS])) == outcome([one.execute(42), one.execute(DIRECTORS)])  # type: ignore[list-item]


def test_cached_results_are_answered_without_the_worker(store_dir: Path, tmp_path: Path) -> None:
    disk = ExecutionCache(tmp_path / "cache.sqlite")
    with OxigraphStore(store_dir, cache_size=100, disk_cache=disk) as s:
        first = s.execute(DIRECTORS)
        assert not first.cached
        results = s.execute_many([DIRECTORS, FILMS, DIRECTORS])
        assert [r.cached for r in results] == [True, False, True]
        assert (s.hits, s.misses) == (2, 2)  # FILMS alone was sent
        s.close()  # no worker process any more: a cached batch must not start one
        again = s.execute_many([FILMS, DIRECTORS])
        assert all(r.cached for r in again) and s._runners.queue[0]._proc is None
        assert outcome(again) == outcome(results[1:])
    with OxigraphStore(store_dir, disk_cache=disk) as other:  # a second process's view: the disk cache
        other.close()
        shared = other.execute_many([DIRECTORS, FILMS])
        assert all(r.cached for r in shared) and other.misses == 0 and other._runners.queue[0]._proc is None


def test_slow_query_times_out_alone_inside_a_batch(big_store_dir: Path) -> None:
    ask = f"ASK {{ <{NS}m.e5> ?p ?o }}"
    values = f"SELECT ?o WHERE {{ <{NS}m.e7> <{NS}test.rel.r0> ?o }}"
    with OxigraphStore(big_store_dir, timeout=0.5, cache_size=10) as s:
        runner = s._runners.queue[0]
        results = s.execute_many([ask, PATHOLOGICAL, values, ask])
        ok = [(["true"], True, None), (["v7"], True, None), (["true"], True, None)]
        assert outcome([results[0], results[2], results[3]]) == ok
        assert not results[1].ok and "timeout" in (results[1].error or "")
        assert runner.restarts == 1  # killed once, and the queries after it ran on the new worker
        assert s.execute(values).answers == ["v7"]  # healthy afterwards
        assert not s.execute_many([PATHOLOGICAL])[0].cached  # timeouts are not cached


def test_helper_falls_back_to_a_loop_and_never_raises(store_dir: Path) -> None:
    class OnlyExecute:
        def __init__(self, kb: OxigraphStore) -> None:
            self.kb, self.calls = kb, 0

        def execute(self, sparql: str) -> ExecutionResult:
            self.calls += 1
            if sparql == "boom":
                raise RuntimeError("plugin failure")
            return self.kb.execute(sparql)

    with OxigraphStore(store_dir, cache_size=0) as s:
        plain = OnlyExecute(s)
        assert isinstance(plain, KnowledgeBase) and not isinstance(plain, BatchKnowledgeBase)
        got = execute_many(plain, [DIRECTORS, "boom", FILMS])
        assert plain.calls == 3 and [r.ok for r in got] == [True, False, True]
        assert "plugin failure" in (got[1].error or "")
        assert outcome(execute_many(s, [DIRECTORS, FILMS])) == outcome([got[0], got[2]])
