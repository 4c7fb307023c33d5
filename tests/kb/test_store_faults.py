"""Issue 31, scenario 3: the Oxigraph store's worker process is killed (``SIGKILL``) during a query.

The store restarts the worker and sends the query it was running once more: every query gets
exactly one result, in order, equal to a clean run's. What evaluation does (``execute_many``
over a question's beams) and what ``kbqa sexpr run`` does (``execute`` per row) are both covered.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from tests.helpers.store_workers import kill_worker, store_workers

NS = "http://rdf.freebase.com/ns/"
pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker through /proc (Linux)")
N = 8  # triples; SLOW counts N**7 rows (about 0.6 s here), long enough to be killed in the middle
CPU = 0.3  # CPU seconds of a worker when it is killed: opening the store takes about 0.1
SLOW = "SELECT (COUNT(*) AS ?n) WHERE { " + " . ".join(f"?s{i} ?p{i} ?o{i}" for i in range(7)) + " }"


def _fast(i: int) -> str:
    return f"SELECT ?x WHERE {{ <{NS}m.e{i}> <{NS}film.film.directed_by> ?x }}"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults")
    lines = [f"<{NS}m.e{i}> <{NS}film.film.directed_by> <{NS}m.d{i % 3}> .\n" for i in range(N)]
    (root / "kb.nt").write_text("".join(lines))
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


def test_worker_killed_during_a_batch_runs_the_query_again(store_dir: Path) -> None:
    queries = [SLOW] + [_fast(i) for i in range(N)]
    expected = [[str(N**7)]] + [[f"m.d{i % 3}"] for i in range(N)]
    with OxigraphStore(store_dir, cache_size=0, timeout=60) as store:
        first = store_workers(os.getpid())
        finished = threading.Event()

        killer = threading.Thread(target=kill_worker, args=(os.getpid(),), kwargs={"min_cpu": CPU, "give_up": finished})
        killer.start()
        results = store.execute_many(queries)
        finished.set()
        killer.join()
        runner = store._runners.queue[0]
        if runner.restarts == 0:
            pytest.skip("the batch ended before the worker was killed (machine too fast)")
        assert [r.answers for r in results] == expected  # one result per query, none lost or repeated
        assert all(r.ok for r in results)
        assert runner.restarts == 1 and store_workers(os.getpid()) != first


def test_query_whose_retry_also_loses_its_worker_is_a_crash_result(store_dir: Path) -> None:
    with OxigraphStore(store_dir, cache_size=0, timeout=60) as store:
        finished = threading.Event()

        def kill_twice() -> None:
            killed: list[int] = []
            for _ in range(2):  # each time in the middle of SLOW, not while the new worker opens the store
                worker = kill_worker(os.getpid(), min_cpu=CPU, give_up=finished, spare=killed)
                if worker is None:
                    return
                killed.append(worker)

        killer = threading.Thread(target=kill_twice)
        killer.start()
        result = store.execute(SLOW)
        finished.set()
        killer.join()
        if store._runners.queue[0].restarts < 2:
            pytest.skip("the query ended before the second kill (machine too fast)")
        assert not result.ok and "died during a query" in result.error and str(store_dir) in result.error
        assert store.execute(_fast(1)).answers == ["m.d1"]  # the third worker answers
