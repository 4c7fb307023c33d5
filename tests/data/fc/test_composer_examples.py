"""Composer rows: the paper's format; training on meta["fc"] or gold plus distractors; meta["fc"] at inference."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.composer_examples import (
    FC_META,
    Components,
    DistractorPool,
    components_meta,
    composer_row,
    detected_training_components,
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


#: One question as ``kbqa fc detect`` writes it: pairs best first per kind, entities in linking order.
DETECTION = Components(
    [
        Pair("class-relation", "film.film", "film.film.directed_by", 3.0),
        Pair("class-relation", "film.film", "(R film.director.film)", 1.0),
        Pair("relation-relation", "film.film.directed_by", "people.person.place_of_birth", 2.5),
        Pair("relation-entity", "film.film.directed_by", "m.alpha", 2.0),
    ],
    {"m.alpha": "Alpha", "m.paris": "Paris"},
    ["(JOIN (R <rel>) <entity>)", "(JOIN (R <rel>) (JOIN (R <rel>) <entity>))"],
)


def _detected(qid: str, question: str, sexpr: str, topics: dict[str, str]) -> KBQAExample:
    return _ex(qid, question, sexpr, topics, {FC_META: components_meta(DETECTION)})


def test_a_detection_reads_as_the_paper_writes_it() -> None:
    """§4.5 ``query; [CL]c[REL]r; [REL]r1 [REL]r2; [ENT]e; [LF]l1; [LF]l2``, the default; ``entity-pairs`` is ours."""
    ex = _detected("a", "who directed Alpha in Paris", "(JOIN (R film.film.directed_by) m.alpha)", {"m.alpha": "Alpha"})
    found = predicted_components(ex)
    assert found is not None
    source, target = composer_row(ex, found)
    assert source == (
        "who directed [E0] in [E1]; [CL][ film , film ] [REL][ film , film , directed by ]; "
        "[CL][ film , film ] [REL]( reverse [ film , director , film ] ); "
        "[REL][ film , film , directed by ] [REL][ people , person , place of birth ]; "
        "[ENT][E0]; [ENT][E1]; [LF](JOIN (R <rel>) <entity>); [LF](JOIN (R <rel>) (JOIN (R <rel>) <entity>))"
    )
    assert target == "( join ( reverse [ film , film , directed by ] ) [E0] )"
    assert composer_row(ex, found, input_format="paper") == (source, target)
    ours, _ = composer_row(ex, found, input_format="entity-pairs")
    assert ours == (
        "who directed [E0] in [E1]; [CL][ film , film ] [REL][ film , film , directed by ]; "
        "[CL][ film , film ] [REL]( reverse [ film , director , film ] ); "
        "[REL][ film , film , directed by ] [REL][ people , person , place of birth ]; "
        "[REL][ film , film , directed by ] [ENT][E0]; [ENT][E1]; "
        "[LF](JOIN (R <rel>) <entity>); [LF](JOIN (R <rel>) (JOIN (R <rel>) <entity>))"
    )
    plain, _ = composer_row(ex, found, mask_entities=False, use_skeletons=False, max_tokens=27)
    assert plain == (  # the cut: class-relation pairs first (2 of them), then the 1-1 tie, class-relation first
        "who directed Alpha in Paris; [REL][ film , film , directed by ] [REL][ people , person , place of birth ]; "
        "[ENT]Alpha; [ENT]Paris"
    )
    with pytest.raises(UserInputError, match="input_format"):
        composer_row(ex, found, input_format="pairs")


def test_detected_training_components_are_what_inference_reads() -> None:
    rows = [
        _detected("a", "who directed Alpha", "(JOIN (R film.film.directed_by) m.alpha)", {"m.alpha": "Alpha"}),
        _ex("b", "what genre is Beta", "(JOIN (R film.film.genre) m.beta)", {"m.beta": "Beta"},
            {FC_META: components_meta(Components([], {"m.beta": "Beta"}, ["(JOIN <rel> <entity>)"]))}),
    ]  # fmt: skip
    got = detected_training_components(rows, "train.jsonl")
    assert got == [predicted_components(ex) for ex in rows] and got[0].pairs == DETECTION.pairs  # same order and size
    with pytest.raises(UserInputError, match=r"plain/train\.jsonl: training question 'c'.*kbqa fc detect"):
        detected_training_components([*rows, _ex("c", "q", "", {})], "plain/train.jsonl")


def test_target_slots_are_the_inputs() -> None:
    """With detected entities the input numbers by, the target names the entity by the same slot."""
    ex = _ex("a", "in Paris who directed Alpha", "(JOIN (R film.film.directed_by) m.alpha)", {"m.alpha": "Alpha"})
    source, target = composer_row(ex, DETECTION, use_skeletons=False)
    assert source.startswith("in [E0] who directed [E1];") and "[ENT][E1]; [ENT][E0]" in source
    assert target == "( join ( reverse [ film , film , directed by ] ) [E1] )"  # Alpha is [E1] in the input
    missed = Components([], {"m.paris": "Paris"}, [])
    assert composer_row(ex, missed)[1] == "( join ( reverse [ film , film , directed by ] ) [ Alpha ] )"
