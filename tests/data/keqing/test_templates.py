"""Template mining: (masked question, chain) pairs, chains to their most frequent template, step wordings."""

from __future__ import annotations

import json

import pytest

from kbqa_lit.data.keqing.templates import TemplateBank, mask_question, mine_templates
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.chains import Hop, parse_chain

DIR = "(JOIN (R mq.movie.directed_by) {e})"
ACT = "(JOIN mq.movie.starred_actors {e})"


def ex(qid: str, question: str, sexpr: str, eid: str = "m.e", name: str = "Heat") -> KBQAExample:
    return KBQAExample(qid, question, topic_entities={eid: name}, s_expression=sexpr.format(e=eid))


def hand_made() -> list[KBQAExample]:
    return [
        ex("1", "who directed [Heat]", DIR),
        ex("2", "who directed [Alien]", DIR, "m.a", "Alien"),
        ex("3", "who was [Heat] directed by", DIR),
        ex("4", "what films did [Kim Novak] act in", ACT, "m.k", "Kim Novak"),
        # two hops: actor -> movies -> directors; the second hop only ever occurs inside a chain here
        ex(
            "5",
            "who directed the films [Kim Novak] acted in",
            "(JOIN (R mq.movie.directed_by) " + ACT.format(e="m.k") + ")",
            "m.k",
            "Kim Novak",
        ),
        ex(
            "6",
            "who directed the films that starred Kim Novak",
            "(JOIN (R mq.movie.directed_by) (JOIN mq.movie.starred_actors m.k))",
            "m.k",
            "Kim Novak",
        ),
        # not chains, or no mention in the question
        ex("7", "how many films did [Heat] get", "(COUNT (JOIN mq.movie.starred_actors m.e))"),
        ex("8", "who directed it", DIR),
    ]


def test_chains_go_to_their_most_frequent_template_and_steps_keep_their_wordings():
    bank = mine_templates(hand_made())
    assert bank.chains["who directed [mask]"] == [(Hop("mq.movie.directed_by", True),)]
    assert "who was [mask] directed by" not in bank.chains  # less frequent wording of the same chain
    assert bank.steps["mq.movie.directed_by>"] == ["who directed [mask]", "who was [mask] directed by"]
    assert bank.chains_of("who was [mask] directed by") == [(Hop("mq.movie.directed_by", True),)]
    two_hop = parse_chain("<mq.movie.starred_actors mq.movie.directed_by>")
    assert bank.chains["who directed the films [mask] acted in"] == [two_hop]  # a tie goes to the first by text
    assert "who directed the films that starred [mask]" not in bank.chains
    assert bank.counts["who directed the films that starred [mask]"] == 1
    assert bank.skipped == {"not a JOIN chain": 1, "topic mention not in the question": 1}
    assert bank.step_template(Hop("mq.movie.starred_actors", False)) == "what films did [mask] act in"


def test_a_step_no_one_hop_question_asks_gets_a_synthesised_wording():
    bank = mine_templates([e for e in hand_made() if e.qid in {"5"}])
    assert bank.steps["mq.movie.directed_by>"] == ["what is the directed by of [mask]"]
    assert bank.steps["<mq.movie.starred_actors"] == ["what has starred actors [mask]"]
    assert "what has starred actors [mask]" in bank.templates


def test_masking_brackets_names_and_underscored_names():
    assert mask_question("what films did [Kim Novak] act in", []) == "what films did [mask] act in"
    assert mask_question("which nationality is mary_of_teck 's couple ?", ["mary of teck"]) == (
        "which nationality is [mask] 's couple ?"
    )
    assert mask_question("who wrote it", ["Heat"]) is None


def test_bank_round_trip_and_bad_file(tmp_path):
    bank = mine_templates(hand_made())
    path = bank.save(tmp_path / "bank.json")
    again = TemplateBank.load(path)
    assert again.templates == bank.templates and again.chains == bank.chains and again.steps == bank.steps
    (tmp_path / "bad.json").write_text(json.dumps({"format": 1, "templates": [{"text": "x", "chains": ["a.b"]}]}))
    with pytest.raises(DataFormatError, match=r"bad.json:templates\[0\]"):
        TemplateBank.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("[]")
    with pytest.raises(DataFormatError, match="not a template bank"):
        TemplateBank.load(tmp_path / "other.json")
