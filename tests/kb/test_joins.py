"""entity_joins: the forms that meet two entities at one node (a nameless roster, a named film), on a real store."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.joins import entity_joins
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import open_store
from tests.helpers.roster_kb import build_roster_store

R = "sports.sports_team_roster"
MEET = f"(AND (JOIN {R}.player m.p1) (JOIN {R}.team m.t1))"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with open_store(build_roster_store(tmp_path_factory.mktemp("joins"))) as kb:
        yield kb


def _answers(kb, sexpr: str) -> list[str]:
    return sorted(kb.execute(sexpr_to_sparql(sexpr)).answers)


def test_a_nameless_mediator_and_one_hop_beyond(store) -> None:
    forms = {f.sexpr: f for f in entity_joins(store, "m.p1", "m.t1")}
    assert MEET in forms and forms[MEET].entities == ("m.p1", "m.t1")
    joined = f"(JOIN (R {R}.from) {MEET})"
    assert forms[joined].relations == (f"{R}.player", f"{R}.team", f"{R}.from")
    # Ida's roster at the Herons only: not her 2006 roster at the Owls, not Bo's 2003 one
    assert _answers(store, joined) == ["2001"]
    assert _answers(store, f"(JOIN (R {R}.to) {MEET})") == ["2004"]
    # never back along the relations it met by (that would answer the other players or teams)
    assert not any(s.startswith((f"(JOIN {R}.player (AND", f"(JOIN {R}.team (AND")) for s in forms)
    for sexpr in forms:  # every form answers
        assert _answers(store, sexpr), sexpr
    assert list(forms)[0] == MEET  # meeting forms come before the ones beyond


def test_a_named_meeting_node_is_an_intersection(store) -> None:
    forms = [f.sexpr for f in entity_joins(store, "m.p1", "m.g1")]
    both = "(AND (JOIN film.film.directed_by m.p1) (JOIN film.film.genre m.g1))"
    assert both in forms
    assert _answers(store, both) == ["m.f1"]  # Ida's thriller, not her western, not Bo's thriller


def test_no_shared_node_and_bad_arguments(store) -> None:
    assert entity_joins(store, "m.t2", "m.g2") == []
    assert entity_joins(store, "m.p1", "m.nobody") == []
    assert len(entity_joins(store, "m.p1", "m.t1", limit=1)) == 1
    with pytest.raises(UserInputError, match="two different entities"):
        entity_joins(store, "m.p1", "m.p1")
    with pytest.raises(UserInputError, match="limit"):
        entity_joins(store, "m.p1", "m.t1", limit=0)
