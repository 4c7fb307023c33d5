"""Responses: the deterministic execution log, and an LLM summary with fallbacks, over a real local server."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.chains import Hop
from kbqa_lit.llm.openai_backend import OpenAICompatibleBackend
from kbqa_lit.pipelines.keqing.response import LLMResponder, ResponseStep, render_response
from tests.helpers.llm_http_server import LLMServer, completion, prompt_of

DIRECTED = "metaqa.movie.directed_by"
LABELS = {"m.wow": "Written on the Wind", "m.sirk": "Douglas Sirk", **{f"m.f{i}": f"Film {i}" for i in range(8)}}
QUESTION = "what other works the director of Written on the Wind has done?"
STEPS = [
    ResponseStep("who was the director of [mask]?", ((Hop(DIRECTED, True),),), ("m.sirk",), ("m.wow",)),
    ResponseStep(
        "[mask] was the director of which movies?",
        ((Hop(DIRECTED, False),), (Hop(DIRECTED, True), Hop(DIRECTED, False))),
        tuple(f"m.f{i}" for i in range(8)),
        ("m.sirk",),
    ),
]
EXPECTED = """Question: what other works the director of Written on the Wind has done?
1. who was the director of [mask]? (from Written on the Wind)
   chain: directed by
   answers: Douglas Sirk
2. [mask] was the director of which movies? (from Douglas Sirk)
   chains: directed by (inverse); directed by → directed by (inverse)
   answers: Film 0, Film 1, Film 2, Film 3, Film 4 and 3 more
Answer: Film 0, Film 1, Film 2, Film 3, Film 4 and 3 more"""


def test_render_response_is_a_deterministic_readable_log() -> None:
    assert render_response(QUESTION, STEPS, LABELS.get) == EXPECTED
    assert render_response(QUESTION, STEPS, LABELS.get) == render_response(QUESTION, list(STEPS), LABELS.get)
    bare = render_response("q?", [ResponseStep("who is [mask]?")], max_names=2)
    assert bare == "Question: q?\n1. who is [mask]?\n   chain: none\n   answers: none\nAnswer: none"
    assert render_response("q?", []) == "Question: q?\nNo sub-question was answered."
    assert "m.f0, m.f1 and 6 more" in render_response("q?", STEPS, max_names=2)


def test_llm_responder_summarises_and_falls_back() -> None:
    def respond(server: LLMServer, path: str, body: dict) -> tuple[int, object, float]:
        prompt = prompt_of(body)
        if "Question: good" in prompt:
            return 200, completion(path, "  Douglas Sirk directed it; he also made Film 0.  "), 0.0
        if "Question: empty" in prompt:
            return 200, completion(path, " \n"), 0.0
        return 400, {"error": "bad request"}, 0.0

    with LLMServer(respond) as server:
        backend = OpenAICompatibleBackend(base_url=server.base_url, model="tiny", retries=0, timeout=10.0)
        responder = LLMResponder(backend)
        got = responder.respond_many(["good", "empty", "fail"], [STEPS, STEPS, []], LABELS.get)
        backend.close()
    assert got[0] == "Douglas Sirk directed it; he also made Film 0."
    assert got[1] == render_response("empty", STEPS, LABELS.get)
    assert got[2] == render_response("fail", [])
    assert responder.fallbacks == 2
    [good] = [prompt_of(b) for b in server.bodies if "Question: good" in prompt_of(b)]  # requests run concurrently
    assert "Film 4 and 3 more" in good and good.endswith("Response:")
    with pytest.raises(UserInputError):
        responder.respond_many(["q"], [])


def test_llm_responder_falls_back_when_the_server_refuses_everything() -> None:
    with LLMServer(lambda server, path, body: (401, {"error": "no key"}, 0.0)) as server:
        backend = OpenAICompatibleBackend(base_url=server.base_url, model="tiny", retries=0, timeout=10.0)
        responder = LLMResponder(backend)
        assert responder.respond(QUESTION, STEPS, LABELS.get) == EXPECTED
        backend.close()
    assert responder.fallbacks == 1
