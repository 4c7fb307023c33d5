"""The KB-anchored entity rule: an entity is a join's argument only where the KB has the join's edge at it."""

from __future__ import annotations

from kbqa_lit.decoding.anchor import AnchoredEntity, AnchoredEntityRules
from kbqa_lit.decoding.grammar import BaseRules, SchemaRules, SExprGrammar

SLOTS = tuple(f"[E{k}]" for k in range(8))
NATIONALITY, DIRECTED = "people.person.nationality", "film.film.directed_by"
FILM = AnchoredEntity("Golden Compass", ("[E0]",), outgoing=frozenset({DIRECTED}))
COUNTRY = AnchoredEntity("Canada", (), incoming=frozenset({NATIONALITY}))


def _grammar(*entities: AnchoredEntity) -> SExprGrammar:
    return SExprGrammar([BaseRules(SLOTS), SchemaRules([NATIONALITY, DIRECTED]), AnchoredEntityRules(entities)])


def test_the_join_direction_decides_which_entity_may_follow() -> None:
    g = _grammar(FILM, COUNTRY)
    assert g.accepts("( join ( reverse [ film , film , directed by ] ) [E0] )".split())  # Golden Compass r ?x
    assert not g.accepts("( join [ film , film , directed by ] [E0] )".split())  # ?x r Golden Compass: no edge
    assert g.accepts("( join [ people , person , nationality ] [ Canada ] )".split())
    assert not g.accepts("( join ( reverse [ people , person , nationality ] ) [ Canada ] )".split())
    assert not g.accepts("( join ( reverse [ people , person , nationality ] ) [E0] )".split())


def test_a_relation_the_entities_lack_must_be_nested_and_the_inner_join_is_anchored() -> None:
    g = _grammar(FILM)
    outer = "( join ( reverse [ people , person , nationality ] )".split()
    state = g.start()
    for w in outer:
        state = g.step(state, w)
    opts = g.options(state)
    assert "[E0]" not in opts.words and "(" in opts.words  # the film has no nationality: nest
    nested = (
        "( join ( reverse [ people , person , nationality ] ) ( join ( reverse [ film , film , directed by ] ) [E0] ) )"
    )
    assert g.accepts(nested.split())
    completion = g.closing(state)
    assert completion is not None and g.accepts([*outer, *completion]), completion


def test_entities_outside_a_join_and_rules_without_edges() -> None:
    g = _grammar(FILM, COUNTRY)
    state = g.start()
    for w in "( join [ people , person , nationality ] [".split():
        state = g.step(state, w)
    assert "Canada" in g.options(state).words and "Golden" not in g.options(state).words
    rules = AnchoredEntityRules([FILM, COUNTRY])
    assert rules.vocab("relation", ()) is None  # other roles are left to the earlier rules
    anywhere = rules.allowed(None, False)
    assert anywhere.bare == {"[E0]"} and len(anywhere.brackets[0]) == 2
