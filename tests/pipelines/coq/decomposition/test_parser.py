from __future__ import annotations

import pytest

from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt
from kbqa_lit.pipelines.coq.decomposition.parser import (
    Decomposition,
    parse_decomposition,
    render_schema,
    with_placeholders,
)

Q = "What is the nationality of the director of Golden Compass?"
WELL_FORMED = (
    "[SUBQ] who directed Golden Compass? [ANS] Silas Quill [SUBQ] what is the nationality of Silas Quill? "
    "[ANS] Dorarbaria [SCHEMA] Golden Compass [SEP] film.film.directed_by [REL] people.person.nationality"
)
STEPS = [
    ("who directed Golden Compass?", "Silas Quill"),
    ("what is the nationality of Silas Quill?", "Dorarbaria"),
]


def test_well_formed():
    d = parse_decomposition(WELL_FORMED, Q)
    assert d.ok and d.error is None
    assert d.steps == STEPS
    assert d.entities == ["Golden Compass"]
    assert d.relations == ["film.film.directed_by", "people.person.nationality"]
    assert d.render() == WELL_FORMED.split(" [SCHEMA]")[0]
    assert d.render(with_schema=True) == WELL_FORMED


def test_render_round_trip():
    d = parse_decomposition(WELL_FORMED)
    assert parse_decomposition(d.render(with_schema=True)) == d


def test_several_entities_and_relations():
    d = parse_decomposition("[SUBQ] a? [ANS] b [SCHEMA] Jamaica [ENT] Cuba [SEP] r.a.b [REL] r.c.d [REL] r.e.f")
    assert d.entities == ["Jamaica", "Cuba"]
    assert d.relations == ["r.a.b", "r.c.d", "r.e.f"]
    assert render_schema(d.entities, d.relations) == "[SCHEMA] Jamaica [ENT] Cuba [SEP] r.a.b [REL] r.c.d [REL] r.e.f"


def test_one_step_per_line_with_numbers_and_prose():
    text = (
        " Sure! Here is the decomposition of the question step by step:\n\n"
        "1. [SUBQ] who directed Golden Compass? [ANS] Silas Quill\n"
        "2. [SUBQ] what is the nationality of Silas Quill? [ANS] Dorarbaria\n"
        "3. [SCHEMA] Golden Compass [SEP] film.film.directed_by [REL] people.person.nationality\n\n"
        "I hope this helps! Let me know if you have other questions."
    )
    d = parse_decomposition(text, Q)
    assert d.ok
    assert d.steps == STEPS
    assert d.relations == ["film.film.directed_by", "people.person.nationality"]


def test_missing_spaces_and_case_of_markers():
    text = (
        "[SUBQ]who directed Golden Compass?[ANS]Silas Quill[ subq ]what is the nationality of Silas Quill?"
        "[ans]Dorarbaria[SCHEMA]Golden Compass[SEP]film.film.directed_by"
    )
    d = parse_decomposition(text)
    assert d.steps == STEPS
    assert d.entities == ["Golden Compass"] and d.relations == ["film.film.directed_by"]


def test_truncated_output_missing_final_answer_and_schema():
    text = "[SUBQ] who directed Golden Compass? [ANS] Silas Quill [SUBQ] what is the nationality of Silas Quill?"
    d = parse_decomposition(text)
    assert d.ok
    assert d.steps == [STEPS[0], ("what is the nationality of Silas Quill?", "#2")]
    assert d.entities == [] and d.relations == []
    assert d.render().endswith("[ANS] #2")


def test_truncated_inside_the_schema():
    d = parse_decomposition(WELL_FORMED.split(" [REL]")[0])
    assert d.steps == STEPS and d.relations == ["film.film.directed_by"]


def test_echoed_prompt_picks_the_own_question():
    prompt = DecompositionPrompt("synthetic").render(Q)
    text = prompt + WELL_FORMED + '\n\nDecompose the question "Who won?" step by step:\n[SUBQ] who won? [ANS] Bob'
    d = parse_decomposition(text, Q)
    assert d.steps == STEPS  # not the few-shot cases' steps, not the continuation
    assert d.entities == ["Golden Compass"]


