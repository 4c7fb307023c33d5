from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbqa_lit.metrics import (
    QuestionScore,
    answer_f1,
    answer_precision,
    answer_recall,
    best_over_parses,
    hit_at_1,
    hit_at_1_any,
    score_question,
)
from kbqa_lit.metrics.functional import SUM_KEYS, mean_scores, sum_scores

answers = st.lists(st.sampled_from(["m.1", "m.2", "m.3", "m.4", "1990", "Paris"]), max_size=6)


def test_f1_precision_recall_basic() -> None:
    pred, gold = ["m.1", "m.2", "m.9"], ["m.1", "m.2", "m.3", "m.4"]
    assert answer_precision(pred, gold) == pytest.approx(2 / 3)
    assert answer_recall(pred, gold) == pytest.approx(1 / 2)
    assert answer_f1(pred, gold) == pytest.approx(2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2))


def test_empty_set_conventions_match_official_webqsp_script() -> None:
    # gold empty & pred empty: everything 1
    assert (answer_precision([], []), answer_recall([], []), answer_f1([], [])) == (1.0, 1.0, 1.0)
    assert hit_at_1([], []) == 1.0 and hit_at_1_any([], []) == 1.0
    # gold empty, pred not: P=0, R=1, F1=0
    assert (answer_precision(["m.1"], []), answer_recall(["m.1"], []), answer_f1(["m.1"], [])) == (0, 1, 0)
    assert hit_at_1(["m.1"], []) == 0.0 and hit_at_1_any(["m.1"], []) == 0.0
    # pred empty, gold not: P=1, R=0, F1=0
    assert (answer_precision([], ["m.1"]), answer_recall([], ["m.1"]), answer_f1([], ["m.1"])) == (1, 0, 0)
    assert hit_at_1([], ["m.1"]) == 0.0 and hit_at_1_any([], ["m.1"]) == 0.0
    assert hit_at_1([], ["m.1"], ordered=True) == 0.0


def test_no_overlap_is_zero() -> None:
    assert answer_f1(["m.1"], ["m.2"]) == 0.0
    assert answer_precision(["m.1"], ["m.2"]) == 0.0
    assert answer_recall(["m.1"], ["m.2"]) == 0.0


def test_duplicates_are_ignored() -> None:
    assert answer_f1(["m.1", "m.1", "m.1"], ["m.1", "m.2"]) == pytest.approx(2 / 3)
    assert answer_precision(["m.1", "m.1", "m.9"], ["m.1"]) == 0.5
    assert hit_at_1(["m.1", "m.1", "m.9"], ["m.1"]) == 0.5  # distinct answers {m.1, m.9}


def test_hit1_ordered_vs_random_pick_vs_any() -> None:
    pred, gold = ["m.9", "m.1", "m.2", "m.8"], {"m.1", "m.2"}
    assert hit_at_1(pred, gold, ordered=True) == 0.0
    assert hit_at_1(["m.1", "m.9"], gold, ordered=True) == 1.0
    assert hit_at_1(pred, gold) == 0.5  # 2 of 4 distinct predicted answers are gold
    assert hit_at_1_any(pred, gold) == 1.0


def test_hit1_ordered_rejects_sets() -> None:
    with pytest.raises(TypeError):
        hit_at_1({"m.1", "m.2"}, ["m.1"], ordered=True)
    assert hit_at_1({"m.1", "m.2"}, ["m.1"]) == 0.5


def test_single_string_is_rejected() -> None:
    with pytest.raises(TypeError):
        answer_f1("m.1", ["m.1"])  # type: ignore[arg-type]


def test_literal_and_entity_answers_are_plain_strings() -> None:
    assert answer_f1(["1990"], ["1990"]) == 1.0
    assert answer_f1(["1990"], ["m.1990"]) == 0.0


def test_best_over_parses_picks_best_f1_first_on_ties() -> None:
    best = best_over_parses(["m.1"], [{"m.1", "m.2"}, {"m.3"}])
    assert best["parse_index"] == 0
    assert best["f1"] == pytest.approx(2 / 3)
    assert (best["precision"], best["recall"], best["hit1"], best["hit1_any"]) == (1.0, 0.5, 1.0, 1.0)
    best = best_over_parses(["m.3"], [{"m.1", "m.2"}, {"m.3"}])
    assert best["parse_index"] == 1 and best["f1"] == 1.0 and best["accuracy"] == 1.0
    # tie: both parses give F1 0.5 -> the first wins
    tie = best_over_parses(["m.1", "m.3"], [{"m.1", "m.2"}, {"m.3", "m.4"}])
    assert tie["parse_index"] == 0
    # the reported hit1 is the best-F1 parse's, not the best hit1 over parses
    mixed = best_over_parses(["m.1", "m.2", "m.9"], [{"m.1", "m.2"}, {"m.9"}])
    assert mixed["parse_index"] == 0 and mixed["hit1"] == pytest.approx(2 / 3)


def test_best_over_parses_without_parses_is_an_empty_gold() -> None:
    assert best_over_parses([], [])["f1"] == 1.0
    assert best_over_parses(["m.1"], [])["f1"] == 0.0


def test_score_question_and_missing() -> None:
    s = score_question(["m.1"], [["m.1", "m.2"]], em=1.0, executable=True)
    assert s.f1 == pytest.approx(2 / 3) and s.accuracy == 0.0 and s.em == 1.0 and s.executable is True
    assert not s.missing
    m = score_question(None, [[]], em=1.0)
    assert m.missing and m.f1 == m.precision == m.recall == m.hit1 == m.hit1_any == 0.0
    assert m.em == 0.0 and m.parse_index is None  # a missing prediction never matches
    assert score_question(None, [[]]).em is None
    assert score_question([], [[]]).accuracy == 1.0  # empty is not missing
    row = QuestionScore.missing_prediction().to_dict()
    assert row["accuracy"] == 0.0 and row["missing"] is True


def test_sum_and_mean_scores() -> None:
    scores = [
        score_question(["m.1"], [["m.1"]], em=1.0, executable=True),
        score_question(["m.1"], [["m.2"]], em=0.0),
        score_question(None, [["m.3"]]),
    ]
    sums = sum_scores(scores)
    assert set(sums) == set(SUM_KEYS) and sums["n"] == 3 and sums["em_count"] == 2
    means = mean_scores(sums)
    assert means["f1"] == pytest.approx(1 / 3) and means["em"] == 0.5 and means["executable"] == pytest.approx(1 / 3)
    empty = mean_scores(sum_scores([]))
    assert "em" not in empty and all(v == 0.0 for v in empty.values())


@given(answers, answers)
def test_properties(pred: list[str], gold: list[str]) -> None:
    p, r, f = answer_precision(pred, gold), answer_recall(pred, gold), answer_f1(pred, gold)
    h, ha = hit_at_1(pred, gold), hit_at_1_any(pred, gold)
    for v in (p, r, f, h, ha):
        assert 0.0 <= v <= 1.0
    assert f <= max(p, r) + 1e-12 and f >= min(p, r) - 1e-12 or f == 0.0
    assert h <= ha
    if pred and gold:
        assert h == pytest.approx(p)  # random-pick Hit@1 is precision on non-empty sets
        assert math.isclose(f, 0.0) or math.isclose(f, 2 * p * r / (p + r))
    if set(pred) == set(gold):
        assert f == 1.0
    assert answer_f1(pred + pred, list(reversed(gold))) == f
    if pred:
        assert hit_at_1(pred, gold, ordered=True) == (1.0 if pred[0] in set(gold) else 0.0)
