"""Keqing's JSON decompositions: targets from chains, slots, and tolerant parsing."""

from __future__ import annotations

import pytest

from kbqa_lit.data.keqing.decomposition import (
    chain_decomposition,
    parse_decomposition,
    render_decomposition,
    slot_question,
)
from kbqa_lit.data.keqing.targets import decomposition_rows, gold_subquestions
from kbqa_lit.data.keqing.templates import mine_templates
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.chains import parse_chain

GOOD = chain_decomposition(["who directed [mask]", "which films did [mask] direct"], "[E0]")


def test_three_hop_target_chains_answers_and_dependencies():
    examples = [
        KBQAExample(
            "1", "who directed [Heat]", topic_entities={"m.h": "Heat"}, s_expression="(JOIN (R d.d.directed_by) m.h)"
        ),
        KBQAExample(
            "2", "what did [Mann] direct", topic_entities={"m.m": "Mann"}, s_expression="(JOIN d.d.directed_by m.m)"
        ),
    ]
    bank = mine_templates(examples)
    chain = parse_chain("d.d.directed_by> <d.d.directed_by d.d.directed_by>")
    subs = gold_subquestions(chain, bank, "[E0]")
    assert [s.text for s in subs] == ["who directed [mask]", "what did [mask] direct", "who directed [mask]"]
    assert [s.dep for s in subs] == [(-1,), (0,), (1,)]
    assert [s.seeds for s in subs] == [("[E0]",), ("<ANSWER>-0",), ("<ANSWER>-1",)]
    assert [s.text for s in gold_subquestions(chain, bank, "[E0]", "chains")] == [
        "d.d.directed_by>",
        "<d.d.directed_by",
        "d.d.directed_by>",
    ]
    rows, skipped = decomposition_rows(examples, bank, instruction="Decompose.")
    assert skipped == 0
    assert rows[0] == (
        "Decompose.\nQuestion: who directed [E0]\nSub-questions: ",
        '[{"question_text": "who directed [mask]", "question_id": 0, "dep": [-1], "seed_entities": ["[E0]"]}]',
    )
    named, _ = decomposition_rows(examples, bank, seed_form="name", instruction="D.")
    assert '"seed_entities": ["Heat"]' in named[0][1] and "[Heat]" in named[0][0]


def test_slots_replace_mentions_in_order():
    assert slot_question("who directed [Heat] and [Alien]", ["Heat", "Alien"]) == "who directed [E0] and [E1]"
    assert slot_question("what is mary_of_teck 's nationality", ["mary of teck"]) == "what is [E0] 's nationality"
    assert slot_question("who directed it", ["Heat"]) == "who directed it"


def test_a_good_output_parses_back():
    d = parse_decomposition(render_decomposition(GOOD))
    assert d.ok and d.subquestions == GOOD
    assert d.subquestions[1].answer_deps() == [0] and d.subquestions[0].entity_seeds() == ["[E0]"]


def test_a_truncated_output_keeps_its_complete_sub_questions():
    text = render_decomposition(GOOD)
    d = parse_decomposition(text[: text.index('"dep": [0]')])
    assert d.ok and [s.text for s in d.subquestions] == ["who directed [mask]"]
    d = parse_decomposition("Sure! " + text[:-1] + " and more")  # no closing bracket, prose around
    assert d.ok and len(d.subquestions) == 2


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("garbage", "no JSON sub-question"),
        ("", "no JSON sub-question"),
        ('[{"question_id": 0}]', "no JSON sub-question"),
        (
            '[{"question_text": "x [mask]", "question_id": 0, "dep": [-1], "seed_entities": ["<ANSWER>-3"]}]',
            "depends on 3",
        ),
        ('[{"question_text": "x [mask]", "question_id": 0, "dep": [-1], "seed_entities": []}]', "no seed"),
    ],
)
def test_failures_are_recorded_with_the_raw_output(text, error):
    d = parse_decomposition(text)
    assert not d.ok and error in d.error and d.raw == text
