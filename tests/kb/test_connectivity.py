"""kb.connectivity: (relation, entity) edges and two-hop relation chains, batched and cached, on a real store."""

from __future__ import annotations

from kbqa_lit.kb.index.connectivity import Connectivity, RelationChains, TypedRelations, chain_ask_query
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
