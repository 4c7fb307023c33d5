"""The encoder reasoner, the CPU stand-in for Keqing's LLM reasoner: it keeps the candidates whose
triples' relations match the (sub-)question, per step, over the top-K templates' pooled chains.

The hand-written KB and template bank of :mod:`tests.pipelines.keqing.test_stepwise` (Ann Lee directed
Red Sky and Blue Sea; Cal Moss and Dee Park wrote them; Eve Stone produced Blue Sea), the real MiniLM.
"""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.keqing.config import ReasonerConfig
from kbqa_lit.pipelines.keqing.encoder_reasoner import EncoderReasoner
from tests.pipelines.keqing.test_stepwise import DIRECTED, EXAMPLE, PRODUCED, WROTE, keqing, world  # noqa: F401

POOLED = [("m.b", WROTE, "m.z"), ("m.b", PRODUCED, "m.p")]  # Blue Sea's writer and producer, one step


@pytest.fixture(scope="module")
def reasoner() -> EncoderReasoner:
    return EncoderReasoner()


def test_it_keeps_the_candidates_of_the_relation_the_question_asks_for(reasoner):
    wrote, produced = reasoner.reason_many(
        ["who wrote Blue Sea", "who produced Blue Sea"], [["m.z", "m.p"], ["m.z", "m.p"]], [POOLED, POOLED]
    )
    assert wrote.answers == ["m.z"] and wrote.error is None
    assert produced.answers == ["m.p"]
    both = EncoderReasoner(margin=2.0).reason("who wrote Blue Sea", ["m.p", "m.z"], POOLED)
    assert both.answers == ["m.z", "m.p"]  # a wide margin keeps both, the writer first


def test_a_candidate_no_triple_reaches_is_not_kept_and_without_triples_every_one_is(reasoner):
    assert reasoner.reason("who wrote Blue Sea", ["m.q", "m.z"], POOLED).answers == ["m.z"]
    bare = reasoner.reason("who wrote Blue Sea", ["m.z", "m.p"], [])
    assert bare.answers == ["m.z", "m.p"] and "every one kept" in bare.error
    assert reasoner.reason("who wrote Blue Sea", [], POOLED).answers == []
    assert reasoner.reason_many([], [], []) == []  # a round without steps encodes nothing
    with pytest.raises(UserInputError, match="differ in length"):
        reasoner.reason_many(["q"], [[], []], [[]])
    with pytest.raises(UserInputError, match="margin must be >= 0"):
        EncoderReasoner(margin=-0.1)


def test_per_step_it_drops_the_second_templates_relation_before_the_answer(world):  # noqa: F811
    """Union retrieval pools the writers with Blue Sea's producer; the reasoner keeps the writers."""
    run = keqing(world, ReasonerConfig(kind="encoder"))
    run.config.matching.top_k = 3
    record = run.answer([EXAMPLE])[0]
    first, second = record["steps"]
    assert set(first["answers"]) > {"m.a", "m.b"}  # the whole question's template pooled its writers in too
    assert first["chosen"] == ["m.a", "m.b"]  # both films were directed by Ann Lee; only they seed step 2
    assert second["seeds"] == ["m.a", "m.b"]
    assert "m.p" in second["answers"]  # the producer template's chain added Eve Stone ...
    assert second["chosen"] == ["m.x", "m.z"] and record["answers"] == ["m.x", "m.z"]  # ... and she is dropped
    everything = keqing(world, ReasonerConfig(kind="all"))
    everything.config.matching.top_k = 3
    assert everything.answer([EXAMPLE])[0]["answers"] == ["m.x", "m.z", "m.p"]


def test_one_relation_reaching_every_candidate_encodes_nothing_and_keeps_what_the_scores_keep():
    fresh = EncoderReasoner()
    one = [("m.a", DIRECTED, "m.r"), ("m.a", DIRECTED, "m.b"), ("m.x", WROTE, "m.q")]  # m.q: not a candidate
    (kept,) = fresh.reason_many(["what did Ann Lee direct"], [["m.b", "m.n", "m.r", "m.b"]], [one])
    assert kept.answers == ["m.b", "m.r"] and kept.error is None  # m.n: no triple reaches it
    assert fresh.embeddings._vectors == {}  # no question or relation was encoded
    # the scores agree: equal for the reached candidates, -inf for the other
    scores = fresh.candidate_scores("what did Ann Lee direct", ["m.b", "m.n", "m.r"], one)
    assert scores[0] == scores[2] > scores[1] == float("-inf")
    # two relations: the question is encoded and the scores decide
    (wrote,) = fresh.reason_many(["who wrote Blue Sea"], [["m.z", "m.p"]], [POOLED])
    assert wrote.answers == ["m.z"] and "who wrote Blue Sea" in fresh.embeddings._vectors


def test_an_infinite_margin_keeps_the_unreached_candidates_after_the_reached_ones_as_the_scores_do():
    wide = EncoderReasoner(margin=float("inf"))
    one = [("m.a", DIRECTED, "m.r")]
    (kept,) = wide.reason_many(["what did Ann Lee direct"], [["m.n", "m.r"]], [one])
    assert kept.answers == ["m.r", "m.n"] and wide.embeddings._vectors == {}
