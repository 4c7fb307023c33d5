"""FC-KBQA component figures on hand-made annotations (hand-computed values)."""

from __future__ import annotations

from kbqa_lit.data.fc.composer_examples import FC_META, Components, components_meta
from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.pipelines.fc.figures import detection_figures

SEXPR = "(AND music.album (JOIN (R music.artist.album) m.a))"


def _ex(qid: str, sexpr: str | None, comp: Components | None = None) -> KBQAExample:
    meta = {FC_META: components_meta(comp)} if comp is not None else {}
    return KBQAExample(qid=qid, question="q", answers=[], topic_entities={"m.a": "A"}, s_expression=sexpr, meta=meta)


def test_figures_against_the_gold():
    good = Components(
        [
            Pair("class-relation", "music.album", "(R music.artist.album)", 2.0),
            Pair("relation-entity", "music.artist.album", "m.a", 1.0),
        ],
        {"m.a": "A"},
        ["(AND <class> (JOIN (R <rel>) <entity>))", "(AND <class> (JOIN (R <rel>) (JOIN (R <rel>) <entity>)))"],
        ["film.film.genre", "music.artist.album"],
        ["music.album"],
    )
    bad = Components([Pair("relation-entity", "film.film.genre", "m.b", 1.0)], {"m.b": "B"}, ["(JOIN <rel> <entity>)"],
                     ["film.film.genre"], ["film.film"])  # fmt: skip
    golds = [_ex("1", SEXPR), _ex("2", SEXPR), _ex("3", None)]
    annotated = [_ex("1", SEXPR, good), _ex("2", SEXPR, bad), _ex("3", None, bad)]
    figures = detection_figures(golds, annotated, ks=(1, 2))
    assert figures["questions"] == 2
    assert figures["relation_recall@1"] == 0.0 and figures["relation_recall@2"] == 0.5
    assert figures["class_recall@1"] == 0.5 and figures["entity_accuracy"] == 0.5
    assert figures["skeleton_top1"] == 0.5 and figures["skeleton_top2"] == 0.5
    assert figures["pair_coverage"] == 0.5 and figures["pairs_per_question"] == 1.5  # 2 of the 4 gold pairs
