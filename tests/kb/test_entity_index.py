"""EntityIndex on a real Oxigraph store of the synthetic world: exact, normalised, fuzzy, alias, popularity."""

from __future__ import annotations

import pytest

from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import StoreError
from kbqa_lit.kb.index.entity_index import EntityIndex, index_cache_path, normalize_surface, relation_edges
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"


def _nt(s: str, p: str, o: str) -> str:
    obj = f"<{NS}{o}>" if o.startswith("m.") else f'"{o}"@en'
    return f"<{NS}{s}> <{NS}{p}> {obj} .\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("ent")
    build_world(root / "world", seed=0, size="small")
    build_store(root / "store", [root / "world" / "kb.nt"], "nt")
    return root


@pytest.fixture(scope="module")
def index(world):
    store = open_store(world / "store")
    yield EntityIndex.for_store(store)
    store.close()


def _first_alias(index):
    return next((e, a) for e, a in index.aliases if index.label(e) not in a and "Federation" not in a)


def test_normalize_surface():
    assert normalize_surface("The Killing  Room!") == "killing room"
    assert normalize_surface("sylvia_brett") == "sylvia brett"
    assert normalize_surface("Zoë  Saldaña") == "zoe saldana"


def test_exact_normalised_and_fuzzy_matches(index):
    eid = next(e for e, (n, _) in index.entities.items() if len(n.split()) == 2 and n.split()[1][0] != n.split()[0][0])
    name = index.label(eid)
    exact = index.search(f"Where was {name} born?")
    assert exact[0].id == eid and exact[0].match == "exact" and exact[0].score == 1.0
    lower = index.search(f"where was {name.lower()} born")
    assert lower[0].id == eid and lower[0].match == "normalized"
    typo = name[:-2] + name[-1]  # one letter dropped
    fuzzy = index.search(f"Where was {typo} born?")
    assert eid in [c.id for c in fuzzy[:3]] and next(c for c in fuzzy if c.id == eid).match == "fuzzy"
    assert index.search("what is it") == []


def test_alias_match(index):
    eid, alias = _first_alias(index)
    found = index.search(f"Tell me about {alias}.")
    hit = next(c for c in found if c.id == eid)
    assert hit.match in ("alias", "exact") and hit.label == index.label(eid)


def test_popularity_breaks_ties_and_longer_mentions_win(tmp_path):
    lines = [
        _nt("m.p1", NAME_RELATION, "Paris"),
        _nt("m.p2", NAME_RELATION, "Paris"),
        _nt("m.p3", NAME_RELATION, "Paris Hilton"),
        _nt("m.p2", ALIAS_RELATION, "City of Light"),
        _nt("m.x", "a.b.c", "m.p2"),
        _nt("m.y", "a.b.c", "m.p2"),
        _nt("m.p2", "a.b.d", "m.x"),
        _nt("m.z", "a.b.c", "m.p1"),
    ]
    (tmp_path / "kb.nt").write_text("".join(lines))
    build_store(tmp_path / "s", [tmp_path / "kb.nt"], "nt")
    with open_store(tmp_path / "s") as store:
        index = EntityIndex.for_store(store)
        assert index.degree("m.p2") == 3 and index.degree("m.p1") == 1
        assert [c.id for c in index.search("where is Paris")] == ["m.p2", "m.p1"]
        assert [c.id for c in index.search("who is Paris Hilton")] == ["m.p3"]  # 'Paris' alone is covered
        assert index.search("the City of Light")[0].id == "m.p2"
        assert [c.id for c in index.search("the [Paris] question")][:2] == ["m.p2", "m.p1"]
        rels = index.relations_of(["m.p2", "m.p3"])
        assert rels == {"m.p2": ["a.b.c", "a.b.d"], "m.p3": []}
        edges = relation_edges(store, ["m.p2", "m.x", "m.p3"], batch_size=2)  # two batches
        assert edges["m.p2"] == ({"a.b.d"}, {"a.b.c"})  # names are not fact relations
        assert edges["m.x"] == ({"a.b.c"}, {"a.b.d"}) and edges["m.p3"] == (set(), set())


def test_index_is_persisted_next_to_the_store(world, index):
    path = index_cache_path(world / "store")
    assert path.is_file()
    again = EntityIndex.load(path)
    assert again.entities == index.entities and again.source == index.source


def test_one_hop_relations(index):
    eid = index.search(f"who is {_first_person(index)}")[0].id
    rels = index.relations_of([eid])[eid]
    assert "people.person.place_of_birth" in rels and "type.object.name" not in rels
    with pytest.raises(StoreError):
        EntityIndex({"m.a": ("A", 0)}).relations_of(["m.a"])


def _first_person(index):
    with_birth = [e for e in index.entities if e in index.relations_of(list(index.entities)[:50])]
    return next(index.label(e) for e in with_birth if "people.person.place_of_birth" in index.relations_of([e])[e])
