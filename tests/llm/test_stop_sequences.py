"""The decomposition prompt's stop strings reach the backends (unless a config names its own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.llm.backends import DecompositionBackend, GenerationOutcome
from kbqa_lit.llm.hf_backend import HFCausalLMBackend, cut_at_stop
from kbqa_lit.llm.openai_backend import OpenAICompatibleBackend
from kbqa_lit.pipelines.coq.decomposition.decompose import decompose_file
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt


def test_backends_take_the_prompts_stop_unless_given() -> None:
    stop = ["\n\n", "Decompose the question"]
    for backend in (OpenAICompatibleBackend(), HFCausalLMBackend(model="tiny")):
        assert not backend.stop_given
        backend.set_default_stop(stop)
        assert backend.stop == stop and backend.generation_settings()["stop"] == stop
    http = OpenAICompatibleBackend(stop=["###"])
    http.set_default_stop(stop)
    assert http.stop == ["###"] and http._payload("p")["stop"] == ["###"]
    unset = OpenAICompatibleBackend()
    unset.set_default_stop(stop)
    assert unset._payload("p")["stop"] == stop  # sent with every request


def test_worked_output_is_cut_after_the_result_line() -> None:
    out = 'The first sub-question is "a?"; ...\n[SUBQ] a? [ANS] b [SCHEMA] e [SEP] r\n\nDecompose the question "c?"'
    assert cut_at_stop(out, DecompositionPrompt("synthetic").stop).endswith("[SEP] r")


class _Recorder(DecompositionBackend):
    kind = "recorder"

    def __init__(self) -> None:
        self.stop = ["default"]
        self.stop_given = False
        self.seen: list[Any] = []

    @property
    def model_name(self) -> str:
        return "recorder"

    def generation_settings(self) -> dict[str, Any]:
        return {"stop": self.stop}

    def generate_outcomes(self, prompts: Sequence[str]) -> list[GenerationOutcome]:
        self.seen.append(list(self.stop))
        return [GenerationOutcome("[SUBQ] a? [ANS] b [SCHEMA] e [SEP] r") for _ in prompts]


def test_the_decomposition_run_hands_the_stop_over(tmp_path: Path) -> None:
    write_jsonl([KBQAExample(qid="q1", question="a?")], tmp_path / "in.jsonl")
    backend = _Recorder()
    prompt = DecompositionPrompt("cwq")
    summary = decompose_file(
        tmp_path / "in.jsonl", tmp_path / "out.jsonl", backend=backend, prompt=prompt, progress=False
    )
    assert summary.ok == 1 and backend.seen == [prompt.stop]
