"""relation_paths: every one- and two-hop chain from an entity, as executable S-expressions, on a real store."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.paths import relation_paths
from kbqa_lit.kb.lf.chains import Hop
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import open_store
from tests.helpers.music_kb import build_music_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with open_store(build_music_store(tmp_path_factory.mktemp("paths"))) as kb:
        yield kb


def test_one_and_two_hop_paths_in_both_directions(store) -> None:
    paths = {p.sexpr: p for p in relation_paths(store, "m.a1")}
    assert "(JOIN (R music.album.artist) m.a1)" in paths
    chain = paths["(JOIN (R people.person.place_of_birth) (JOIN (R music.album.artist) m.a1))"]
    assert chain.hops == (Hop("music.album.artist", True), Hop("people.person.place_of_birth", True))
    assert chain.relations == ("music.album.artist", "people.person.place_of_birth")
    assert "(JOIN (R people.person.date_of_birth) (JOIN (R music.album.artist) m.a1))" in paths  # a literal end
    # never names; a relation then its reverse reaches the artist's other album, never m.a1 itself
    assert not any("type.object.name" in s for s in paths)
    siblings = "(JOIN music.album.artist (JOIN (R music.album.artist) m.a1))"
    assert siblings in paths and store.execute(sexpr_to_sparql(siblings)).answers == ["m.a2"]
    into = {p.sexpr for p in relation_paths(store, "m.l1")}
    assert "(JOIN location.country.official_language m.l1)" in into  # ?x official_language l1
    assert "(JOIN people.person.nationality (JOIN location.country.official_language m.l1))" in into
    for sexpr in paths:  # executable by construction
        assert store.execute(sexpr_to_sparql(sexpr)).answers, sexpr


def test_one_hop_only_the_order_and_bad_settings(store) -> None:
    one = relation_paths(store, "m.p1", max_hops=1)
    assert [p.sexpr for p in one] == sorted(p.sexpr for p in one)
    assert all(len(p.hops) == 1 for p in one) and len(one) == 4  # artist (in), birth, nationality, date
    both = relation_paths(store, "m.p1")
    assert [p.sexpr for p in both[: len(one)]] == [p.sexpr for p in one]  # one-hop paths come first
    assert relation_paths(store, "m.nobody") == []
    with pytest.raises(UserInputError, match="max_hops"):
        relation_paths(store, "m.p1", max_hops=3)
    with pytest.raises(UserInputError, match="limit"):
        relation_paths(store, "m.p1", limit=0)


def test_three_hop_paths_only_through_a_nameless_node(tmp_path: pytest.TempPathFactory) -> None:
    from kbqa_lit.kb.index.paths import mediator_paths

    with open_store(build_music_store(tmp_path, studies=True)) as kb:
        paths = {p.sexpr: p for p in mediator_paths(kb, "m.p1")}
        attended = "(JOIN (R education.education.institution) (JOIN education.education.student m.p1))"
        study = f"(JOIN (R education.university.city) {attended})"
        assert study in paths and kb.execute(sexpr_to_sparql(study)).answers == ["m.c2"]
        assert paths[study].hops[0] == Hop("education.education.student", False)
        assert all(len(p.hops) == 3 for p in paths.values())
        # from the album the nameless node is the second one: album -> artist -> studies -> university
        from_album = {p.sexpr for p in mediator_paths(kb, "m.a1")}
        artist = "(JOIN (R music.album.artist) m.a1)"
        assert f"(JOIN (R education.education.institution) (JOIN education.education.student {artist}))" in from_album
        # three named hops are not read: album -> artist -> birthplace -> country
        assert not any("containedby" in s and "place_of_birth" in s for s in from_album)
        for sexpr in from_album | set(paths):
            assert kb.execute(sexpr_to_sparql(sexpr)).answers, sexpr
        assert mediator_paths(kb, "m.nobody") == []
        with pytest.raises(UserInputError, match="limit"):
            mediator_paths(kb, "m.p1", limit=0)
