"""FC-KBQA composition by filling skeletons: slots, pair constraints, order, literals; hand-made components."""

from __future__ import annotations

import pytest

import kbqa_lit.pipelines.fc.fill as fill_module
from kbqa_lit.data.fc.composer_examples import Components
from kbqa_lit.data.fc.composer_inputs import Pair
from kbqa_lit.data.fc.literals import detect_literals
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.fc.fill import XSD, SkeletonFiller, literal_forms

RELS = ["people.person.nationality", "people.person.spouse", "film.film.directed_by"]
CHAIN = "(JOIN (R <rel>) (JOIN (R <rel>) <entity>))"


def _comp(skeletons, pairs=(), scores=(2.0, 1.0, -1.0), entities=None, classes=(), class_scores=()):
    return Components(
        list(pairs),
        entities if entities is not None else {"m.ida": "Ida Chandler"},
        list(skeletons),
        list(RELS),
        list(classes),
        list(scores),
        list(class_scores),
    )


def test_two_backward_hops_need_the_forward_pair_read_back():
    # "nationality of Ida's spouse": e -spouse-> y -nationality-> x, stored as the forward pair (spouse, nationality)
    pairs = [Pair("relation-relation", "people.person.spouse", "people.person.nationality", 3.0)]
    found = [f.sexpr for f in SkeletonFiller().fillings(_comp([CHAIN], pairs))]
    assert found == ["(JOIN (R people.person.nationality) (JOIN (R people.person.spouse) m.ida))"]
    unconstrained = SkeletonFiller(use_pairs=False).fillings(_comp([CHAIN], pairs))
    assert len(unconstrained) == 9 and unconstrained[0].sexpr.count("nationality") == 2  # best sum first
    assert [round(f.score, 6) for f in unconstrained] == sorted(
        (round(f.score, 6) for f in unconstrained), reverse=True
    )


def test_class_and_entity_pairs_constrain_their_slots():
    pairs = [
        Pair("class-relation", "film.film", "film.film.directed_by", 1.0),
        Pair("relation-entity", "film.film.directed_by", "m.ida", 1.0),
    ]
    comp = _comp(["(AND <class> (JOIN <rel> <entity>))"], pairs, classes=["film.film", "people.person"])
    assert [f.sexpr for f in SkeletonFiller().fillings(comp)] == ["(AND film.film (JOIN film.film.directed_by m.ida))"]
    # an entity with no relation-entity pair is not constrained by them; two entity slots take distinct entities
    two = _comp(
        ["(JOIN (R <rel>) (AND (JOIN <rel> <entity>) (JOIN <rel> <entity>)))"],
        entities={"m.a": "A", "m.b": "B"},
        scores=(0.0, 0.0, 0.0),
    )
    forms = [f.sexpr for f in SkeletonFiller(top_relations=1).fillings(two)]
    r = RELS[0]
    assert forms == [
        f"(JOIN (R {r}) (AND (JOIN {r} m.a) (JOIN {r} m.b)))",
        f"(JOIN (R {r}) (AND (JOIN {r} m.b) (JOIN {r} m.a)))",
    ]


def test_literals_take_the_form_of_their_slot():
    year = detect_literals("Which films came out after 1972?")[0]
    assert literal_forms(year, in_time_constraint=True) == ["1972"]
    assert literal_forms(year, in_time_constraint=False) == [f"1972^^{XSD}gYear", f"1972-01-01^^{XSD}date"]
    assert literal_forms(detect_literals("more than 2,500 seats")[0], False) == [
        f"2500^^{XSD}integer",
        f"2500^^{XSD}float",
    ]
    comp = _comp(["(AND (JOIN <rel> <entity>) (gt <rel> <literal>))"], scores=(0.0, -5.0, -5.0))
    forms = [f.sexpr for f in SkeletonFiller(top_relations=1).fillings(comp, [year])]
    r = RELS[0]
    assert forms == [
        f"(AND (JOIN {r} m.ida) (gt {r} 1972^^{XSD}gYear))",
        f"(AND (JOIN {r} m.ida) (gt {r} 1972-01-01^^{XSD}date))",
    ]
    tc = _comp(["(JOIN (R <rel>) (TC (JOIN <rel> <entity>) <rel> <literal>))"])
    ends = [f.sexpr.rsplit(" ", 1)[1] for f in SkeletonFiller(top_relations=1).fillings(tc, [year])]
    assert ends == ["1972))", "NOW))"]
    assert [f.sexpr.rsplit(" ", 1)[1] for f in SkeletonFiller(top_relations=1).fillings(tc, [])] == ["NOW))"]
    assert SkeletonFiller().fillings(comp, []) == []  # a comparison's literal slot with no literal in the question


def test_order_skeleton_first_or_by_mean_and_malformed_skeletons_are_skipped():
    one_hop = "(JOIN (R <rel>) <entity>)"
    pairs = [Pair("relation-relation", "people.person.spouse", "people.person.nationality", 3.0)]
    comp = _comp([one_hop, CHAIN, "(JOIN (R <rel>"], pairs, scores=(0.0, -1.0, 5.0))
    by_skeleton = SkeletonFiller().fillings(comp)
    assert [f.skeleton for f in by_skeleton] == [0, 0, 0, 1]
    assert by_skeleton[0].sexpr == "(JOIN (R film.film.directed_by) m.ida)"
    # mean: the chain (log p ~ -5 and -6) outranks the one-hop filling of its worse relation (-6), not the others
    by_mean = SkeletonFiller(order="mean").fillings(comp)
    assert by_mean[0].sexpr == by_skeleton[0].sexpr
    assert [f.mean for f in by_mean] == sorted((f.mean for f in by_mean), reverse=True)
    spouse_one_hop = next(f for f in by_skeleton if f.sexpr == "(JOIN (R people.person.spouse) m.ida)")
    assert by_mean.index(by_skeleton[-1]) == 2 and by_mean.index(spouse_one_hop) == 3
    with pytest.raises(UserInputError, match="order"):
        SkeletonFiller(order="best")


def test_rank_scores_when_the_file_has_none():
    comp = _comp(["(JOIN (R <rel>) <entity>)"], scores=())
    assert [f.sexpr.split()[2][:-1] for f in SkeletonFiller().fillings(comp)] == RELS


def test_extra_skeletons_of_the_ranked_list_come_after_the_top2():
    comp = _comp(["(JOIN (R <rel>) <entity>)"])
    comp.skeleton_beams = ["(JOIN (R <rel>) <entity>)", "(COUNT (JOIN (R <rel>) <entity>))", "(JOIN <rel> <entity>)"]
    assert {f.skeleton for f in SkeletonFiller().fillings(comp)} == {0}
    found = SkeletonFiller(extra_skeletons=1, order="mean").fillings(comp)
    assert [f.skeleton for f in found] == [0, 0, 0, 1, 1, 1]  # the fallback stays after the top-2, in both orders
    assert found[-1].sexpr.startswith("(COUNT (JOIN (R ")


def test_enumeration_is_bounded(monkeypatch):
    monkeypatch.setattr(fill_module, "MAX_ENUMERATED", 5)
    comp = _comp(["(AND (JOIN <rel> <entity>) (JOIN <rel> <entity>))"], entities={"m.a": "A", "m.b": "B"})
    assert len(SkeletonFiller(use_pairs=False).fillings(comp)) == 5
