"""Composer rows: gold components plus seeded distractors at training, meta["fc"] at inference."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.composer_examples import (
    FC_META,
    Components,
    DistractorPool,
    components_meta,
    composer_row,
    item_words,
    predicted_components,
    training_components,
)
from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.gold_pairs import gold_pairs
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError


def _ex(qid: str, question: str, sexpr: str, topics: dict[str, str], meta: dict | None = None) -> KBQAExample:
    return KBQAExample(
        qid=qid, question=question, answers=[], topic_entities=topics, s_expression=sexpr, meta=meta or {}
    )


TRAIN = [
    _ex("a", "who directed Alpha", "(JOIN (R film.film.directed_by) m.alpha)", {"m.alpha": "Alpha"}),
    _ex("b", "what genre is Beta", "(JOIN (R film.film.genre) m.beta)", {"m.beta": "Beta"}),
    _ex("c", "where was Gamma born", "(JOIN (R people.person.place_of_birth) m.g)", {"m.g": "Gamma"}),
    _ex("d", "which albums of Delta", "(AND music.album (JOIN (R music.artist.album) m.d))", {"m.d": "Delta"}),
    _ex(
        "e",
        "Epsilon's country",
        "(JOIN (R location.location.containedby) (JOIN (R people.person.place_of_birth) m.e))",
        {"m.e": "Epsilon"},
    ),  # fmt: skip
]


def test_training_components_hold_the_gold_and_seeded_distractors() -> None:
    pool = DistractorPool(TRAIN)
    ex = TRAIN[0]
    comp = training_components(ex, pool, num_distractors=2, seed=0)
    assert comp is not None
    gold = {(p.kind, p.first, p.second) for p in gold_pairs(ex.s_expression)}
    got = {(p.kind, p.first, p.second) for p in comp.pairs}
    assert gold <= got and len(got - gold) >= 2
    distractors = [p for p in comp.pairs if (p.kind, p.first, p.second) not in gold]
    # relation–entity distractors pair another relation with the gold entity; the same domain's (film) first
    rel_ent = [p for p in distractors if p.kind == "relation-entity"]
    assert len(rel_ent) == 2 and all(p.second == "m.alpha" for p in rel_ent)
    assert "film.film.genre" in {p.first for p in rel_ent}
    assert comp.skeletons == ["(JOIN (R <rel>) <entity>)", "(JOIN (R <rel>) (JOIN (R <rel>) <entity>))"]
    assert training_components(ex, pool, 2, 0) == comp  # seeded per question
    assert any(training_components(ex, pool, 2, s) != comp for s in range(1, 6))
    assert training_components(_ex("x", "q", "", {}), pool) is None


def test_rows_write_items_as_the_target_does_and_mask_entities() -> None:
    ex = TRAIN[3]
    comp = Components([Pair("class-relation", "music.album", "(R music.artist.album)", 2.0)], {"m.d": "Delta"},
                      ["(AND <class> (JOIN (R <rel>) <entity>))"])  # fmt: skip
    source, target = composer_row(ex, comp)
    assert source == (
        "which albums of [E0]; [CL][ music , album ] [REL]( reverse [ music , artist , album ] ); [ENT][E0]; "
        "[LF](AND <class> (JOIN (R <rel>) <entity>))"
    )
    assert target == "( and [ music , album ] ( join ( reverse [ music , artist , album ] ) [E0] ) )"
    plain, named = composer_row(ex, comp, mask_entities=False, knowledge="none", use_skeletons=False)
    assert plain == "which albums of Delta; [ENT]Delta" and named.endswith("[ Delta ] ) )")
    assert item_words("(R a.b_c.d)") == "( reverse [ a , b c , d ] )"
    unpaired, _ = composer_row(ex, comp, knowledge="components", use_skeletons=False)  # the pairs' items, unpaired
    assert unpaired == "which albums of [E0]; [CL][ music , album ]; [REL][ music , artist , album ]; [ENT][E0]"
    detected = Components(comp.pairs, comp.entities, [], ["film.film.genre"], ["film.film"])
    assert composer_row(ex, detected, knowledge="components")[0].startswith("which albums of [E0]; [CL][ film , film ]")
    with pytest.raises(UserInputError):
        composer_row(ex, comp, knowledge="everything")


def test_predicted_components_round_trip_and_errors() -> None:
    comp = Components(
        [Pair("relation-entity", "film.film.genre", "m.b", 1.5)], {"m.b": "Beta"}, ["(JOIN <rel> <entity>)"]
    )
    ex = _ex("p", "what genre is Beta", "(JOIN (R film.film.genre) m.beta)", {}, {FC_META: components_meta(comp)})
    assert predicted_components(ex) == comp
    assert predicted_components(_ex("q", "q", "", {})) is None
    with pytest.raises(UserInputError):
        predicted_components(_ex("r", "q", "", {}, {FC_META: {"pairs": [["entity-entity", "a", "b", 1.0]]}}))
    with pytest.raises(UserInputError):
        predicted_components(_ex("s", "q", "", {}, {FC_META: {"pairs": [["relation-entity", "a"]]}}))


def test_predicted_components_keep_the_extractor_scores() -> None:
    comp = Components(
        [], {"m.b": "Beta"}, [], ["film.film.genre", "film.film.directed_by"], ["film.film"], [2.5, -1.0], [0.5]
    )
    ex = _ex("p", "what genre is Beta", "", {}, {FC_META: components_meta(comp)})
    assert predicted_components(ex) == comp
    bad = {**components_meta(comp), "relation_scores": [2.5]}
    with pytest.raises(UserInputError, match="scores"):
        predicted_components(_ex("q", "q", "", {}, {FC_META: bad}))
