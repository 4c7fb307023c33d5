"""Execution-guided selection on real Oxigraph stores (and a real slow HTTP endpoint)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pyoxigraph
import pytest

from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.store import EndpointStore, ExecutionResult, OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.selection.execution_guided import (
    ExecutionGuidedSelector,
    KBNameLookup,
    Selection,
    fallback_answers,
    select_answer,
)

NS = "http://rdf.freebase.com/ns/"
LABELS = {"m.a": "Alpha", "m.b": "Beta", "m.d1": "Dee One", "m.d2": "Dee Two", "m.us": "Usland"}
KB_NT = "".join(
    f"<{NS}{s}> <{NS}{p}> {o} .\n"
    for s, p, o in [
        ("m.a", "film.film.directed_by", f"<{NS}m.d1>"),
        ("m.a", "film.film.directed_by", f"<{NS}m.d2>"),
        ("m.b", "film.film.directed_by", f"<{NS}m.d1>"),
        ("m.a", "film.film.country", f"<{NS}m.us>"),
        ("m.d1", "people.person.nationality", f"<{NS}m.us>"),
        *[(e, "type.object.name", f'"{n}"@en') for e, n in LABELS.items()],
        ("m.x1", "type.object.name", '"Twin"@en'),
        ("m.x2", "type.object.name", '"Twin"'),
    ]
)
LABEL_TO_IDS = invert_labels(LABELS)

#: S-expressions by what they do on the KB above.
DIRECTORS_OF_ALPHA = "(JOIN (R film.film.directed_by) m.a)"  # m.d1, m.d2
FILMS_OF_DEE_ONE = "(JOIN film.film.directed_by m.d1)"  # m.a, m.b
EMPTY = "(JOIN (R film.film.edited_by) m.a)"  # executes, no answers
COUNT_ONE = "(COUNT (JOIN film.film.directed_by m.d2))"  # "1"
COUNT_ZERO = "(COUNT (JOIN film.film.edited_by m.d1))"  # "0"
NATIONALITY = "(JOIN (R people.person.nationality) m.d1)"  # m.us


def norm(expr: str) -> str:
    return normalize_sexpr(expr, LABELS)


UNMAPPABLE = "( join ( reverse [ film , film , directed by ] ) [ Gamma Zeta Omega ] )"
BROKEN = "( join ( reverse [ film , film , directed by ] [ Alpha ] "


class CountingKB:
    """A thin wrapper around a real store that counts each query it is asked to execute."""

    def __init__(self, kb: OxigraphStore | EndpointStore) -> None:
        self.kb = kb
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def execute(self, sparql: str) -> ExecutionResult:
        with self._lock:
            self.calls[sparql] += 1
        return self.kb.execute(sparql)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kb")
    (root / "kb.nt").write_text(KB_NT, encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


@pytest.fixture(scope="module")
def store(store_dir: Path) -> Iterator[OxigraphStore]:
    with OxigraphStore(store_dir, timeout=10.0, cache_size=0, workers=2) as s:
        yield s


def pick(beams: list[str], kb: object, **kwargs: object) -> Selection:
    kwargs.setdefault("semantics", "exclude-topic")
    kwargs.setdefault("label_to_ids", LABEL_TO_IDS)
    return select_answer(beams, kb, **kwargs)  # type: ignore[arg-type]


# -- order ----------------------------------------------------------------------------------
def test_first_executable_beam_wins(store: OxigraphStore) -> None:
    beams = [norm(EMPTY), BROKEN, UNMAPPABLE, norm(DIRECTORS_OF_ALPHA), norm(FILMS_OF_DEE_ONE)]
    sel = pick(beams, store, answer_text="Beta")
    assert sel.chosen_beam == 3 and sel.chosen_sexpr == DIRECTORS_OF_ALPHA
    assert sorted(sel.answers) == ["m.d1", "m.d2"] and sel.executable and not sel.fallback
    assert sel.sparql is not None and "film.film.directed_by" in sel.sparql
    assert sel.beams_tried == 4
    assert [e.split(":")[0] for e in sel.errors] == ["beam 0", "beam 1", "beam 2"]
    assert "no answers" in sel.errors[0] and "unmappable" in sel.errors[1] and "unmappable" in sel.errors[2]
    json.dumps(sel.to_dict())


def test_first_beam_executes_and_later_beams_are_not_run(store: OxigraphStore) -> None:
    kb = CountingKB(store)
    sel = pick([norm(NATIONALITY), norm(DIRECTORS_OF_ALPHA), norm(FILMS_OF_DEE_ONE)], kb)
    assert sel.chosen_beam == 0 and sel.answers == ["m.us"] and sel.errors == []
    assert sum(kb.calls.values()) == 1


def test_fuzzy_label_and_raw_id_beams(store: OxigraphStore) -> None:
    misspelt = "( join ( reverse [ film , film , directed by ] ) [ Alpah ] )"
    sel = pick([misspelt], store)
    assert sel.chosen_sexpr == DIRECTORS_OF_ALPHA
    fuzzy_candidate = "( join [ film , film , directed by ] [ Dee Onne ] )"
    sel = pick([fuzzy_candidate], store, label_to_ids={}, candidates=[("m.d1", "Dee One")])
    assert sel.chosen_sexpr == FILMS_OF_DEE_ONE and sorted(sel.answers) == ["m.a", "m.b"]


# -- dedup ----------------------------------------------------------------------------------
@pytest.mark.parametrize("workers", [1, 3])
def test_duplicate_beams_execute_once(store: OxigraphStore, workers: int) -> None:
    kb = CountingKB(store)
    empty = norm(EMPTY)
    variants = [
        empty,
        empty,
        empty.replace("[ Alpha ]", "[Alpha]"),
        empty.replace("( join ( reverse", "(  JOIN (REVERSE"),
    ]
    beams = [
        *variants,
        norm(COUNT_ZERO),
        norm(COUNT_ZERO),
        norm(DIRECTORS_OF_ALPHA),
        norm(DIRECTORS_OF_ALPHA),
    ]
    sel = pick(beams, kb, workers=workers)
    assert sel.chosen_beam == 6
    assert sorted(kb.calls.values()) == [1, 1, 1]  # EMPTY, COUNT_ZERO, DIRECTORS: once each
    assert sum("duplicate of beam 0" in e for e in sel.errors) == 3
    assert "beam 5: duplicate of beam 4" in sel.errors


def test_store_cache_serves_repeated_questions(store_dir: Path) -> None:
    with OxigraphStore(store_dir, timeout=10.0) as s:
        beams = [norm(EMPTY), norm(NATIONALITY)]
        first = pick(beams, s)
        info = s.cache_info()
        assert (info["hits"], info["misses"]) == (0, 2)
        assert pick(beams, s) == first
        assert s.cache_info()["hits"] == 2 and s.cache_info()["misses"] == 2


# -- skipped beams --------------------------------------------------------------------------
def test_unmappable_and_broken_beams_are_skipped_without_executing(store: OxigraphStore) -> None:
    kb = CountingKB(store)
    not_sparql = "( count ( count [ film , film , directed by ] ) )"  # parses? never executed anyway
    sel = pick([UNMAPPABLE, BROKEN, "", "hello world", not_sparql], kb, answer_text=None)
    assert sel == Selection([], None, None, None, False, False, 5, sel.errors)
    assert len(sel.errors) == 5 and sum(kb.calls.values()) == 0


def test_unknown_semantics_is_a_user_error(store: OxigraphStore) -> None:
    with pytest.raises(ValueError, match="semantics"):
        pick([norm(NATIONALITY)], store, semantics="nonsense")


def test_a_raising_store_marks_the_beam_non_executable(store: OxigraphStore) -> None:
    class Flaky(CountingKB):
        def execute(self, sparql: str) -> ExecutionResult:
            if "edited_by" in sparql:
                raise RuntimeError("boom")
            return super().execute(sparql)

    sel = pick([norm(EMPTY), norm(NATIONALITY)], Flaky(store))
    assert sel.chosen_beam == 1 and "RuntimeError: boom" in sel.errors[0]


# -- COUNT 0 ---------------------------------------------------------------------------------
def test_count_zero_is_not_executable_by_default(store: OxigraphStore) -> None:
    sel = pick([norm(COUNT_ZERO), norm(COUNT_ONE)], store)
    assert sel.chosen_beam == 1 and sel.answers == ["1"]
    assert sel.errors == ["beam 0: COUNT is 0"]


def test_count_zero_is_executable_when_asked(store: OxigraphStore) -> None:
    sel = pick([norm(COUNT_ZERO), norm(COUNT_ONE)], store, count_zero_is_executable=True)
    assert sel.chosen_beam == 0 and sel.answers == ["0"] and sel.executable


def test_only_count_zero_falls_back(store: OxigraphStore) -> None:
    sel = pick([norm(COUNT_ZERO)], store, answer_text="0")
    assert sel.fallback and not sel.executable and sel.answers == ["0"]


# -- fallback -------------------------------------------------------------------------------
def test_fallback_maps_answer_text_by_exact_name(store: OxigraphStore) -> None:
    names = KBNameLookup(store)
    sel = pick([norm(EMPTY), UNMAPPABLE], store, answer_text="Dee One | Nobody Known | dee two", name_to_ids=names)
    assert sel.fallback and not sel.executable and sel.chosen_beam is None and sel.sparql is None
    assert sel.answers == ["m.d1", "Nobody Known", "dee two"]  # exact names only: case matters
    assert sel.beams_tried == 2 and len(sel.errors) == 2
    assert names["Twin"] == ["m.x1", "m.x2"] or sorted(names["Twin"]) == ["m.x1", "m.x2"]
    assert "Dee One" in names and "Nobody" not in names and len(names) == 2


def test_fallback_without_name_map_keeps_text_and_without_text_is_empty(store: OxigraphStore) -> None:
    sel = pick([norm(EMPTY)], store, answer_text="Dee One |  | Dee One")
    assert sel.fallback and sel.answers == ["Dee One"]
    sel = pick([norm(EMPTY)], store)
    assert not sel.fallback and sel.answers == []
    assert fallback_answers("a | b", {"a": ["m.1", "m.2"]}) == ["m.1", "m.2", "b"]
    assert pick([], store, answer_text="x").answers == ["x"]


def test_name_lookup_escapes_quotes(store: OxigraphStore) -> None:
    names = KBNameLookup(store)
    assert names.get('Dee "One"') is None and names.get("x\\") is None


def test_max_beams(store: OxigraphStore) -> None:
    beams = [norm(EMPTY), norm(NATIONALITY)]
    sel = pick(beams, store, max_beams=1, answer_text="Usland", name_to_ids=KBNameLookup(store))
    assert sel.fallback and sel.answers == ["m.us"] and sel.beams_tried == 1


# -- timeouts -------------------------------------------------------------------------------
def _hops(n: int) -> str:
    expr = "m.n0"
    for _ in range(n):
        expr = f"(JOIN (R test.graph.link) {expr})"
    return expr


@pytest.fixture(scope="module")
def dense_store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 nodes x 30 links: a 6-hop simple-path chain has 7e8 paths (minutes of work)."""
    root = tmp_path_factory.mktemp("dense")
    rng = random.Random(0)
    lines = [
        f"<{NS}m.n{i}> <{NS}test.graph.link> <{NS}m.n{j}> .\n" for i in range(300) for j in rng.sample(range(300), 30)
    ]
    (root / "kb.nt").write_text("".join(lines) + f'<{NS}m.n0> <{NS}type.object.name> "Node Zero"@en .\n')
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


