from __future__ import annotations

from kbqa_lit.data.coq.generator_inputs import coq_texts
from kbqa_lit.data.entity_slots import SLOT_TOKENS, mask_lf, mask_text, topic_slots, unmask_lf, unmask_text
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr, invert_labels


def _example(**kw) -> KBQAExample:
    base = dict(
        qid="q1",
        question="Where was Bea Rowntree's spouse born?",
        topic_entities={"m.bea": "Bea Rowntree"},
        s_expression="(JOIN (R people.person.place_of_birth) (JOIN (R people.person.spouse) m.bea))",
        answers=[],
    )
    base.update(kw)
    return KBQAExample(**base)


def test_slots_follow_topic_entity_order_and_skip_empty_labels() -> None:
    ex = _example(topic_entities={"m.a": "Alpha", "m.b": "", "m.c": "Gamma  Ray"})
    assert topic_slots(ex) == [("[E0]", "Alpha"), ("[E1]", "Gamma Ray")]
    assert SLOT_TOKENS[:2] == ("[E0]", "[E1]")


def test_mask_text_whole_words_case_and_metaqa_brackets() -> None:
    slots = [("[E0]", "Ann"), ("[E1]", "Ann Lee")]
    # the longer label wins; "Annex" is not a mention; brackets around a mention go with it
    assert mask_text("did ann lee meet Ann in the Annex?", slots) == "did [E1] meet [E0] in the Annex?"
    assert mask_text("what movies did [Ann Lee] act in", slots) == "what movies did [E1] act in"


def test_coq_texts_mask_only_the_logical_form_task() -> None:
    ex = _example()
    plain = coq_texts(ex, use_decomposition=False, patterns="gold")
    masked = coq_texts(ex, use_decomposition=False, patterns="gold", mask_entities=True)
    assert "[ Bea Rowntree ]" in plain["target"] and "Bea Rowntree" in plain["source"]
    assert "Bea Rowntree" not in masked["source"] and "Bea Rowntree" not in masked["target"]
    assert masked["source"].count("[E0]") == 2  # the question and the oracle pattern
    assert masked["target"] == mask_lf(plain["target"], topic_slots(ex))
    assert masked["ans_source"] == plain["ans_source"]  # the answer task keeps the names


def test_unmask_restores_a_denormalisable_expression() -> None:
    ex = _example()
    masked = coq_texts(ex, use_decomposition=False, patterns="none", mask_entities=True)["target"]
    restored = unmask_lf(masked, ex)
    assert restored == coq_texts(ex, use_decomposition=False, patterns="none")["target"]
    assert denormalize_sexpr(restored, invert_labels(ex.entity_labels())) == ex.s_expression
    # a slot the example has no entity for stays (and fails later like any unknown label)
    assert unmask_lf("( join [ a , b ] [E3] )", ex) == "( join [ a , b ] [E3] )"
    assert unmask_lf("( join [ a , b ] [E0])", ex) == "( join [ a , b ] [ Bea Rowntree ] )"


def test_free_text_slots_go_back_to_their_labels() -> None:
    slots = [("[E0]", "Amos Garrick"), ("[E1]", "Golden Compass")]
    masked = mask_text("Did Amos Garrick act in Golden Compass?", slots)
    assert masked == "Did [E0] act in [E1]?"
    assert unmask_text("[SUBQ] who is [E0]? [ANS] #1 [SUBQ] was #1 in [E1] or [E5]?", slots) == (
        "[SUBQ] who is Amos Garrick? [ANS] #1 [SUBQ] was #1 in Golden Compass or [E5]?"
    )
    assert unmask_text("no slots here", slots) == "no slots here"