def test_echoed_prompt_without_the_question_takes_the_last_case():
    prompt = DecompositionPrompt("synthetic").render(Q)
    d = parse_decomposition(prompt + WELL_FORMED)
    assert d.steps == STEPS


def test_continuation_into_the_next_case_is_dropped():
    for follow in ('\n\nDecompose the question "Who won the cup?" step by step:\n', "\nQuestion: who won the cup?\n"):
        text = WELL_FORMED + follow + "[SUBQ] who won the cup? [ANS] Bob [SCHEMA] cup [SEP] r"
        d = parse_decomposition(text, Q)
        assert d.steps == STEPS and d.entities == ["Golden Compass"], follow


def test_subq_after_schema_ends_the_decomposition():
    d = parse_decomposition(WELL_FORMED + " [SUBQ] who won the cup? [ANS] Bob")
    assert d.steps == STEPS


def test_greedy_repetition_is_collapsed():
    step = "[SUBQ] who directed Golden Compass? [ANS] Silas Quill\n"
    d = parse_decomposition(step * 5)
    assert d.steps == [STEPS[0]]


def test_orphan_answer_is_ignored():
    d = parse_decomposition("[ANS] nothing [SUBQ] who directed Golden Compass? [ANS] Silas Quill [ANS] again")
    assert d.steps == [STEPS[0]]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        None,
        "I'm sorry, but I cannot answer questions about films.",
        "Answer: Dorarbaria",
        "[SCHEMA] Golden Compass [SEP] film.film.directed_by",
        "[SUBQ] [ANS] x",
        "\x00\x07 ad imerow WhDerst er",
    ],
)
def test_garbage_is_a_clear_failure(text):
    d = parse_decomposition(text, Q)
    assert not d.ok
    assert d.error
    assert d.steps == [] and d.render() == ""


def test_failure_names_what_it_saw():
    d = parse_decomposition("The director is Silas Quill.")
    assert "no [SUBQ] step" in d.error and "Silas Quill" in d.error


def test_placeholders_replace_answers_everywhere():
    d = with_placeholders(parse_decomposition(WELL_FORMED))
    assert d.render() == "[SUBQ] who directed Golden Compass? [ANS] #1 [SUBQ] what is the nationality of #1? [ANS] #2"
    assert d.entities == ["Golden Compass"]


def test_placeholders_list_answers_and_word_boundaries():
    text = (
        "[SUBQ] which albums did Alma record? [ANS] Fever | Fever Waves "
        "[SUBQ] which of Fever | Fever Waves was released last? [ANS] Fever Waves "
        "[SUBQ] is Fevers a word? [ANS] no"
    )
    d = with_placeholders(parse_decomposition(text))
    assert [q for q, _ in d.steps] == [
        "which albums did Alma record?",
        "which of #1 was released last?",
        "is Fevers a word?",
    ]
    assert [a for _, a in d.steps] == ["#1", "#2", "#3"]


def test_placeholders_keep_a_failure():
    bad = Decomposition.failure("nothing")
    assert with_placeholders(bad) is bad


def test_prose_on_the_first_line_then_a_continuation():
    text = "Sure. [SUBQ] who directed Golden Compass? [ANS] Silas Quill\nQuestion: who won?\n[SUBQ] who won? [ANS] Bob"
    assert parse_decomposition(text, Q).steps == [STEPS[0]]


@pytest.mark.parametrize("dataset", ["synthetic", "webqsp", "cwq", "grailqa", "metaqa", "pathquestion"])
def test_parses_the_papers_worked_form_back(dataset):
    """A model answering in the prompt's worked form (steps in words, then the result line) parses back."""
    from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt

    prompt = DecompositionPrompt(dataset)
    case = prompt.cases[-1]
    want = parse_decomposition(case.decomposition)
    answer = "\n".join(case.worked) + "\n" + case.decomposition
    for output in (
        answer,  # only the new text, stopped after the result line
        answer + '\n\nDecompose the question "another one?" step by step:\n[SUBQ] x? [ANS] y',  # no stop
        prompt.render(case.question) + answer,  # the prompt echoed back
    ):
        got = parse_decomposition(output, case.question)
        assert got.ok, got.error
        assert (got.steps, got.entities, got.relations) == (want.steps, want.entities, want.relations)
