"""``pair_rules``: a question's components as pair rules, the paper's decoding settings by default."""

from __future__ import annotations

from kbqa_lit.data.fc.composer_examples import Components
from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.decoding import pair_rules
from kbqa_lit.kb.lf.normalize import schema_to_words

R1, R2, R3, R4 = "film.film.directed_by", "people.person.place_of_birth", "location.location.containedby", "x.y.z"
COMPONENTS = Components(
    pairs=[
        Pair("class-relation", "film.film", R1, 1.0),
        Pair("relation-relation", R1, R2, 1.0),
        Pair("relation-relation", "(R " + R2 + ")", R3, 1.0),
        Pair("relation-relation", R1, R4, 1.0),
        Pair("relation-entity", R3, "m.a", 1.0),
    ],
    entities={"m.a": "Alpha"},
)
W = {r: schema_to_words(r) for r in (R1, R2, R3, R4)}


def test_pair_rules_default_to_the_papers_decoding() -> None:
    rules = pair_rules(COMPONENTS, ["[E0]"])
    assert (rules.mode, rules.partners) == ("bag", "last")
    assert rules.start_relations == {W[R3]}  # chain_heads 0: the relations of P_r-e
    assert rules.allowed_relations([("relation", W[R1]), ("relation", W[R2])]) == {W[R1], W[R3]}


def test_pair_rules_pass_our_settings_through() -> None:
    rules = pair_rules(COMPONENTS, ["[E0]"], "trie", 2, "any")
    assert (rules.mode, rules.partners) == ("trie", "any")
    assert rules.start_relations == {W[R1], W[R2], W[R3]}
    assert W[R4] in rules.allowed_relations([("relation", W[R1]), ("relation", W[R2])])
