from __future__ import annotations

import json
import socket

import pytest

from kbqa_lit.llm.backends import DecompositionBackendError, GenerationOutcome
from kbqa_lit.llm.openai_backend import OpenAICompatibleBackend
from tests.helpers.llm_http_server import LLMServer, completion, question_of


def _backend(server: LLMServer, **kw) -> OpenAICompatibleBackend:
    kw.setdefault("retries", 2)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    return OpenAICompatibleBackend(base_url=server.base_url, model="tiny-llama", **kw)


def _answer_with_question(server, path, body):
    return 200, completion(path, f"[SUBQ] {question_of(body)} [ANS] #1"), 0.0


@pytest.mark.parametrize("mode", ["chat", "completions"])
def test_well_formed_answers_in_prompt_order(mode):
    prompts = [f'Decompose the question "q{i}?" step by step:' for i in range(6)]
    with LLMServer(_answer_with_question) as server:
        backend = _backend(server, mode=mode, max_tokens=33, stop=["STOP"], extra_body={"seed": 7})
        texts = backend.generate(prompts)
    assert texts == [f"[SUBQ] q{i}? [ANS] #1" for i in range(6)]
    endpoint = "/v1/chat/completions" if mode == "chat" else "/v1/completions"
    assert set(server.paths) == {endpoint}
    body = server.bodies[0]
    assert body["model"] == "tiny-llama" and body["max_tokens"] == 33 and body["temperature"] == 0.0
    assert body["stop"] == ["STOP"] and body["seed"] == 7
    if mode == "chat":
        assert body["messages"][0]["role"] == "user" and body["messages"][0]["content"] in prompts
    else:
        assert body["prompt"] in prompts


def test_a_500_then_success_is_retried():
    def respond(server, path, body):
        if server.requests == 1:
            return 500, {"error": "overloaded"}, 0.0
        return 200, completion(path, "[SUBQ] a? [ANS] b"), 0.0

    with LLMServer(respond) as server:
        out = _backend(server).generate_outcomes(["p"])
    assert out == [GenerationOutcome("[SUBQ] a? [ANS] b")]
    assert server.requests == 2


def test_429_is_retried_and_persistent_5xx_is_a_recorded_failure():
    def respond(server, path, body):
        prompt = body["messages"][0]["content"]
        if prompt == "busy" and server.requests <= 2:
            return 429, {"error": "slow down"}, 0.0
        if prompt == "broken":
            return 503, {"error": "down"}, 0.0
        return 200, completion(path, "ok " + prompt), 0.0

    with LLMServer(respond) as server:
        busy = _backend(server, concurrency=1).generate_outcomes(["busy"])
        broken = _backend(server, concurrency=1, retries=1).generate_outcomes(["broken", "fine"])
    assert busy == [GenerationOutcome("ok busy")]
    assert broken[0].text is None and "HTTP 503" in broken[0].error and server.base_url in broken[0].error
    assert broken[1] == GenerationOutcome("ok fine")
    assert sum(1 for b in server.bodies if b["messages"][0]["content"] == "broken") == 2  # one retry


def test_401_is_a_typed_error_naming_the_url(monkeypatch):
    monkeypatch.setenv("KBQA_TEST_KEY", "secret-123")

    def respond(server, path, body):
        return 401, {"error": {"message": "invalid api key"}}, 0.0

    with LLMServer(respond) as server:
        backend = _backend(server, api_key_env="KBQA_TEST_KEY")
        with pytest.raises(DecompositionBackendError, match="HTTP 401 authentication failed") as exc:
            backend.generate_outcomes(["p1", "p2", "p3"])
    assert f"{server.base_url}/chat/completions" in str(exc.value)
    assert server.headers[0]["Authorization"] == "Bearer secret-123"
    assert server.requests <= 3  # not retried


def test_no_key_header_without_the_env_variable(monkeypatch):
    monkeypatch.delenv("KBQA_TEST_KEY", raising=False)
    with LLMServer(_answer_with_question) as server:
        _backend(server, api_key_env="KBQA_TEST_KEY").generate(["p"])
    assert "Authorization" not in server.headers[0]


def test_unreachable_server_is_a_typed_error_naming_the_url():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAICompatibleBackend(base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=1, backoff=0.01)
    with pytest.raises(
        DecompositionBackendError, match=f"cannot reach the decomposition server at http://127.0.0.1:{port}/v1"
    ):
        backend.generate_outcomes(["p"])


def test_a_slow_reply_times_out_as_a_recorded_failure():
    def respond(server, path, body):
        prompt = body["messages"][0]["content"]
        return 200, completion(path, "late"), (2.0 if prompt == "slow" else 0.0)

    with LLMServer(respond) as server:
        out = _backend(server, timeout=0.3, retries=0).generate_outcomes(["slow", "fast"])
    assert out[0].text is None and "timed out after 0.3 s" in out[0].error
    assert out[1] == GenerationOutcome("late")
    with pytest.raises(DecompositionBackendError, match="failed on prompt 0: timed out"):
        with LLMServer(respond) as server:
            _backend(server, timeout=0.3, retries=0).generate(["slow"])


def test_concurrency_limit_is_respected():
    def respond(server, path, body):
        return 200, completion(path, "x"), 0.15

    with LLMServer(respond) as server:
        out = _backend(server, concurrency=3).generate([f"p{i}" for i in range(10)])
    assert out == ["x"] * 10
    assert server.max_in_flight == 3
    with LLMServer(respond) as server:
        _backend(server, concurrency=1).generate([f"p{i}" for i in range(3)])
    assert server.max_in_flight == 1


def test_malformed_body_is_a_recorded_failure():
    def respond(server, path, body):
        return 200, "not json" if body["messages"][0]["content"] == "a" else {"choices": []}, 0.0

    with LLMServer(respond) as server:
        out = _backend(server).generate_outcomes(["a", "b"])
    assert all(o.text is None and "malformed response" in o.error for o in out)


def test_404_names_url_mode_and_model():
    with LLMServer(lambda s, p, b: (404, {"error": "model not found"}, 0.0)) as server:
        with pytest.raises(DecompositionBackendError, match="HTTP 404 not found"):
            _backend(server, mode="completions").generate(["p"])
    assert server.paths == ["/v1/completions"]


def test_identity_names_kind_model_and_settings_not_url():
    a = OpenAICompatibleBackend(base_url="http://a:1/v1", model="m", max_tokens=10)
    b = OpenAICompatibleBackend(base_url="http://b:2/v1", model="m", max_tokens=10, timeout=1, concurrency=2)
    c = OpenAICompatibleBackend(base_url="http://a:1/v1", model="m", max_tokens=11)
    d = OpenAICompatibleBackend(base_url="http://a:1/v1", model="m2", max_tokens=10)
    assert a.identity == b.identity
    assert len({a.identity, c.identity, d.identity}) == 3
    ident = json.loads(a.identity)
    assert ident["kind"] == "openai-compatible" and ident["model"] == "m" and ident["settings"]["max_tokens"] == 10


def test_bad_arguments():
    with pytest.raises(DecompositionBackendError, match="mode"):
        OpenAICompatibleBackend(mode="embeddings")
    with pytest.raises(DecompositionBackendError, match="concurrency"):
        OpenAICompatibleBackend(concurrency=0)
    assert OpenAICompatibleBackend().generate([]) == []
