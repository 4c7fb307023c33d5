"""Reasoners: all candidates without an LLM; the LLM reasoner against a real local OpenAI-compatible server."""

from __future__ import annotations

import re

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.llm.openai_backend import OpenAICompatibleBackend
from kbqa_lit.pipelines.keqing.reasoning import (
    PROMPT_HEAD,
    AllCandidatesReasoner,
    LLMReasoner,
    ReasoningResult,
    answer_texts,
    context_names,
    parse_answers,
)
from tests.helpers.llm_http_server import LLMServer, completion, prompt_of

DIRECTED, YEAR = "metaqa.movie.directed_by", "metaqa.movie.release_year"
TRIPLES = [("m.wow", DIRECTED, "m.sirk"), ("m.iol", DIRECTED, "m.sirk"), ("m.wow", YEAR, "1956")]
LABELS = {"m.wow": "Written on the Wind", "m.sirk": "Douglas Sirk", "m.iol": "Imitation of Life"}
REPLIES = {
    "good": "Douglas Sirk",
    "many": "Answers:\n- imitation of life\n- Written on the Wind\n- Some Other Film",
    "json": 'Sure: ["Douglas Sirk", "1956", "Nobody"]',
    "comma": "Imitation of Life, written on the wind.",
    "garbage": "I don't know.",
    "empty": "   ",
}
QUESTION_RE = re.compile(r"Question: (.*)\nAnswers:$")


def _respond(server: LLMServer, path: str, body: dict) -> tuple[int, object, float]:
    question = QUESTION_RE.search(prompt_of(body)).group(1)
    if question == "fail":
        return 400, {"error": "prompt too long"}, 0.0
    return 200, completion(path, REPLIES[question]), 0.0


def test_all_candidates_reasoner_returns_every_candidate_in_order() -> None:
    reasoner = AllCandidatesReasoner()
    got = reasoner.reason("who directed [mask]?", ["m.b", "m.a", "m.b"], [], LABELS.get)
    assert got == ReasoningResult(["m.b", "m.a"], None, None)
    many = reasoner.reason_many(["q1", "q2"], [["m.a"], []], [[], []])
    assert [r.answers for r in many] == [["m.a"], []]
    with pytest.raises(UserInputError, match="differ in length"):
        reasoner.reason_many(["q1"], [], [])


def test_llm_reasoner_parses_outputs_over_http() -> None:
    questions = ["good", "many", "json", "comma", "garbage", "empty", "fail", "no context"]
    triples = [list(TRIPLES)] * 7 + [[]]
    with LLMServer(_respond) as server:
        backend = OpenAICompatibleBackend(base_url=server.base_url, model="tiny", retries=0, timeout=10.0)
        results = LLMReasoner(backend).reason_many(questions, [[]] * 8, triples, LABELS.get)
        backend.close()
    got = dict(zip(questions, results, strict=True))
    assert server.requests == 7  # no request without context
    assert got["good"] == ReasoningResult(["m.sirk"], "Douglas Sirk", None)
    assert got["many"].answers == ["m.iol", "m.wow"] and got["many"].error is None  # "Some Other Film" dropped
    assert got["json"].answers == ["m.sirk", "1956"]
    assert got["comma"].answers == ["m.iol", "m.wow"]
    for name in ("garbage", "empty", "fail", "no context"):
        assert got[name].answers == [] and got[name].error, name
    assert got["garbage"].raw == "I don't know." and "no answer" in got["garbage"].error
    assert got["empty"].error == "empty output"
    assert got["fail"].raw is None and "HTTP 400" in got["fail"].error
    assert got["no context"].error == "no context triples"
    prompt = prompt_of(server.bodies[0])
    assert prompt.startswith(PROMPT_HEAD) and "exactly a subject or an object of the context" in prompt
    assert "(Written on the Wind, directed by, Douglas Sirk)\n(Imitation of Life, directed by, Douglas Sirk)" in prompt
    assert "(Written on the Wind, release year, 1956)" in prompt


def test_the_context_is_capped_and_answers_outside_it_are_dropped() -> None:
    with LLMServer(_respond) as server:
        backend = OpenAICompatibleBackend(base_url=server.base_url, model="tiny", retries=0, timeout=10.0)
        result = LLMReasoner(backend, max_triples=1).reason("many", [], list(TRIPLES), LABELS.get)
        backend.close()
    assert result.answers == ["m.wow"]  # Imitation of Life is not in the one-triple context
    assert "Imitation of Life" not in prompt_of(server.bodies[0])
    with pytest.raises(UserInputError):
        LLMReasoner(backend, max_triples=0)


def test_parsing_rules() -> None:
    names = context_names([("m.x1", "r", "m.y"), ("m.x2", "r", "m.y")], {"m.x1": "Up", "m.x2": "Up"}.get)
    assert names["up"] == ["m.x1", "m.x2"] and names["m.y"] == ["m.y"]  # unlabelled: the id is the name
    assert parse_answers("UP", names) == (["m.x1", "m.x2"], None)
    assert parse_answers("1. m.y\n2. up", names) == (["m.y", "m.x1", "m.x2"], None)
    assert parse_answers("[Up]", names)[0] == ["m.x1", "m.x2"]
    assert parse_answers("", names) == ([], "empty output")
    assert answer_texts("The answer is: Pride and Prejudice") == ["Pride and Prejudice", "Pride", "Prejudice"]
