"""The KB-path search reads a bounded neighbourhood: every query has a LIMIT within the caps, at 10^5 triples.

The unbounded form (one query over the whole two- or three-hop neighbourhood, ``SELECT DISTINCT …
LIMIT 20000`` over the combinations) reads every edge around a hub and around every neighbour of
one; these tests fail on it: each query must be one node's edge query (or a names lookup) with a
LIMIT within :class:`~kbqa_lit.kb.index.neighbourhood.Caps`, and the number of queries is capped.
"""

from __future__ import annotations

import re

import pytest

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.neighbourhood import Caps, edge_query, spread
from kbqa_lit.kb.index.paths import mediator_paths, relation_paths
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from tests.helpers.scale_kb import RecordingStore, build_scale_store

_LIMIT = re.compile(r"LIMIT (\d+)\s*$")
_EDGE = re.compile(r"^SELECT \(CONCAT\(STR\(\?p\).* WHERE \{ (<[^>]+> \?p \?o|\?o \?p <[^>]+>) \} LIMIT \d+$")


@pytest.fixture(scope="module")
def scale(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("scale")
    store, summary = build_scale_store(root)
    rows = list(read_jsonl(root / "kb" / "questions.jsonl"))
    yield store, summary, rows
    store.close()


def _check_bounded(rec: RecordingStore, caps: Caps, max_queries: int) -> None:
    assert 0 < len(rec.queries) <= max_queries
    for q in rec.queries:
        if q.startswith("SELECT ?m WHERE { VALUES ?m"):  # names of at most caps.neighbours/far_nodes nodes
            assert q.count("<http://rdf.freebase.com/ns/m.") <= max(caps.neighbours, caps.far_nodes)
            continue
        assert _EDGE.match(q), q  # one node's edges, nothing joined
        limit = int(_LIMIT.search(q).group(1))
        assert limit <= max(caps.edges, caps.neighbour_edges)
    bound = 2 * caps.edges + 2 * (caps.neighbours + caps.far_nodes) * caps.neighbour_edges + 2 * caps.far_nodes
    assert sum(rec.rows) <= bound


def test_hub_paths_are_read_with_bounded_queries(scale) -> None:
    store, summary, _ = scale
    hub, degree = summary["top_degrees"][0]
    caps = Caps(edges=300, neighbours=20, neighbour_edges=50, far_nodes=20)
    assert degree > caps.edges  # the hub has more edges than are read
    rec = RecordingStore(store)
    paths = relation_paths(rec, hub, caps=caps)
    _check_bounded(rec, caps, max_queries=2 + 2 * caps.neighbours)
    assert any(len(p.hops) == 2 for p in paths)
    for p in paths[:10]:  # every path still exists in the KB
        assert store.execute(sexpr_to_sparql(p.sexpr)).answers, p.sexpr
    rec = RecordingStore(store)
    mediator_paths(rec, hub, caps=caps)
    _check_bounded(rec, caps, max_queries=2 + 2 * (caps.neighbours + caps.far_nodes) + 2)


def test_an_ordinary_entity_next_to_a_hub_finds_its_paths(scale) -> None:
    store, _, rows = scale
    person = next(r for r in rows if r.meta["template"] == "nationality")
    entity = next(iter(person.topic_entities))
    rec = RecordingStore(store)
    sexprs = {p.sexpr for p in relation_paths(rec, entity)}
    _check_bounded(rec, Caps(), max_queries=2 + 2 * Caps().neighbours)
    assert f"(JOIN (R people.person.nationality) {entity})" in sexprs
    lang = f"(JOIN (R location.country.official_language) (JOIN (R people.person.nationality) {entity}))"
    assert lang in sexprs  # the country's own edges are read though it is a hub
    found = set()
    for row in rows[:15]:
        found |= {p.relations for p in mediator_paths(store, next(iter(row.topic_entities)))}
    through_cvt = (
        "education.education.student",
        "education.education.institution",
        "education.university.number_of_students",
    )
    assert through_cvt in found and ("film.actor.film", "film.performance.film", "film.film.country") in found


def test_caps_and_spread() -> None:
    with pytest.raises(UserInputError, match="neighbours"):
        Caps(neighbours=0)
    assert spread({"a": ["x", "y", "z"], "b": ["y", "w"]}, 3) == ["x", "y", "z"]  # round-robin, no repeats
    assert spread({"a": ["x", "y", "z"], "b": ["y", "w"]}, 9) == ["x", "y", "z", "w"]
    assert spread({"a": ["x"]}, 5, skip=["x"]) == []
    assert edge_query("m.0abc", 7).endswith("LIMIT 7") and "?o ?p <" in edge_query("m.0abc", 7, "in")
