"""Linking as a stage: inference views carry linked entities only (kbqa_lit.data.linking)."""

from __future__ import annotations

import pytest

from kbqa_lit.data.entity_slots import mask_text, topic_slots
from kbqa_lit.data.linking import (
    IndexLinker,
    check_linking,
    inference_decomposition,
    inference_view,
    linking_recall,
    predicted_entities,
)
from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex

INDEX = EntityIndex(
    {"m.ada": ("Ada Lovelace", 9), "m.ada2": ("Ada Lovelace", 2), "m.lon": ("London", 30), "m.par": ("Paris", 20)}
)


def gold_example(**meta) -> KBQAExample:
    return KBQAExample(
        qid="q",
        question="Was Ada Lovelace born in London?",
        answers=[Answer("m.lon", "London")],
        topic_entities={"m.ada": "Ada Lovelace", "m.secret": "Hidden Gold Name"},
        s_expression="(JOIN (R people.person.place_of_birth) m.ada)",
        meta={"entity_labels": {"m.other": "Gold Only"}, "semantics": "exclude-topic", **meta},
    )


def test_predicted_view_holds_no_gold_entity() -> None:
    view = inference_view(gold_example(), "predicted", IndexLinker(INDEX, top_k=3))
    assert "m.secret" not in view.topic_entities and "entity_labels" not in view.meta
    assert list(view.topic_entities) == ["m.ada", "m.ada2", "m.lon"]  # the index ranking (longer mentions first)
    assert "Gold Only" not in view.entity_labels().values() and "Hidden Gold Name" not in view.entity_labels().values()
    assert view.meta["linking"] == "predicted" and view.meta["semantics"] == "exclude-topic"
    assert view.answers == gold_example().answers and view.s_expression  # scored against, never an input


def test_the_pipeline_s_entities_come_before_the_index() -> None:
    ex = gold_example(refined_entities=[["m.x", 0.9], ["m.y", 0.4]], entity_candidates={"m.x": "Ex", "m.z": "Zed"})
    assert predicted_entities(ex, IndexLinker(INDEX)) == {"m.x": "Ex", "m.y": "m.y"}
    ex = gold_example(entity_candidates={"m.x": "Ex", "m.z": "Zed"})
    assert predicted_entities(ex, IndexLinker(INDEX)) == {"m.x": "Ex", "m.z": "Zed"}
    assert predicted_entities(gold_example(), None) == {}  # nothing predicted, no linker: nothing


def test_dataset_given_and_gold() -> None:
    ex = gold_example()
    given = inference_view(ex, "dataset-given")
    assert given.topic_entities == ex.topic_entities and "entity_labels" not in given.meta
    assert given.meta["linking"] == "dataset-given"
    assert inference_view(ex, "gold") is ex


def test_unknown_modes_are_user_errors() -> None:
    with pytest.raises(UserInputError, match="linking must be one of predicted, dataset-given, gold"):
        check_linking("oracle")
    with pytest.raises(UserInputError, match="top_k"):
        IndexLinker(INDEX, top_k=0)


def test_linking_recall() -> None:
    golds = [gold_example(), gold_example()]
    views = [inference_view(g, "predicted", IndexLinker(INDEX)) for g in golds]
    assert linking_recall(views, golds) == pytest.approx(0.5)  # m.ada found, m.secret not
    assert linking_recall([], []) is None


def test_slots_follow_the_question_not_the_entity_order() -> None:
    ex = KBQAExample(qid="s", question="Is Paris bigger than London?", topic_entities={"m.l": "London", "m.p": "Paris"})
    assert topic_slots(ex) == [("[E0]", "Paris"), ("[E1]", "London")]
    ambiguous = KBQAExample(qid="a", question="Where was Ada Lovelace born?", topic_entities={"a": "Ada Lovelace",
                            "b": "Ada Lovelace", "c": "Nowhere"})  # fmt: skip
    assert topic_slots(ambiguous) == [("[E0]", "Ada Lovelace"), ("[E1]", "Nowhere")]
    assert mask_text(ambiguous.question, topic_slots(ambiguous)) == "Where was [E0] born?"


def test_only_a_predicted_decomposition_reaches_inference() -> None:
    gold_d = "[SUBQ] where was Ada Lovelace born? [ANS] London"  # a dataset's own: it ends with the answer
    ex = gold_example()
    ex.decomposition = gold_d
    assert inference_view(ex, "predicted").decomposition is None
    assert inference_view(ex, "dataset-given").decomposition is None
    assert inference_view(ex, "gold").decomposition == gold_d  # the oracle sees everything
    for status in ("gold", "failed", "none"):  # kbqa decompose --source gold, or nothing predicted
        ex.meta["decomposition_status"] = status
        assert inference_decomposition(ex) is None
    ex.meta["decomposition_status"] = "ok"  # an LLM wrote it: a prediction
    assert inference_view(ex, "predicted").decomposition == gold_d
