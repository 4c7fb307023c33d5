"""Ids that are no IRIs never reach the KB-index queries (issue 31, scenario 8).

Connectivity, relation chains, typed relations, relation paths and 1-hop edges build SPARQL from
relation and entity ids, some of which a model wrote. An id holding ``>``, ``}``, a quote or a
space would end the IRI and add SPARQL (``nope> ?x } UNION { ?s ?p ?o } UNION { ?x <http://x/nope`` made an
absent relation "connected"); such an id is connected to nothing and no query is run for it. A
real Oxigraph store answers, and its miss counter shows whether a query ran.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from kbqa_lit.kb.index.connectivity import Connectivity, RelationChains, TypedRelations
from kbqa_lit.kb.index.entity_index import relation_edges
from kbqa_lit.kb.index.paths import mediator_paths, relation_paths
from kbqa_lit.kb.lf.iri import NS
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from tests.helpers.hostile import hostile_value

INJECTION = "nope> ?x } UNION { ?s ?p ?o } UNION { ?x <http://x/nope"
SPOUSE, PERSON = "people.person.spouse", "people.person"


def _hostile_ids(n: int = 200) -> list[str]:
    rng = random.Random(5)
    ids = [INJECTION, f"{SPOUSE}>", "m.a> ?p ?o . <m.b", 'm.a"', "m a", "m.a}"]
    while len(ids) < n:
        value = hostile_value(rng)
        if any(c in value for c in '<>"{}| \n\\^`'):
            ids.append(rng.choice([SPOUSE, "m.a", ""]) + value)
    return ids


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphStore]:
    root = tmp_path_factory.mktemp("index")
    lines = [
        f"<{NS}m.a> <{NS}{SPOUSE}> <{NS}m.b> .",
        f"<{NS}m.a> <{NS}type.object.type> <{NS}{PERSON}> .",
        f"<{NS}m.b> <{NS}type.object.type> <{NS}{PERSON}> .",
        f'<{NS}m.a> <{NS}type.object.name> "A" .',
    ]
    (root / "kb.nt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    kb = OxigraphStore(root / "store")
    yield kb
    kb.close()


def test_the_checks_answer_for_real_ids(store: OxigraphStore) -> None:
    assert Connectivity(store).connected([(SPOUSE, "m.a"), ("nope.nope.nope", "m.a")]) == [True, False]
    assert TypedRelations(store).holds([(PERSON, SPOUSE, "domain")]) == [True]
    assert [p.relations for p in relation_paths(store, "m.a", max_hops=1)] == [(SPOUSE,)]


def test_ids_that_are_no_iris_are_connected_to_nothing_and_run_no_query(store: OxigraphStore) -> None:
    ids = _hostile_ids()
    before = store.misses
    assert not any(Connectivity(store).connected([(i, "m.a") for i in ids]))
    assert not any(Connectivity(store).connected([(SPOUSE, i) for i in ids]))
    assert not any(RelationChains(store).chained([(i, SPOUSE) for i in ids]))
    assert not any(
        TypedRelations(store).holds([(PERSON, i, "domain") for i in ids] + [(i, SPOUSE, "range") for i in ids])
    )
    for i in ids:
        assert relation_paths(store, i) == [] and mediator_paths(store, i) == []
    assert relation_edges(store, ids) == {i: (frozenset(), frozenset()) for i in ids}
    assert store.misses == before, "a query was built from an id that is no IRI"
    # `(R x )` is read as `x` (base_relation strips), a well-formed query; still nothing found
    assert not any(RelationChains(store).chained([(f"(R {i})", SPOUSE) for i in ids]))
