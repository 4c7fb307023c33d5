"""Answer nouns read from questions, and their agreement with the KB classes of answers (the real MiniLM)."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.normalize import schema_name
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.selection.answer_type import AnswerNoun, AnswerTypes, answer_noun, counted
from tests.helpers.music_kb import build_music_store


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        ("Which country is LMIT located in?", AnswerNoun("country")),
        ("In what country is LMIT?", AnswerNoun("country")),
        ("Which cities are the universities Elio attended in?", AnswerNoun("cities")),
        ("How many countries have Zedish as an official language?", AnswerNoun("countries", counting=True)),
        ("which radio program was broadcast first?", AnswerNoun("radio program")),
        ("star-trek is what type of fictional species?", AnswerNoun("fictional species")),
        ("Which films directed by Arlo were released after 1976?", AnswerNoun("films")),
        ("embarcadero was used to write what software?", AnswerNoun("software")),
        ("Where was Ida Crane born?", None),
        ("What is the capacity of the arena?", None),
        ("Who directed Paper Fever?", None),
    ],
)
def test_the_answer_noun_of_a_question(question: str, noun: AnswerNoun | None) -> None:
    assert answer_noun(question) == noun


def test_counts_and_class_words() -> None:
    assert counted("(COUNT (JOIN r.s.t m.a1))") == "(JOIN r.s.t m.a1)"
    assert counted("(JOIN (R r.s.t) m.a1)") is None
    assert schema_name("sports.sports_team") == "sports team"  # a class's words


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    with open_store(build_music_store(tmp_path_factory.mktemp("types"), studies=True)) as store:
        yield store


def test_answers_agree_with_the_kind_the_noun_names(kb) -> None:
    types = AnswerTypes()
    assert "location.city" in types.kb_classes(kb) and "education.education" in types.kb_classes(kb)
    city, country = AnswerNoun("cities"), AnswerNoun("country")
    assert types.expects(kb, city) and types.expects(kb, country)
    assert not types.expects(kb, AnswerNoun("seats")) and not types.expects(kb, None)
    assert types.answer_classes(kb, ["m.c1", "m.c2", "1970"]) == ["location.city"]
    assert types.agrees(kb, city, ["m.c1"]) and not types.agrees(kb, country, ["m.c1"])
    assert types.agrees(kb, country, ["m.k1"])
    assert not types.agrees(kb, city, ["1970", "42"])  # literals have no class
    assert not types.agrees(kb, AnswerNoun("university"), ["m.p1"])
    for bad in ({"threshold": 0}, {"threshold": 1.5}, {"sample": 0}):
        with pytest.raises(UserInputError):
            AnswerTypes(**bad)
