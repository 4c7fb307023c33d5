"""Chain execution on a tiny real Oxigraph store: semantics, directions, the cap, carried paths, literals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.chains import Hop
from kbqa_lit.kb.lf.terms import fb_iri, literal_nt
from kbqa_lit.kb.store import EndpointStore, OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor

XSD = "http://www.w3.org/2001/XMLSchema#"
DIRECTED = "film.film.directed_by"
YEAR = "film.film.release_year"
TAGLINE = "film.film.tagline"
TRIPLES = [
    ("m.a", DIRECTED, "m.d"),
    ("m.b", DIRECTED, "m.d"),
    ("m.c", DIRECTED, "m.e"),
    ("m.a", YEAR, literal_nt("1999", datatype=XSD + "gYear")),
    ("m.b", YEAR, literal_nt("1999", datatype=XSD + "gYear")),
    ("m.a", TAGLINE, literal_nt("Free your mind", lang="en")),
]
FWD, BACK = Hop(DIRECTED, True), Hop(DIRECTED, False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphStore]:
    root: Path = tmp_path_factory.mktemp("keqing_kb")
    lines = []
    for s, r, o in TRIPLES:
        obj = o if o.startswith('"') else fb_iri(o)
        lines.append(f"{fb_iri(s)} {fb_iri(r)} {obj} .\n")
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    kb = OxigraphStore(root / "store")
    yield kb
    kb.close()


def test_simple_path_drops_repeated_nodes_and_plain_keeps_them(store: OxigraphStore) -> None:
    simple = ChainExecutor(store, "simple-path")
    plain = ChainExecutor(store, "plain")
    chain = (FWD, BACK)  # movie -> director -> movies
    got = simple.execute(simple.seed_paths(["m.a"]), chain)
    assert got.answers == ["m.b"]
    assert got.paths == [("m.a", "m.d", "m.b")]
    assert got.triples == [("m.a", DIRECTED, "m.d"), ("m.b", DIRECTED, "m.d")]
    assert got.cut == 0 and got.errors == []
    both = plain.execute(plain.seed_paths(["m.a"]), chain)
    assert both.answers == ["m.a", "m.b"]
    assert both.paths == [("m.a", "m.d", "m.a"), ("m.a", "m.d", "m.b")]


def test_forward_and_backward_hops(store: OxigraphStore) -> None:
    ex = ChainExecutor(store)
    forward = ex.execute(ex.seed_paths(["m.a", "m.c", "m.a"]), (FWD,))
    assert forward.paths == [("m.a", "m.d"), ("m.c", "m.e")]
    assert forward.answers == ["m.d", "m.e"]
    backward = ex.execute(ex.seed_paths(["m.d"]), (BACK,))
    assert backward.answers == ["m.a", "m.b"]
    assert backward.triples == [("m.a", DIRECTED, "m.d"), ("m.b", DIRECTED, "m.d")]
    nothing = ex.execute(ex.seed_paths(["m.e"]), (FWD,))
    assert nothing.paths == [] and nothing.answers == [] and nothing.triples == []


def test_small_batches_give_the_same_result(store: OxigraphStore) -> None:
    starts = [("m.a",), ("m.b",), ("m.c",)]
    big = ChainExecutor(store, "plain").execute(starts, (FWD, BACK))
    small = ChainExecutor(store, "plain", batch_size=1).execute(starts, (FWD, BACK))
    assert small.paths == big.paths and small.answers == big.answers == ["m.a", "m.b", "m.c"]
    assert len(big.paths) == 5


def test_the_cap_keeps_the_first_paths_and_counts_the_cut(store: OxigraphStore) -> None:
    ex = ChainExecutor(store, "plain", max_paths=3)
    got = ex.execute([("m.a",), ("m.b",), ("m.c",)], (FWD, BACK))  # 5 paths after the second hop
    assert got.cut == 2
    assert got.paths == [("m.a", "m.d", "m.a"), ("m.a", "m.d", "m.b"), ("m.b", "m.d", "m.a")]
    assert got.answers == ["m.a", "m.b"]
    one = ChainExecutor(store, "plain", max_paths=1).execute([("m.d",)], (BACK, FWD))  # cut at both hops
    assert one.paths == [("m.d", "m.a", "m.d")] and one.cut == 1


def test_dependency_paths_are_carried_in_as_starts(store: OxigraphStore) -> None:
    ex = ChainExecutor(store, "simple-path")
    first = ex.execute(ex.seed_paths(["m.a"]), (FWD,))
    second = ex.execute(first.paths, (BACK,))
    assert second.paths == [("m.a", "m.d", "m.b")]  # m.a is on the carried path: dropped
    assert second.answers == ["m.b"]
    assert second.triples == [("m.b", DIRECTED, "m.d")]  # only this chain's hops


def test_literal_answers_and_hops_back_from_them(store: OxigraphStore) -> None:
    ex = ChainExecutor(store, "plain")
    year = ex.execute(ex.seed_paths(["m.a"]), (Hop(YEAR, True),))
    assert year.answers == ["1999"] and year.triples == [("m.a", YEAR, "1999")]
    same_year = ex.execute(year.paths, (Hop(YEAR, False),))
    assert same_year.answers == ["m.a", "m.b"]
    tagline = ex.execute(ex.seed_paths(["m.a"]), (Hop(TAGLINE, True), Hop(TAGLINE, False)))
    assert tagline.paths == [("m.a", "Free your mind", "m.a")]


def test_bad_input_raises_user_input_errors(store: OxigraphStore) -> None:
    with pytest.raises(UserInputError, match="semantics"):
        ChainExecutor(store, "distinct-nodes")
    with pytest.raises(UserInputError):
        ChainExecutor(store, max_paths=0)
    ex = ChainExecutor(store)
    with pytest.raises(UserInputError, match="empty chain"):
        ex.execute([("m.a",)], ())
    with pytest.raises(UserInputError, match="relation"):
        ex.execute([("m.a",)], (Hop("directed by> }", True),))
    with pytest.raises(UserInputError, match="seed"):
        ex.seed_paths(["m.a", "not an id"])


def test_failed_queries_are_recorded_not_raised() -> None:
    dead = EndpointStore("http://127.0.0.1:9/sparql", timeout=2.0, retries=0)  # the discard port: refused
    ex = ChainExecutor(dead, batch_size=1)
    got = ex.execute([("m.a",), ("m.b",)], (FWD, BACK))
    assert got.paths == [] and got.answers == [] and got.cut == 0
    assert len(got.errors) == 2 and all(e.startswith(f"{FWD}: ") for e in got.errors)
