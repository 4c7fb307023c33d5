"""TypeGuard: a selection whose answers are not of the asked-for kind gives way (real store, real MiniLM)."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.selection.answer_type import AnswerTypes
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard
from tests.helpers.music_kb import build_music_store

IDA = {"m.p1": "Ida Crane"}
BIRTH = "(JOIN (R people.person.place_of_birth) m.p1)"
BIRTH_COUNTRY = "(JOIN (R location.location.containedby) (JOIN (R people.person.place_of_birth) m.p1))"
UNIVERSITY = "(JOIN (R education.education.institution) (JOIN education.education.student m.p1))"


@pytest.fixture(scope="module")
def selector(tmp_path_factory: pytest.TempPathFactory):
    with open_store(build_music_store(tmp_path_factory.mktemp("guard"), studies=True)) as kb:
        with ExecutionGuidedSelector(kb) as sel:
            yield sel


@pytest.fixture(scope="module")
def guard() -> TypeGuard:
    return TypeGuard(AnswerTypes(), PathFallback())


def _guarded(guard: TypeGuard, selector, question: str, candidates: list[str]):
    sel = selector.select(candidates, semantics="exclude-topic", label_to_ids={})
    return sel, guard.after(selector, sel, candidates, question=question, linked=IDA, semantics="exclude-topic")


def test_the_next_candidate_of_the_asked_kind_replaces_the_first(guard, selector) -> None:
    sel, out = _guarded(guard, selector, "In which country was Ida Crane born?", [BIRTH, BIRTH_COUNTRY])
    assert sel.answers == ["m.c1"] and sel.chosen_beam == 0  # execution alone takes the birthplace (a city)
    assert out.answer_type and out.answers == ["m.k1"] and out.chosen_beam == 1 and out.beams_tried == 2
    assert out.chosen_sexpr == BIRTH_COUNTRY and "answer type: 'country' takes beam 1" in out.errors[-1]


def test_a_kb_path_through_the_mediator_when_no_candidate_agrees(guard, selector) -> None:
    question = "Which cities are the universities Ida Crane attended in?"
    sel, out = _guarded(guard, selector, question, [UNIVERSITY])
    assert sel.answers == ["m.u1"] and out.answer_type and out.chosen_beam is None
    assert out.answers == ["m.c2"], out.chosen_sexpr  # university -> city, three hops from the student
    assert out.chosen_sexpr == f"(JOIN (R education.university.city) {UNIVERSITY})"


def test_how_many_asks_for_a_count_of_the_kind(guard, selector) -> None:
    question = "How many cities are contained in Zedland?"
    candidates = ["(JOIN location.location.containedby m.k1)"]
    sel = selector.select(candidates, semantics="exclude-topic", label_to_ids={})
    out = guard.after(
        selector, sel, candidates, question=question, linked={"m.k1": "Zedland"}, semantics="exclude-topic"
    )
    assert out.answer_type and out.chosen_sexpr == "(COUNT (JOIN location.location.containedby m.k1))"
    assert out.answers == ["2"]


def test_left_alone_without_a_noun_of_the_kbs_kinds_or_an_agreeing_answer(guard, selector) -> None:
    for question in (
        "Where was Ida Crane born?",
        "Which year was Ida Crane born?",
        "Which city was Ida Crane born in?",
    ):
        sel, out = _guarded(guard, selector, question, [BIRTH, BIRTH_COUNTRY])
        assert out is sel, question
    alone = TypeGuard(AnswerTypes(), paths=None)  # no KB paths and no candidate of the kind
    sel, out = _guarded(alone, selector, "Which university did Ida Crane attend?", [BIRTH])
    assert out is sel and not out.answer_type
    with pytest.raises(UserInputError, match="max_paths"):
        TypeGuard(AnswerTypes(), max_paths=-1)


def test_a_kb_whose_classes_cannot_be_read_leaves_the_selection_with_the_reason(guard, selector) -> None:
    sel = selector.select([BIRTH], semantics="exclude-topic", label_to_ids={})
    with open_store("http://127.0.0.1:1/sparql", retries=0, timeout=2) as dead:
        with ExecutionGuidedSelector(dead) as unreachable:
            question, semantics = "Which country?", "exclude-topic"
            out = guard.after(unreachable, sel, [BIRTH], question=question, linked=IDA, semantics=semantics)
    assert out.answers == sel.answers and not out.answer_type
    assert out.errors[-1].startswith("answer type: could not read the classes of")