@pytest.mark.parametrize("workers", [1, 2])
def test_pathological_beam_times_out_and_the_next_beam_wins(dense_store_dir: Path, workers: int) -> None:
    labels = {"Node Zero": ["m.n0"]}
    beams = [
        normalize_sexpr(_hops(6), {"m.n0": "Node Zero"}),
        normalize_sexpr(_hops(1), {"m.n0": "Node Zero"}),
    ]
    with OxigraphStore(dense_store_dir, timeout=0.5, workers=workers) as s:
        # the first beam alone would run for minutes; wait figures: benchmarks/bench_timeouts.py
        sel = pick(beams, s, semantics="simple-path", label_to_ids=labels, workers=workers)
    assert sel.chosen_beam == 1 and len(sel.answers) == 30
    assert sel.errors and "timeout" in sel.errors[0]


class _SlowHandler(BaseHTTPRequestHandler):
    """A SPARQL endpoint over a real in-memory Oxigraph store that sleeps on edited_by queries."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8")
        query = parse_qs(body).get("query", [""])[0]
        if "edited_by" in query:
            time.sleep(3.0)
        data = self.server.store.query(query).serialize(format=pyoxigraph.QueryResultsFormat.JSON)  # type: ignore[attr-defined]
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass


@pytest.fixture
def slow_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    server.daemon_threads = True
    server.store = pyoxigraph.Store()  # type: ignore[attr-defined]
    server.store.load(KB_NT.encode(), pyoxigraph.RdfFormat.N_TRIPLES)  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/sparql"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("workers", [1, 4])
def test_slow_endpoint_beam_times_out_without_stalling(slow_endpoint: str, workers: int) -> None:
    kb = EndpointStore(slow_endpoint, timeout=0.4, retries=0)
    sel = pick([norm(EMPTY), norm(COUNT_ZERO), norm(NATIONALITY)], kb, workers=workers)
    assert sel.chosen_beam == 2 and sel.answers == ["m.us"]
    assert all("timeout" in e for e in sel.errors) and len(sel.errors) == 2


# -- parallel == sequential -----------------------------------------------------------------
def test_parallel_selection_equals_sequential_on_random_beam_lists(store_dir: Path) -> None:
    pool = [
        norm(DIRECTORS_OF_ALPHA),
        norm(FILMS_OF_DEE_ONE),
        norm(NATIONALITY),
        norm(COUNT_ONE),
        norm(COUNT_ZERO),
        norm(EMPTY),
        norm(EMPTY).replace("[ Alpha ]", "[Alpha]"),
        "( join ( reverse [ film , film , country ] ) [ Beta ] )",  # empty
        "( join [ film , film , country ] [ Usland ] )",
        UNMAPPABLE,
        BROKEN,
        "( join ( reverse [ film , film , directed by ] ) [ Alpah ] )",  # fuzzy → DIRECTORS
        "( and [ film , film ] ( join [ film , film , directed by ] [ Dee One ] ) )",  # no types: empty
    ]
    rng = random.Random(7)
    lists = [[rng.choice(pool) for _ in range(rng.randint(0, 12))] for _ in range(300)]
    texts = [rng.choice([None, "Dee One", "Nobody | Usland"]) for _ in lists]
    results = {}
    for workers in (1, 4):
        with OxigraphStore(store_dir, timeout=10.0, workers=workers, cache_size=0) as s:
            names = KBNameLookup(s)
            with ExecutionGuidedSelector(s, workers=workers) as selector:
                results[workers] = [
                    selector.select(
                        b,
                        semantics="exclude-topic",
                        label_to_ids=LABEL_TO_IDS,
                        answer_text=t,
                        name_to_ids=names,
                    )
                    for b, t in zip(lists, texts, strict=True)
                ]
    assert results[1] == results[4]
    chosen = Counter(r.chosen_beam is not None for r in results[1])
    assert chosen[True] > 50 and chosen[False] > 20  # both outcomes are exercised
