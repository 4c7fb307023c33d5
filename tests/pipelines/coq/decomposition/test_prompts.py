from __future__ import annotations

import pytest

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.pipelines.coq.decomposition.few_shot import DATASETS, DecompositionPrompt, load_cases, shipped_cases_path
from kbqa_lit.pipelines.coq.decomposition.parser import parse_decomposition


@pytest.mark.parametrize("dataset", DATASETS)
def test_shipped_cases_are_well_formed(dataset):
    cases = load_cases(shipped_cases_path(dataset))
    assert len(cases) == 2
    for case in cases:
        d = parse_decomposition(case.decomposition)
        assert d.ok and len(d.steps) >= 2 and d.entities and d.relations
        # the exact output form: rendering the parse gives the case text back
        assert d.render(with_schema=True) == case.decomposition


def test_prompt_layout():
    p = DecompositionPrompt("cwq")
    text = p.render("Who is the  mayor of the capital of France?")
    assert text.startswith(p.instruction)
    assert text.endswith('Decompose the question "Who is the mayor of the capital of France?" step by step:\n')
    assert text.count("Decompose the question") == 3
    for case in p.cases:
        worked = "\n".join(case.worked)
        assert f'Decompose the question "{case.question}" step by step:\n{worked}\n{case.decomposition}\n\n' in text
        assert len(case.worked) == len(parse_decomposition(case.decomposition).steps)
    compact = DecompositionPrompt("cwq", style="compact").render("q?")
    assert all(w not in compact for c in p.cases for w in c.worked)
    assert p.stop == ["\n\n", "Decompose the question"]
    assert DecompositionPrompt("cwq", style="compact").stop == ["Decompose the question"]
    assert DecompositionPrompt("cwq", stop=["###"]).stop == ["###"]
    with pytest.raises(UserInputError, match="prompt style"):
        DecompositionPrompt("cwq", style="terse")  # type: ignore[arg-type]


def test_datasets_give_different_cases():
    texts = {d: DecompositionPrompt(d).render("q?") for d in DATASETS}
    assert len(set(texts.values())) == len(DATASETS)
    assert "Hop 1:" in texts["metaqa"] and "Starting from" in texts["pathquestion"]  # each in its own words
    worked = {d: DecompositionPrompt(d).cases[0].worked[0].split('"')[0] for d in DATASETS}
    assert len(set(worked.values())) >= 5


@pytest.mark.parametrize("dataset", DATASETS)
def test_shipped_cases_are_worked_in_the_papers_form(dataset):
    """One worked line per step naming its sub-question, answer and relation; relations as phrases."""
    for case in load_cases(shipped_cases_path(dataset)):
        d = parse_decomposition(case.decomposition)
        assert len(case.worked) == len(d.steps)
        for line, (q, a) in zip(case.worked, d.steps, strict=True):
            assert f'"{q}"' in line and "answer is" in line and a in line and "relation" in line
        assert all("." not in r and "_" not in r for r in d.relations)  # phrases, not Freebase ids


def test_own_case_file_and_num_cases(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text(
        "# my cases\n\nQuestion: who wrote Dune?\nDecomposition: [SUBQ] who wrote Dune? [ANS] Frank Herbert "
        "[SCHEMA] Dune [SEP] book.written_work.author\n\n\n"
        "Question: where was the author of Dune born?\nDecomposition: [SUBQ] who wrote Dune? [ANS] #1 "
        "[SUBQ] where was #1 born? [ANS] #2 [SCHEMA] Dune [SEP] book.written_work.author "
        "[REL] people.person.place_of_birth\n"
    )
    with pytest.raises(UserInputError, match="needs worked lines"):
        DecompositionPrompt(dataset="webqsp", cases_file=str(f))
    p = DecompositionPrompt(dataset="webqsp", cases_file=str(f), style="compact")
    assert [c.question for c in p.cases] == ["who wrote Dune?", "where was the author of Dune born?"]
    assert "Frank Herbert" in p.render("x?") and "Natalie Portman" not in p.render("x?")
    one = DecompositionPrompt(cases_file=str(f), num_cases=1, instruction="", style="compact")
    assert one.render("x?") == (
        'Decompose the question "who wrote Dune?" step by step:\n'
        + one.cases[0].decomposition
        + '\n\nDecompose the question "x?" step by step:\n'
    )
    assert DecompositionPrompt(cases_file=str(f), num_cases=0, instruction="", style="compact").render("x?") == (
        'Decompose the question "x?" step by step:\n'
    )


def test_missing_case_file_and_unknown_dataset(tmp_path):
    with pytest.raises(UserInputError, match="no such decomposition case file"):
        DecompositionPrompt(cases_file=str(tmp_path / "nope.txt"))
    with pytest.raises(
        UserInputError,
        match=r"dataset must be one of .*; got 'freebase' \(the datasets with shipped decomposition cases",
    ):
        DecompositionPrompt("freebase")


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("Question: a?\n", 1, "a case is a 'Question: ...' line, its worked lines"),
        ("Question: a?\nDecomposition: [SUBQ] a? [ANS] b [SCHEMA] e [SEP] r\nextra\n", 3, "last line of a case"),
        ("Question: a?\nthe answer is [ANS] b\nDecomposition: [SUBQ] a? [ANS] b [SCHEMA] e\n", 2, "worked line"),
        ("Q: a?\nDecomposition: [SUBQ] a? [ANS] b [SCHEMA] e\n", 1, "must start with 'Question"),
        ("Question: a?\nAnswer: [SUBQ] a? [ANS] b [SCHEMA] e\n", 2, "must be 'Decomposition"),
        ("\n\nQuestion: a?\nDecomposition: the answer is b\n", 4, "bad decomposition: no \\[SUBQ\\] step"),
        ("Question: a?\nDecomposition: [SUBQ] a? [ANS] b\n", 2, "no \\[SCHEMA\\] part"),
        ("Question:\nDecomposition: [SUBQ] a? [ANS] b [SCHEMA] e\n", 1, "empty question"),
    ],
)
def test_malformed_case_file_names_file_and_line(tmp_path, text, line, reason):
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(DataFormatError, match=reason) as exc:
        load_cases(f)
    assert exc.value.path == str(f) and exc.value.where == line


def test_empty_case_file(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("# nothing but comments\n\n")
    with pytest.raises(DataFormatError, match="no cases"):
        load_cases(f)
