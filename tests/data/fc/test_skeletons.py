"""FC-KBQA skeletons: mention masking in order, S-expression skeletons, the top-2 chain rule."""

from __future__ import annotations

import pytest

from kbqa_lit.data.fc.skeletons import (
    chain_alternative,
    lf_skeleton,
    mask_mentions,
    parse_skeleton,
    parser_example,
    render_skeleton,
    top2_skeletons,
    well_formed,
)
from kbqa_lit.errors import SExprError
from tests.helpers.toy import born_in


def test_mentions_are_masked_in_order_of_appearance():
    q = "Which films did Ada Lovelace make with Alan Turing in London?"
    assert mask_mentions(q, ["Alan Turing", "ada lovelace", "Nowhere"]) == (
        "Which films did <entity0> make with <entity1> in London?"
    )
    # the longer mention claims its words; whole words only
    assert mask_mentions("Is New York in York?", ["York", "New York"]) == "Is <entity0> in <entity1>?"
    assert mask_mentions("Yorkshire pudding", ["York"]) == "Yorkshire pudding"
    assert mask_mentions("no mentions", []) == "no mentions"


def test_skeleton_of_an_s_expression():
    sx = "(AND music.album (JOIN (R music.artist.album) m.0abc))"
    assert lf_skeleton(sx) == "(AND <class> (JOIN (R <rel>) <entity>))"
    sx = "(ARGMAX (AND film.film (JOIN film.film.genre m.x)) film.film.release_year)"
    assert lf_skeleton(sx) == "(ARGMAX (AND <class> (JOIN <rel> <entity>)) <rel>)"
    assert lf_skeleton("(AND (JOIN a.b.c m.x) (lt a.b.d 1990^^http://www.w3.org/2001/XMLSchema#gYear))") == (
        "(AND (JOIN <rel> <entity>) (lt <rel> <literal>))"
    )
    text = "(COUNT (JOIN (R <rel>) (JOIN <rel> <entity>)))"
    assert render_skeleton(parse_skeleton(text)) == text
    with pytest.raises(SExprError):
        parse_skeleton("(JOIN <rel> <entity>")


@pytest.mark.parametrize(
    ("top1", "alternative"),
    [
        # a single-relation slot becomes a two-hop chain in the same direction, and back
        ("(JOIN (R <rel>) <entity>)", "(JOIN (R <rel>) (JOIN (R <rel>) <entity>))"),
        ("(JOIN (R <rel>) (JOIN (R <rel>) <entity>))", "(JOIN (R <rel>) <entity>)"),
        ("(JOIN <rel> <entity>)", "(JOIN <rel> (JOIN <rel> <entity>))"),
        ("(JOIN (R <rel>) (JOIN <rel> <entity>))", "(JOIN (R <rel>) <entity>)"),
        ("(AND <class> (JOIN <rel> <literal>))", "(AND <class> (JOIN <rel> (JOIN <rel> <literal>)))"),
        ("(COUNT (JOIN (R <rel>) <entity>))", "(COUNT (JOIN (R <rel>) (JOIN (R <rel>) <entity>)))"),
        # the first anchored chain in pre-order: inside an unanchored chain, the first AND argument
        (
            "(JOIN (R <rel>) (AND (JOIN <rel> <entity>) (JOIN <rel> <entity>)))",
            "(JOIN (R <rel>) (AND (JOIN <rel> (JOIN <rel> <entity>)) (JOIN <rel> <entity>)))",
        ),
        (
            "(ARGMAX (JOIN (R <rel>) <entity>) (JOIN <rel> <rel>))",
            "(ARGMAX (JOIN (R <rel>) (JOIN (R <rel>) <entity>)) (JOIN <rel> <rel>))",
        ),
        # three hops, or no anchored chain: no rewrite
        ("(JOIN (R <rel>) (JOIN (R <rel>) (JOIN (R <rel>) <entity>)))", None),
        ("(AND <class> (lt <rel> <literal>))", None),
        ("<class>", None),
        # generated skeletons of the wrong arity parse, and have no rewrite (the comparison's run met one)
        ("(JOIN <rel>)", None),
        ("(AND (JOIN <rel>) <class>)", None),
        ("(ARGMAX)", None),
        ("(TC)", None),
    ],
)
def test_chain_alternative(top1, alternative):
    assert chain_alternative(top1) == alternative


def test_top2_uses_the_rule_else_the_second_beam():
    one_hop = "(JOIN (R <rel>) <entity>)"
    assert top2_skeletons([one_hop, "(COUNT <class>)"]) == [one_hop, "(JOIN (R <rel>) (JOIN (R <rel>) <entity>))"]
    three = "(JOIN (R <rel>) (JOIN (R <rel>) (JOIN (R <rel>) <entity>)))"
    assert top2_skeletons([three, three, "(COUNT <class>)"]) == [three, "(COUNT <class>)"]
    # malformed beams are passed over while a later one parses; kept when none does
    assert top2_skeletons(["(JOIN <rel>", "(COUNT <class>)"]) == ["(COUNT <class>)"]
    assert top2_skeletons(["(JOIN (R <rel>) <entity>))", one_hop, "(COUNT <class>)"]) == [
        one_hop,
        "(JOIN (R <rel>) (JOIN (R <rel>) <entity>))",
    ]
    assert top2_skeletons(["(JOIN <rel>", "<rel>)"]) == ["(JOIN <rel>", "<rel>)"]
    assert top2_skeletons([three]) == [three] and top2_skeletons([]) == []


def test_parser_training_pairs_mask_the_topic_entities():
    (ex,) = born_in(1)
    assert parser_example(ex) == ("Where was <entity0> born?", "(JOIN (R <rel>) <entity>)")
    ex.s_expression = None
    assert parser_example(ex) is None


def test_well_formed_keeps_parsing_beams_once_in_order():
    one_hop = "(JOIN (R <rel>) <entity>)"
    assert well_formed(["(JOIN <rel>", one_hop, "(COUNT <class>)", one_hop]) == [one_hop, "(COUNT <class>)"]
