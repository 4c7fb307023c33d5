"""Gold answers given as names (WebQSP's answer-names files) are compared with the predicted ids' names."""

from __future__ import annotations

from pathlib import Path

from kbqa_lit.callbacks.eval_rows import comparable_answers
from kbqa_lit.data.gold import gold_parses
from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.kb.store import open_store
from kbqa_lit.metrics.functional import score_question
from kbqa_lit.pipelines.selection.execution_guided import names_of
from tests.helpers.exec_eval_doubles import build_kb


def test_ids_are_scored_by_name_against_name_only_gold(tmp_path: Path) -> None:
    kb = open_store(build_kb(tmp_path))
    try:
        assert names_of(kb, ["m.d1", "m.us", "m.nothing", "1", "Somebody"]) == {"m.d1": "Dee One", "m.us": "Usland"}
        gold = [Answer("Dee One", "Dee One"), Answer("Dee Two", "Dee Two")]
        by_name = KBQAExample(qid="w", question="who directed Alpha?", answers=gold, meta={"answers_by_name": True})
        predicted = comparable_answers(kb, ["m.d1", "m.d2"], by_name)
        assert predicted == ["Dee One", "Dee Two"]
        assert score_question(predicted, gold_parses(by_name)).f1 == 1.0
        assert score_question(["m.d1", "m.d2"], gold_parses(by_name)).f1 == 0.0  # what was reported before
        by_id = KBQAExample(qid="i", question="?", answers=[Answer("m.d1", "Dee One")])
        assert comparable_answers(kb, ["m.d1"], by_id) == ["m.d1"]  # id gold: ids compared
    finally:
        kb.close()
