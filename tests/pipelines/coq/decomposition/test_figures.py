"""The decomposition stage's figures: predicted decompositions against the split's gold file."""

from __future__ import annotations

import pytest

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.coq.decomposition.figures import decomposition_figures

GOLD = [
    KBQAExample(
        qid="a",
        question="Which directors has Amos Garrick worked with?",
        topic_entities={"m.amos": "Amos Garrick"},
        decomposition="[SUBQ] what films has Amos Garrick appeared in? [ANS] X [SUBQ] who directed X? [ANS] Y",
        s_expression="(JOIN (R film.film.directed_by) (JOIN film.film.actor m.amos))",
    ),
    KBQAExample(
        qid="b",
        question="Where was Ada born?",
        topic_entities={"m.ada": "Ada"},
        decomposition="[SUBQ] where was Ada born? [ANS] Z",
        s_expression="(JOIN (R people.person.place_of_birth) m.ada)",
    ),
]


def _predicted(qid: str, text: str | None, relations: list[str], status: str = "ok") -> KBQAExample:
    meta = {"decomposition_status": status, "decomposition_schema": {"entities": [], "relations": relations}}
    return KBQAExample(qid=qid, question="?", decomposition=text, meta=meta)


def test_figures_count_parses_steps_names_and_relation_phrases() -> None:
    predicted = [
        _predicted(
            "a",
            "[SUBQ] what films has amos garrick appeared in? [ANS] #1 [SUBQ] who directed #1? [ANS] #2",
            ["directed by"],
        ),
        _predicted("b", None, [], status="failed"),
    ]
    figures = decomposition_figures(predicted, GOLD)
    assert figures == {
        "questions": 2.0,
        "parsed": 0.5,
        "same_steps": 0.5,
        "names_topic": 0.5,
        "relation_recall": pytest.approx(1 / 3),  # "directed by" of {directed by, actor, place of birth}
    }


def test_a_question_missing_from_the_gold_file_is_refused() -> None:
    with pytest.raises(UserInputError, match="'zzz' is not in the gold file"):
        decomposition_figures([_predicted("zzz", None, [])], GOLD)
    with pytest.raises(UserInputError, match="no predicted"):
        decomposition_figures([], GOLD)
