"""The Keqing run config: the shipped file parses, --set overrides are typed, bad values are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.llm.hf_backend import HFCausalLMBackend
from kbqa_lit.pipelines.keqing.config import load_keqing_config

RUN_YAML = Path(__file__).resolve().parents[3] / "configs" / "keqing" / "run.yaml"


def test_the_shipped_run_parses_with_its_backend_and_overrides():
    cfg = load_keqing_config(RUN_YAML, {"data.file": "other.jsonl", "matching.top_k": 5, "kb.semantics": "plain"})
    assert isinstance(cfg.decomposer.backend, HFCausalLMBackend)
    assert cfg.decomposer.backend.stop == [] and cfg.linking.mode == "dataset-given"
    assert (cfg.data.file, cfg.matching.top_k, cfg.kb.semantics) == ("other.jsonl", 5, "plain")
    assert cfg.reasoner.kind == "encoder" and cfg.retrieval.select == "union"  # the paper's, with the stand-in
    assert cfg.reasoner.scope == "step"  # the paper's, with kind llm
    paper = load_keqing_config(RUN_YAML, {"retrieval.select": "union", "reasoner.scope": "last"})
    assert (paper.retrieval.select, paper.reasoner.scope) == ("union", "last")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kb.semantics": "exclude-everything"}, "semantics"),
        ({"matching.top_kk": 3}, "top_kk"),
        ({"decomposer.backend": None}, "decomposer.backend is required"),
        ({"reasoner.kind": "llm"}, "needs reasoner.backend"),
        ({"reasoner.scope": "every"}, "scope"),
        ({"retrieval.select": "all"}, "select"),
    ],
)
def test_bad_values_name_the_file_and_the_field(overrides, message):
    with pytest.raises(UserInputError, match=message):
        load_keqing_config(RUN_YAML, overrides)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(UserInputError, match="no such config"):
        load_keqing_config(tmp_path / "nope.yaml")
