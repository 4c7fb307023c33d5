"""Keqing end to end on the synthetic world: the oracle decomposition, a served LLM, stripped gold fields."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from kbqa_lit.data.keqing.targets import decomposition_rows
from kbqa_lit.data.keqing.templates import mine_templates
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.keqing.config import load_keqing_config
from kbqa_lit.pipelines.keqing.run import run_keqing
from tests.helpers.llm_http_server import LLMServer, completion, prompt_of

RUN_YAML = Path(__file__).resolve().parents[3] / "configs" / "keqing" / "run.yaml"
INSTRUCTION = "Decompose the question into sub-questions (JSON)."  # configs/keqing/run.yaml's
QUESTION = re.compile(r"\nQuestion: (.*)\nSub-questions: $", re.S)


@pytest.fixture(scope="module")
def world(world_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("keqing_run")
    build_store(root / "kb", [world_dir / "kb.nt"], "nt")
    mine_templates(read_jsonl(world_dir / "train.jsonl")).save(root / "templates.json")
    test = [ex for ex in read_jsonl(world_dir / "test.jsonl")][:24]
    write_jsonl(test, root / "test.jsonl")
    return {"root": root, "kb": root / "kb", "templates": root / "templates.json", "test": root / "test.jsonl"}


def config(world: dict[str, Path], out: str, **overrides):
    base = {
        "data.file": str(world["test"]),
        "kb.store": str(world["kb"]),
        "templates": str(world["templates"]),
        "linking.mode": "predicted",
        "matching.cache_dir": str(world["root"] / "cache"),
        "out": str(world["root"] / out),
    }
    return load_keqing_config(RUN_YAML, {**base, **overrides})


def records(path: str) -> dict[str, dict]:
    return {r["qid"]: r for r in map(json.loads, Path(path).read_text().splitlines())}


def test_gold_decompositions_are_an_oracle_run_and_answer_the_chain_questions(world):
    summary = run_keqing(config(world, "oracle.jsonl", **{"decomposer.source": "gold", "decomposer.backend": None}))
    assert summary["oracle_inputs"] == ["decomposition"]
    figures = summary["all"]
    assert set(figures) >= {"oracle/hit1", "oracle/decomposition_em", "oracle/retrieval_recall", "failures"}
    assert not any(k in figures for k in ("hit1", "f1"))  # nothing oracle is reported under a plain name
    rows = records(summary["out"])
    chains = [r for r in rows.values() if r["decomposition"]["error"] is None]
    assert chains and sum(r["scores"]["oracle/hit1"] for r in chains) / len(chains) >= 0.8
    assert all(r["failure"] == "decomposition" for r in rows.values() if r["decomposition"]["error"])
    one = next(r for r in chains if r["failure"] is None)
    assert one["steps"][0]["template"] and one["response"].startswith("Question: ")
    assert one["response"].splitlines()[-1].startswith("Answer: ")


def _gold_outputs(world: dict[str, Path]) -> dict[str, str]:
    """Question (with its slot) -> the gold JSON: what a perfect served decomposer would write."""
    from kbqa_lit.data.keqing.templates import TemplateBank

    rows, _ = decomposition_rows(
        read_jsonl(world["test"]), TemplateBank.load(world["templates"]), instruction=INSTRUCTION
    )
    return {QUESTION.search(p).group(1): r for p, r in rows}


def test_a_served_llm_and_a_file_without_gold_fields_give_the_same_answers(world):
    gold = _gold_outputs(world)
    garbled = next(iter(gold))

    def respond(server, path, body):
        question = QUESTION.search(prompt_of(body)).group(1)
        text = "I cannot decompose that" if question == garbled else gold.get(question, "[]")
        return 200, completion(path, text), 0.0

    stripped = [
        dataclasses.replace(
            ex,
            answers=[],
            s_expression=None,
            sparql=None,
            topic_entities={},
            decomposition=None,
            meta={k: v for k, v in ex.meta.items() if k in ("dataset", "split")},
        )
        for ex in read_jsonl(world["test"])
    ]
    write_jsonl(stripped, world["root"] / "stripped.jsonl")
    with LLMServer(respond) as server:
        backend = {
            "class_path": "kbqa_lit.llm.openai_backend.OpenAICompatibleBackend",
            "init_args": {"base_url": server.base_url, "model": "tiny", "retries": 0, "timeout": 10.0},
        }
        cache = str(world["root"] / "cache.sqlite")
        full = run_keqing(config(world, "served.jsonl", **{"decomposer.backend": backend, "decomposer.cache": cache}))
        asked = server.requests
        again = run_keqing(config(world, "again.jsonl", **{"decomposer.backend": backend, "decomposer.cache": cache}))
        assert server.requests == asked and again["all"] == full["all"]  # every output came from the cache
        bare = run_keqing(
            config(
                world,
                "bare.jsonl",
                **{"decomposer.backend": backend, "data.file": str(world["root"] / "stripped.jsonl")},
            )
        )
    assert full["oracle_inputs"] == [] and "hit1" in full["all"] and full["all"]["parsed"] < 1.0
    rows, bare_rows = records(full["out"]), records(bare["out"])
    assert [r["answers"] for r in rows.values()] == [r["answers"] for r in bare_rows.values()]
    assert sum(bool(r["answers"]) for r in rows.values()) >= 8  # the comparison is not vacuous
    garbled_row = next(r for r in rows.values() if r["decomposition"]["raw"] == "I cannot decompose that")
    assert garbled_row["failure"] == "decomposition" and garbled_row["answers"] == []
    assert garbled_row["decomposition"]["error"] == "no JSON sub-question in the output"


def test_the_extensions_change_only_what_they_name_and_say_so(world):
    gold = {"decomposer.source": "gold", "decomposer.backend": None}
    paper = records(run_keqing(config(world, "paper.jsonl", **gold))["out"])
    fallback = records(run_keqing(config(world, "fallback.jsonl", **gold, extensions=["path_fallback"]))["out"])
    assert {(r["form"], tuple(r["extensions"])) for r in paper.values()} == {("paper", ())}
    assert {(r["form"], tuple(r["extensions"])) for r in fallback.values()} == {("extended", ("path_fallback",))}
    assert not any("extension" in r for r in paper.values())
    empty = [q for q, r in paper.items() if not r["answers"]]
    assert empty, "the synthetic world has questions Keqing's chains cannot answer"
    for qid, row in fallback.items():
        if paper[qid]["answers"]:  # answered by the chains, no override margin: untouched
            assert row["answers"] == paper[qid]["answers"] and row["extension"] is None
    filled = [q for q in empty if fallback[q]["answers"]]
    assert filled and all(fallback[q]["extension"]["by"] == "path_fallback" for q in filled)
    assert all(fallback[q]["extension"]["s_expression"].startswith("(") for q in filled)
    # the answer-type check on top: only answers it re-typed change, each naming the check
    typed = records(run_keqing(config(world, "typed.jsonl", **gold, form="extended"))["out"])
    for qid, row in typed.items():
        done = row["extension"]
        if done is None:
            assert row["answers"] == paper[qid]["answers"]
        else:
            assert done["by"] in ("path_fallback", "answer_type")
            assert done["by"] == "answer_type" or not paper[qid]["answers"]
