"""FC-KBQA KB-connected pairs against a real tiny store: ontology type match, KB confirmation, order."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.composer_inputs import composer_input
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.ontology import Ontology
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from kbqa_lit.pipelines.fc.pruning import EntityMention, RelationAwarePruner, ScoredEntity
from tests.helpers.triples_store import build_typed_store

NS = "http://rdf.freebase.com/ns/"
POB, CONT, SPOUSE = "people.person.place_of_birth", "location.location.containedby", "people.person.spouse"
NAT, DIRECTED, YEAR = "people.person.nationality", "film.film.directed_by", "film.film.release_year"
ROLES = {
    POB: ("people.person", "location.city"),
    CONT: ("location.location", "location.location"),
    SPOUSE: ("people.person", "people.person"),
    NAT: ("people.person", "location.country"),
    DIRECTED: ("film.film", "film.director"),
    YEAR: ("film.film", "type.year"),
}
ONTO = Ontology(
    domains={r: d for r, (d, _) in ROLES.items()},
    ranges={r: g for r, (_, g) in ROLES.items()},
    parents={"location.city": ("location.location",), "location.country": ("location.location",)},
)
FACTS = [
    ("m.ada", POB, "m.london"),
    ("m.london", CONT, "m.uk"),
    ("m.bob", SPOUSE, "m.ada"),
    ("m.ada", NAT, "m.uk"),
    ("m.film", DIRECTED, "m.ada"),
    ("m.carl", POB, "m.london"),
]
TYPES = {
    "m.ada": ["people.person", "film.director"],
    "m.bob": ["people.person"],
    "m.carl": ["people.person"],
    "m.london": ["location.city", "location.location"],
    "m.uk": ["location.country", "location.location"],
    "m.film": ["film.film"],
}
RELATIONS = [(POB, 3.0), (CONT, 2.0), (SPOUSE, 1.5), (NAT, 1.0), (DIRECTED, 0.5), (YEAR, 0.2)]
CLASSES = [("film.film", 1.0), ("location.city", 0.5)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = open_store(build_typed_store(tmp_path_factory.mktemp("fc_pairs"), FACTS, TYPES))
    yield s
    s.close()


def _rr(builder):
    return [(p.first, p.second, p.score) for p in builder.relation_relation(RELATIONS)]


def test_relation_relation_pairs_are_typed_by_the_ontology_and_confirmed_on_the_kb(store):
    def forward(**kw):
        return _rr(PairBuilder(ONTO, reverse_hops=False, **kw))

    # ontology alone: containedby∘containedby and nationality∘containedby type-match
    assert (CONT, CONT, 4.0) in forward() and (NAT, CONT, 3.0) in forward()
    # the KB confirms only what executes, best (score sum) first
    assert forward(store=store) == [(POB, CONT, 5.0), (SPOUSE, POB, 4.5), (SPOUSE, NAT, 2.5)]
    # exact: a city is not location.location
    assert forward(store=store, type_match="exact") == [(SPOUSE, POB, 4.5), (SPOUSE, NAT, 2.5)]
    # kb: a director is a person by the KB's types, not by the ontology
    assert forward(store=store, type_match="kb") == [
        (POB, CONT, 5.0),
        (SPOUSE, POB, 4.5),
        (DIRECTED, POB, 3.5),
        (SPOUSE, NAT, 2.5),
        (DIRECTED, NAT, 1.5),
    ]
    # reverse hops (default): relations sharing a subject or an object join too
    builder = PairBuilder(ONTO, store)
    both = _rr(builder)
    assert [x[2] for x in both] == sorted((x[2] for x in both), reverse=True)
    assert set(forward(store=store)) < set(both)
    assert {
        (f"(R {POB})", NAT, 4.0),  # the nationality of the people born in a city (shared subject)
        (CONT, f"(R {NAT})", 3.0),  # the people of the country containing a place (shared object)
        (POB, f"(R {POB})", 6.0),  # the people born in the same city
    } < set(both)
    assert (SPOUSE, f"(R {SPOUSE})", 3.0) not in both  # nobody shares a spouse: back along one edge is no chain
    assert (POB, CONT) in builder.chains.cache  # cached for the next question
    assert not any(a.startswith("(R") and b.startswith("(R") for a, b, _ in _rr(PairBuilder(ONTO)))
    with pytest.raises(UserInputError):
        PairBuilder(ONTO, None, type_match="kb")


def test_class_relation_pairs_with_the_reverse_relation_for_a_range(store):
    def cr(builder):
        return [(p.first, p.second, p.score) for p in builder.class_relation(CLASSES, RELATIONS)]

    assert cr(PairBuilder(ONTO, store)) == [
        ("location.city", f"(R {POB})", 3.5),
        ("location.city", CONT, 2.5),
        ("location.city", f"(R {CONT})", 2.5),
        ("film.film", DIRECTED, 1.5),
        ("film.film", YEAR, 1.2),
    ]
    assert cr(PairBuilder(ONTO, store, type_match="exact")) == [
        ("location.city", f"(R {POB})", 3.5),
        ("film.film", DIRECTED, 1.5),
        ("film.film", YEAR, 1.2),
    ]
    # kb: typed instances on that side (no film has a release year in this KB, no city is contained)
    assert cr(PairBuilder(ONTO, store, type_match="kb")) == [
        ("location.city", f"(R {POB})", 3.5),
        ("location.city", CONT, 2.5),
        ("film.film", DIRECTED, 1.5),
    ]


def test_relation_entity_pairs_come_from_the_pruning_edges_and_need_an_entity_slot(store):
    mentions = [EntityMention("Ada", (ScoredEntity("m.ada", 0.9, "Ada", 3),))]
    linked = RelationAwarePruner(store).pick(mentions, [r for r, _ in RELATIONS])
    builder = PairBuilder(ONTO, store)
    got = builder.build(CLASSES, RELATIONS, linked, skeletons=["(JOIN (R <rel>) <entity>)"])
    assert [(p.first, p.second, p.score) for p in got.relation_entity] == [
        (POB, "m.ada", pytest.approx(3.9)),
        (SPOUSE, "m.ada", pytest.approx(2.4)),
        (NAT, "m.ada", pytest.approx(1.9)),
        (DIRECTED, "m.ada", pytest.approx(1.4)),
    ]
    assert builder.build(CLASSES, RELATIONS, linked, skeletons=["(COUNT <class>)"]).relation_entity == []
    assert len(got.all) == len(got.class_relation) + len(got.relation_relation) + 4

    skeletons = ["(JOIN (R <rel>) <entity>)"]
    text = composer_input(
        "Where was Ada born?", got.all, ["m.ada"], skeletons, {"m.ada": "Ada"}, input_format="entity-pairs"
    )
    assert text.startswith(f"Where was Ada born?; [CL]location.city [REL](R {POB}); ")
    assert f"; [REL]{POB} [REL]{CONT}; " in text and f"; [REL]{POB} [ENT]Ada; " in text
    assert text.endswith("; [LF](JOIN (R <rel>) <entity>)") and "; [ENT]Ada;" not in text
