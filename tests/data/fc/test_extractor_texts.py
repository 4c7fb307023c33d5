"""FC-KBQA extractor texts: readable names, relation/class items, same-domain negatives, schema sources."""

from __future__ import annotations

import json

import pytest

from kbqa_lit.data.fc.extractor_texts import (
    class_item,
    extractor_text,
    readable_name,
    relation_item,
    same_domain_negatives,
    schema_domain,
)
from kbqa_lit.data.fc.schema_source import load_ontology, load_schema, ontology_classes
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.lf.ontology import Ontology

ONTO = Ontology(
    domains={"people.person.place_of_birth": "people.person", "film.film.release_year": "film.film"},
    ranges={"people.person.place_of_birth": "location.city", "film.film.release_year": "type.year"},
)


def test_readable_names_and_items():
    assert readable_name("people.person.place_of_birth") == "place of birth"
    assert readable_name("film.film_genre") == "film genre" and readable_name("type.datetime") == "datetime"
    assert schema_domain("people.person.nationality") == "people"
    item = relation_item("people.person.place_of_birth", ONTO)
    assert item == "[D] person [N] place of birth [R] city"
    assert extractor_text("Where was  Ada born?", item) == "Where was Ada born? [D] person [N] place of birth [R] city"
    # unknown to the ontology: the id's prefix is the domain class, no range
    assert relation_item("music.album.genre", ONTO) == "[D] album [N] genre [R]"
    assert relation_item("music.album.genre", None) == "[D] album [N] genre [R]"
    assert class_item("film.film_genre") == "[D] film [N] film genre"


POOL = [f"film.film.r{i}" for i in range(6)] + [f"music.album.r{i}" for i in range(10)] + ["people.person.r0"]


def test_negatives_come_from_the_positive_domain():
    negs = same_domain_negatives("music.album.r0", POOL, exclude={"music.album.r1"}, k=5, seed=0, key="q1")
    assert len(negs) == 5 and len(set(negs)) == 5
    assert all(n.startswith("music.") for n in negs)
    assert "music.album.r0" not in negs and "music.album.r1" not in negs


def test_small_domains_fall_back_to_other_domains():
    negs = same_domain_negatives("film.film.r0", POOL, k=8, seed=0, key="q1")
    assert len(negs) == 8 and len(set(negs)) == 8
    assert {n for n in negs[:5]} == {f"film.film.r{i}" for i in range(1, 6)}  # the whole domain first
    assert all(not n.startswith("film.") for n in negs[5:])
    assert len(same_domain_negatives("film.film.r0", POOL, k=48)) == len(POOL) - 1  # a small pool gives fewer


def test_negatives_are_deterministic_given_the_seed():
    draw = [same_domain_negatives("music.album.r0", POOL, k=4, seed=s, key="q1") for s in (0, 0, 1)]
    assert draw[0] == draw[1] and draw[0] != draw[2]
    assert draw[0] != same_domain_negatives("music.album.r0", POOL, k=4, seed=0, key="q2")


def test_schema_sources(tmp_path):
    doc = {
        "relations": [
            {"id": "a.b.c", "domain": "a.b", "range": "type.int"},
            {"id": "a.b.d", "domain": "a.b", "range": "x.y"},
        ],
        "classes": [{"id": "z.w"}],
        "reverse_properties": {"a.b.d": "x.y.e"},
    }
    (tmp_path / "schema.json").write_text(json.dumps(doc))
    onto, listed = load_schema(tmp_path)
    assert onto.domain("a.b.c") == "a.b" and onto.range("a.b.d") == "x.y" and onto.reverse("a.b.d") == "x.y.e"
    assert ontology_classes(onto, listed) == ["a.b", "x.y", "z.w"]  # type.int is a literal type
    assert load_ontology(tmp_path / "schema.json").ranges == onto.ranges
    (tmp_path / "bad.json").write_text('{"relations": [{"id": "a.b.c"}]}')
    with pytest.raises(DataFormatError, match="bad.json"):
        load_schema(tmp_path / "bad.json")
    with pytest.raises(UserInputError):
        load_schema(tmp_path / "nowhere")
