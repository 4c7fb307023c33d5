"""The decomposition instruction: the paper's Fig. 3 form by default, ours as the ``placeholders`` preset."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.coq.decomposition.config import load_job
from kbqa_lit.pipelines.coq.decomposition.few_shot import DATASETS, DecompositionPrompt

#: The instruction this code used by default before the paper's form; the ``placeholders`` preset.
OURS = (
    "Decompose a complex question into simple sub-questions, one step at a time. For each step, say "
    "what the sub-question is, what its answer is and which relation it asks about; a later "
    "sub-question may use an earlier answer. When an answer is unknown, write #1, #2, ... for the "
    "first, second, ... answer. Then write the result on one line: each sub-question after [SUBQ] and "
    "its answer after [ANS], then [SCHEMA], the entities of the question separated by [ENT], then "
    "[SEP] and the relations the question needs, as short phrases, separated by [REL]."
)


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_default_prompt_has_fig3s_form(dataset):
    p = DecompositionPrompt(dataset)
    text = p.render("what is the nationality of the director of Lantern?")
    # the instruction asks for answers written out and used later, and mentions no #k placeholders
    assert "#" not in p.instruction and "placeholder" not in p.instruction.lower()
    assert "answer" in p.instruction and "later sub-question" in p.instruction
    assert text.startswith(p.instruction + "\n\n")
    # each case worked step by step ("The first sub-question ..."; answer; relation), then its result line
    assert p.style == "worked"
    for case in p.cases:
        assert case.worked and all("answer is" in w and "relation" in w for w in case.worked)
        assert "\n".join([*case.worked, case.decomposition]) in text
    assert "#1" not in text.split("\n\n")[0]  # the instruction block (GrailQA's set cases write #k)


def test_the_placeholders_preset_is_the_earlier_instruction():
    p = DecompositionPrompt("webqsp", instruction_preset="placeholders")
    assert p.instruction == OURS and p.instruction_preset == "placeholders"
    assert p.render("q?").startswith(OURS + "\n\n")
    assert DecompositionPrompt("webqsp").instruction != OURS
    assert DecompositionPrompt("webqsp", instruction_preset="paper").instruction == DecompositionPrompt().instruction


def test_an_instruction_text_wins_over_the_preset():
    p = DecompositionPrompt("webqsp", instruction="Split it.", instruction_preset="placeholders")
    assert p.instruction == "Split it."
    assert DecompositionPrompt("webqsp", instruction="").render("q?").startswith('Decompose the question "')


def test_unknown_preset_is_a_user_error():
    with pytest.raises(
        UserInputError,
        match=r"instruction preset must be one of .*paper, placeholders.*; got 'hashes'",
    ):
        DecompositionPrompt("webqsp", instruction_preset="hashes")


def test_the_preset_is_selectable_from_a_decompose_config(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("backend: null\nprompt:\n  dataset: cwq\n  instruction_preset: placeholders\nsource: gold\n")
    assert load_job(path, with_backend=False).prompt.instruction == OURS
    path.write_text("backend: null\nprompt:\n  dataset: cwq\nsource: gold\n")
    job = load_job(path, with_backend=False)
    assert job.prompt.instruction_preset == "paper" and "#" not in job.prompt.instruction
    path.write_text("backend: null\nprompt:\n  dataset: cwq\n  instruction_preset: hashes\n")
    with pytest.raises(UserInputError, match="instruction preset must be one of .*; got 'hashes'"):
        load_job(path)
