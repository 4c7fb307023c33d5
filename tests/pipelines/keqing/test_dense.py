"""Keqing's dense retrieval beside the templates' chains (MiniLM in place of the paper's DPR): the start
nodes' one-hop relations nearest the sub-question are executed too and extend the step's candidates.

The hand-written KB of :mod:`tests.pipelines.keqing.test_stepwise` (Ann Lee directed Red Sky and Blue Sea;
Cal Moss and Dee Park wrote them; Eve Stone produced Blue Sea), the real embedded store and MiniLM.
"""

from __future__ import annotations

import pytest

from kbqa_lit.data.keqing.decomposition import Decomposition, chain_decomposition
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.chains import Hop
from kbqa_lit.pipelines.keqing.config import load_keqing_config
from kbqa_lit.pipelines.keqing.dense import DenseHopRetriever, hop_pattern
from kbqa_lit.pipelines.keqing.execution import DecompositionExecutor
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor
from tests.pipelines.keqing.test_stepwise import BANK, DIRECTED, PRODUCED, WROTE, world  # noqa: F401


@pytest.fixture(scope="module")
def dense(world):  # noqa: F811
    return DenseHopRetriever(world["store"], top_k=1)


def test_the_start_nodes_relations_in_both_directions_without_names(dense):
    assert dense.hops(["m.b"]) == [Hop(DIRECTED, True), Hop(PRODUCED, True), Hop(WROTE, True)]
    assert dense.hops(["m.d"]) == [Hop(DIRECTED, False)]  # Ann Lee is the object of directed_by
    assert len(DenseHopRetriever(dense.store, edges=1).hops(["m.b"])) <= 2  # one edge per direction: LIMIT 1
    assert hop_pattern(Hop(WROTE, True)) == "something written by"
    assert hop_pattern(Hop(DIRECTED, False)) == "directed by something"


def test_the_chain_nearest_the_sub_question_comes_first(dense):
    [(chain, score)] = dense.chains("who produced [mask]", ["m.a", "m.b"])
    assert chain == (Hop(PRODUCED, True),) and 0 < score <= 1
    [(chain, _)] = dense.chains("who wrote [mask]", ["m.b"])
    assert chain == (Hop(WROTE, True),)
    assert dense.chains("who wrote [mask]", []) == []


def test_it_reaches_a_fact_no_matched_template_owns(world):  # noqa: F811
    """The sub-question asks for a producer, but the only template matched is the writers' step."""
    texts = ["what did [mask] direct", "who produced [mask]"]
    t = BANK.templates
    matches = [[(t.index(texts[0]), 1.0)], [(t.index("who wrote [mask]"), 0.7)]]
    decomposition = Decomposition(chain_decomposition(texts, "[E0]"), "gold")
    plain = DecompositionExecutor(BANK, ChainExecutor(world["store"]))
    assert plain.run(decomposition, matches, [["m.d"]], {})[1].answers == ["m.x", "m.z"]  # the writers only
    executor = DecompositionExecutor(BANK, ChainExecutor(world["store"]), dense=DenseHopRetriever(world["store"]))
    first, second = executor.run(decomposition, matches, [["m.d"]], {})
    assert "m.p" in second.answers and (Hop(PRODUCED, True),) in second.chains  # Eve Stone, by the dense hop
    assert second.dense[0][0] == (Hop(PRODUCED, True),)
    assert second.to_json()["dense"][0][0] == f"{PRODUCED}>"
    assert ("m.b", PRODUCED, "m.p") in second.triples  # the reasoner sees the fact


def test_the_setting_is_checked_and_off_in_the_shipped_config(tmp_path):
    assert load_keqing_config("configs/keqing/run.yaml").retrieval.dense_k == 0
    with pytest.raises(UserInputError, match="dense_k must be >= 0"):
        load_keqing_config("configs/keqing/run.yaml", {"retrieval.dense_k": -1})
    with pytest.raises(UserInputError, match="must be >= 1"):
        DenseHopRetriever(None, top_k=0)
