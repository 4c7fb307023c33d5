"""kb.connectivity: (relation, entity) edges and two-hop relation chains, batched and cached, on a real store."""

from __future__ import annotations

from kbqa_lit.kb.index.connectivity import (
    ASK_SAMPLE,
    Connectivity,
    RelationChains,
    TypedRelations,
    chain_ask_query,
    typed_ask_query,
)
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"
TRIPLES = [
    ("m.ada", "type.object.type", "people.person"),
    ("m.ada", "people.person.place_of_birth", "m.london"),
    ("m.london", "location.location.containedby", "m.uk"),
    ("m.film", "film.film.directed_by", "m.ada"),
]


def test_chains_and_edges_against_a_real_store(tmp_path):
    nt = tmp_path / "kb.nt"
    nt.write_text("".join(f"<{NS}{s}> <{NS}{p}> <{NS}{o}> .\n" for s, p, o in TRIPLES))
    build_store(tmp_path / "kb", [nt], "nt")
    store = open_store(tmp_path / "kb")
    try:
        chains = RelationChains(store, batch_size=2)
        pairs = [
            ("people.person.place_of_birth", "location.location.containedby"),
            ("location.location.containedby", "people.person.place_of_birth"),
            ("film.film.directed_by", "people.person.place_of_birth"),
            ("film.film.directed_by", "location.location.containedby"),
        ]
        assert chains.chained(pairs) == [True, False, True, False]
        backwards = [
            ("(R film.film.directed_by)", "people.person.place_of_birth"),
            ("(R people.person.place_of_birth)", "film.film.directed_by"),
        ]
        assert chains.chained(backwards) == [False, False]  # film -> ada is forward; a city directs no film
        # only Ada was born in London: back along the same edge is no chain
        assert chains.chained([("people.person.place_of_birth", "(R people.person.place_of_birth)")]) == [False]
        assert chains.cache[pairs[0]] and len(chains.cache) == 7
        assert chains.chained(pairs[:1]) == [True]  # from the cache
        assert store.execute(chain_ask_query(*pairs[0])).answers == ["true"]
        conn = Connectivity(store)
        assert conn.connected([("people.person.place_of_birth", "m.london"), ("film.film.directed_by", "m.uk")]) == [
            True,
            False,
        ]
        typed = TypedRelations(store)
        triples = [
            ("people.person", "people.person.place_of_birth", "domain"),
            ("people.person", "people.person.place_of_birth", "range"),
            ("people.person", "film.film.directed_by", "range"),
        ]
        assert typed.holds(triples) == [True, False, True]
    finally:
        store.close()


def _store(tmp_path, name, rows):
    nt = tmp_path / f"{name}.nt"
    nt.write_text("".join(f"<{NS}{s}> <{NS}{p}> <{NS}{o}> .\n" for s, p, o in rows))
    build_store(tmp_path / name, [nt], "nt")
    return open_store(tmp_path / name, cache_size=0)


def test_ask_checks_follow_a_bounded_sample(tmp_path):
    """By default a chain or typed ASK reads at most ASK_SAMPLE edges / instances (a negative one would otherwise
    read every edge of the relation, a cost that grows with the KB); a connection beyond the sample is missed."""
    birth = [(f"m.p{i}", "people.person.place_of_birth", f"m.c{i}") for i in range(40)]
    cities = [(f"m.c{i}", "type.object.type", "location.location") for i in range(40)]
    probe = _store(tmp_path, "probe", birth + cities)
    try:  # the 5 edges / cities the store reads first; the one city with a country is put outside them
        first_edges = probe.execute(f"SELECT ?y WHERE {{ ?x <{NS}people.person.place_of_birth> ?y }} LIMIT 5").answers
        first_typed = probe.execute(f"SELECT ?x WHERE {{ ?x <{NS}type.object.type> ?c }} LIMIT 5").answers
    finally:
        probe.close()
    city = next(f"m.c{i}" for i in range(40) if f"m.c{i}" not in set(first_edges) | set(first_typed))
    store = _store(tmp_path, "kb", [*birth, *cities, (city, "location.location.containedby", "m.uk")])
    try:
        pair = ("people.person.place_of_birth", "location.location.containedby")
        typed = ("location.location", "location.location.containedby", "domain")
        assert RelationChains(store).sample == TypedRelations(store).sample == ASK_SAMPLE
        assert f"LIMIT {ASK_SAMPLE}" in chain_ask_query(*pair, ASK_SAMPLE)
        assert f"LIMIT {ASK_SAMPLE}" in typed_ask_query(*typed, ASK_SAMPLE)
        assert RelationChains(store).chained([pair]) == [True]  # 40 edges: all inside the default sample
        assert TypedRelations(store).holds([typed]) == [True]
        assert RelationChains(store, sample=None).chained([pair]) == [True]
        assert TypedRelations(store, sample=None).holds([typed]) == [True]
        assert RelationChains(store, sample=5).chained([pair]) == [False]  # the connection is past the sample
        assert TypedRelations(store, sample=5).holds([typed]) == [False]
    finally:
        store.close()


class _Recording:
    def __init__(self, store):
        self.store, self.queries = store, []

    def execute(self, sparql):
        self.queries.append(sparql)
        return self.store.execute(sparql)


def test_entity_pairs_stop_at_the_first_edge(tmp_path):
    """A hub's (relation, entity) pairs cost what any entity's cost: FILTER EXISTS, not a join over its edges."""
    rows = [(f"m.p{i}", "people.person.nationality", "m.hub") for i in range(300)]
    rows += [("m.hub", "location.location.containedby", "m.world")]
    store = _store(tmp_path, "kb", rows)
    try:
        recording = _Recording(store)
        pairs = [
            ("people.person.nationality", "m.hub"),
            ("location.location.containedby", "m.hub"),
            ("film.film.directed_by", "m.hub"),
            ("people.person.nationality", "m.p7"),
        ]
        assert Connectivity(recording).connected(pairs) == [True, True, False, True]
        (query,) = recording.queries
        assert "FILTER EXISTS" in query and "DISTINCT" not in query
        # the query returns one row per connected pair, not one per edge of the hub
        assert len(store.execute(query).answers) == 3
    finally:
        store.close()
