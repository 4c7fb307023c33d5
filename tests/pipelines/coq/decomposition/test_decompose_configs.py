"""Every YAML in configs/coq/decompose/ parses and builds (the counterpart of tests/cli/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbqa_lit.errors import UserInputError
from kbqa_lit.llm.hf_backend import HFCausalLMBackend
from kbqa_lit.llm.openai_backend import OpenAICompatibleBackend
from kbqa_lit.pipelines.coq.decomposition.config import load_job, parse_config

CONFIGS = Path(__file__).resolve().parents[4] / "configs" / "coq" / "decompose"
YAMLS = sorted(CONFIGS.glob("*.yaml"))


def test_the_shipped_configs_are_there():
    assert {p.name for p in YAMLS} >= {"openai.yaml", "llama2_7b_local.yaml", "synthetic_gold.yaml"}


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: p.name)
def test_every_config_parses_and_builds(path):
    doc = yaml.safe_load(path.read_text())
    job = load_job(path)
    assert job.variant == doc.get("variant", "full") and job.source == doc.get("source", "backend")
    assert job.batch_size == doc.get("batch_size", 16) and job.cache == doc.get("cache")
    assert job.prompt.dataset == doc["prompt"]["dataset"]
    assert len(job.prompt.cases) == doc["prompt"].get("num_cases", len(job.prompt.cases)) and (
        job.prompt.cases or path.name == "trained.yaml"  # the fine-tuned stand-in reads no cases
    )
    assert job.prompt.instruction_preset == doc["prompt"].get("instruction_preset", "paper") == "paper"
    backend = doc.get("backend")
    if backend is None:
        assert job.backend is None
        return
    assert f"{type(job.backend).__module__}.{type(job.backend).__name__}" == backend["class_path"]
    for key, value in backend["init_args"].items():
        attr = {"tokenizer": "tokenizer_name", "base_url": "base_url"}.get(key, key)
        got = getattr(job.backend, attr)
        if key == "stop" and value is None:  # the prompt's stop strings, handed over by the run
            assert not job.backend.stop_given
            job.backend.set_default_stop(job.prompt.stop)
            worked = job.prompt.style == "worked"  # compact (the fine-tuned stand-in): no blank line ends a case
            assert job.backend.stop == job.prompt.stop == ["\n\n"] * worked + ["Decompose the question"]
            continue
        assert got == (value.rstrip("/") if key == "base_url" else value), f"{path.name}: backend.{key}"


def test_shipped_backends():
    local = load_job(CONFIGS / "llama2_7b_local.yaml").backend
    assert isinstance(local, HFCausalLMBackend) and local.model == "meta-llama/Llama-2-7b-hf"
    assert local._lm is None  # building the config loads no weights
    server = load_job(CONFIGS / "openai.yaml").backend
    assert isinstance(server, OpenAICompatibleBackend)
    assert server.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert server.model == "meta-llama/Llama-2-7b-chat-hf" and server.api_key_env == "OPENAI_API_KEY"
    assert "api_key" not in (CONFIGS / "openai.yaml").read_text().replace("api_key_env", "")


def test_overrides_win_over_the_file():
    job = load_job(CONFIGS / "openai.yaml", {"variant": "placeholders", "batch_size": 3, "cache": None})
    assert (job.variant, job.batch_size, job.cache) == ("placeholders", 3, "outputs/decompose/cache.sqlite")
    assert load_job(CONFIGS / "openai.yaml", with_backend=False).backend is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("variant: partial\n", "variant"),
        ("bakend: null\n", "bakend"),
        ("backend:\n  class_path: kbqa_lit.pipelines.coq.decomposition.nope.Backend\n", "backend"),
        (
            "backend:\n  class_path: kbqa_lit.llm.openai_backend.OpenAICompatibleBackend\n  init_args:\n    modle: x\n",
            "modle",
        ),
        ("prompt:\n  dataset: freebase\n", "freebase"),
        ("prompt:\n  instruction_preset: hashes\n", "instruction preset must be one of .*; got 'hashes'"),
    ],
)
def test_bad_configs_are_user_errors(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserInputError, match=match):
        load_job(path)


def test_missing_config(tmp_path):
    with pytest.raises(UserInputError, match="no such decomposition config"):
        parse_config(tmp_path / "nope.yaml")
