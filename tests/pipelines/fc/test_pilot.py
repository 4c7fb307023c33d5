"""FC-KBQA's pilot study: same-domain candidates of 1-hop forms, the fine and the coarse scoring rules."""

from __future__ import annotations

import math

import pytest
import torch

from kbqa_lit.backbones.encoders import build_encoder_tokenizer
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.sexpr import schema_items, skeleton
from kbqa_lit.modules.fc.lf_ranker import LogicalFormRanker
from kbqa_lit.pipelines.fc.pilot import (
    PilotQuestion,
    candidate_forms,
    coarse_scores,
    coarse_training_groups,
    fine_scores,
    form_text,
    is_one_hop,
    pilot_questions,
    top1_accuracy,
)
from tests.helpers.tiny import TINY_BERT

RELATIONS = [
    "people.person.place_of_birth",
    "people.person.nationality",
    "people.person.spouse",
    "film.film.directed_by",
    "film.film.starring",
    "music.album.artist",
]
CLASSES = ["people.person", "people.profession", "film.film", "film.genre", "music.album"]
GOLD = "(JOIN (R people.person.place_of_birth) m.01)"
GOLD_CLASS = "(AND film.film (JOIN film.film.directed_by m.02))"


def _examples() -> list[KBQAExample]:
    return [
        KBQAExample("q1", "where was ada born", topic_entities={"m.01": "Ada"}, s_expression=GOLD),
        KBQAExample("q2", "which film did bo direct", topic_entities={"m.02": "Bo"}, s_expression=GOLD_CLASS),
        KBQAExample("q3", "two hops", s_expression="(JOIN film.film.starring (JOIN people.person.spouse m.03))"),
    ]


def test_candidates_keep_the_structure_and_come_from_the_domain_first() -> None:
    forms = candidate_forms(GOLD, RELATIONS, CLASSES, n=3, seed=0, key="q1")
    assert GOLD in forms and len(forms) == 3
    assert {skeleton(f) for f in forms} == {skeleton(GOLD)}  # direction and entity kept
    assert all(schema_items(f).relations[0].startswith("people.") for f in forms)
    everything = candidate_forms(GOLD, RELATIONS, CLASSES, n=100, key="q1")
    assert len(everything) == len(RELATIONS)  # a form without a class: one candidate per relation
    assert everything == candidate_forms(GOLD, RELATIONS, CLASSES, n=100, key="q1")  # seeded
    with_class = candidate_forms(GOLD_CLASS, RELATIONS, CLASSES, n=4, key="q2")
    assert all(schema_items(f).classes[0].startswith("film.") for f in with_class)
    assert all(schema_items(f).relations[0].startswith("film.") for f in with_class)
    assert len(candidate_forms(GOLD_CLASS, RELATIONS, CLASSES, n=100)) == len(RELATIONS) * len(CLASSES)
    assert not is_one_hop(_examples()[2].s_expression) and not is_one_hop("(JOIN")
    with pytest.raises(UserInputError, match="1-hop"):
        candidate_forms(_examples()[2].s_expression or "", RELATIONS, CLASSES)


def test_fine_score_sums_softmax_normalised_component_scores() -> None:
    (q1, q2) = pilot_questions(_examples(), RELATIONS, CLASSES, levels={"q1": "iid", "q2": "zero-shot"}, n=100)
    rel_scores = dict(zip(RELATIONS, [2.0, 1.0, 0.0, 3.0, 0.0, 0.0], strict=True))
    cls_scores = dict(zip(CLASSES, [0.0, 0.0, 1.0, 0.0, 0.0], strict=True))

    def rel(_q: str, ids: list[str]) -> list[float]:
        return [rel_scores[i] for i in ids]

    def cls(_q: str, ids: list[str]) -> list[float]:
        return [cls_scores[i] for i in ids]

    scores = fine_scores(q1, rel)
    z = sum(math.exp(v) for v in rel_scores.values())
    assert scores[q1.candidates.index(GOLD)] == pytest.approx(math.exp(2.0) / z)
    assert sum(scores) == pytest.approx(1.0)
    both = fine_scores(q2, rel, cls)
    z_c = sum(math.exp(v) for v in cls_scores.values())
    assert both[q2.candidates.index(GOLD_CLASS)] == pytest.approx(math.exp(3.0) / z + math.exp(1.0) / z_c)
    accuracy = top1_accuracy([q1, q2], lambda q: fine_scores(q, rel, cls))
    assert accuracy == {"all": 0.5, "n_all": 2, "iid": 0.0, "n_iid": 1, "zero-shot": 1.0, "n_zero-shot": 1}


def test_the_skeleton_score_decides_the_shape_the_components_cannot() -> None:
    gold, bare = GOLD_CLASS, "(JOIN film.film.directed_by m.02)"
    q = PilotQuestion("q2", "which film did bo direct", gold, (bare, gold, "(JOIN (R film.film.directed_by) m.02)"),
                      {"m.02": "Bo"}, correct=frozenset({gold}))  # fmt: skip
    seen: list[tuple[str, list[str]]] = []

    def rel(_q: str, ids: list[str]) -> list[float]:
        return [0.0 for _ in ids]

    def shape(source: str, skeletons: list[str]) -> list[float]:
        seen.append((source, list(skeletons)))
        return [0.0 if s.startswith("(JOIN") else math.log(3.0) for s in skeletons]

    plain = fine_scores(q, rel)  # no class extractor: the components cannot tell the three apart
    assert plain[0] == plain[1] == plain[2]
    scores = fine_scores(q, rel, skeleton_score=shape)
    assert max(range(3), key=lambda i: scores[i]) == 1  # the parser's skeleton with a class wins
    assert seen[0][0] == "which film did <entity0> direct" and len(seen[0][1]) == 3  # masked; one per shape
    assert scores[1] - scores[0] == pytest.approx(3 / 5 - 1 / 5)  # softmax over the three skeletons


def test_coarse_ranker_scores_whole_forms_with_a_tiny_encoder() -> None:
    torch.manual_seed(0)
    (q1, q2) = pilot_questions(_examples(), RELATIONS, CLASSES, n=10)
    groups = coarse_training_groups([q1, q2], negatives=3)
    assert groups[0] == (q1.question, groups[0][1]) and groups[0][1][0] == form_text(GOLD, {"m.01": "Ada"})
    assert (
        len(groups[0][1]) == 4
        and groups[0][1][0] == "( join ( reverse [ people , person , place of birth ] ) [ Ada ] )"
    )
    texts = [t for _, g in groups for t in g] + [q1.question, q2.question]
    tokenizer = build_encoder_tokenizer(None, train_texts=texts, vocab_size=200)
    ranker = LogicalFormRanker(encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=tokenizer)
    scores = coarse_scores(q1, ranker.score)
    assert len(scores) == len(q1.candidates) and len(set(scores)) > 1  # whole forms differ, so do their scores
    assert top1_accuracy([q1, q2], lambda q: coarse_scores(q, ranker.score))["n_all"] == 2
