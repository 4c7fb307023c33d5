"""The fine-tuned reasoner's rows (context chain): the prompt over the gold chain's triples, gold names in context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.datamodules.prompt_rows import PromptRowsDataModule, read_prompt_rows
from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.terms import fb_iri
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.keqing.reasoning import LLMReasoner, context_names, parse_answers
from kbqa_lit.pipelines.keqing.reasoning_data import reasoning_rows
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor

DIRECTED = "film.film.directed_by"
NAMES = {"m.a": "Heat", "m.b": "Ronin", "m.d": "Michael Mann"}


def test_rows_answer_in_the_context_and_parse_back(tmp_path: Path):
    (tmp_path / "kb.nt").write_text(
        "".join(f"{fb_iri(s)} {fb_iri(DIRECTED)} {fb_iri('m.d')} .\n" for s in ("m.a", "m.b")), encoding="utf-8"
    )
    build_store(tmp_path / "kb", [tmp_path / "kb.nt"], "nt")
    store = OxigraphStore(tmp_path / "kb")
    examples = [
        KBQAExample(
            "1",
            "what did [Michael Mann] direct",
            [Answer("m.a", "Heat"), Answer("m.b", "Ronin")],
            {"m.d": "Michael Mann"},
            f"(JOIN {DIRECTED} m.d)",
        ),
        KBQAExample(
            "2", "who directed [Heat]", [Answer("m.z", "Nobody")], {"m.a": "Heat"}, f"(JOIN (R {DIRECTED}) m.a)"
        ),
        KBQAExample("3", "how many", [], {}, f"(COUNT (JOIN {DIRECTED} m.d))"),
    ]
    executor = ChainExecutor(store, "plain")
    rows, skipped = reasoning_rows(examples, executor, NAMES.get, max_triples=5, context="chain")
    store.close()
    assert [r["qid"] for r in rows] == ["1"]
    assert skipped == {"no gold answer in the context": 1, "not a JOIN chain": 1}
    prompt, response = rows[0]["prompt"], rows[0]["response"]
    assert prompt == LLMReasoner(backend=None, max_triples=5).prompt(  # type: ignore[arg-type]
        "what did [Michael Mann] direct", [("m.a", DIRECTED, "m.d"), ("m.b", DIRECTED, "m.d")], NAMES.get
    )
    assert "(Heat, directed by, Michael Mann)" in prompt and response == "Heat\nRonin"
    names = context_names([("m.a", DIRECTED, "m.d"), ("m.b", DIRECTED, "m.d")], NAMES.get)
    assert parse_answers(response, names) == (["m.a", "m.b"], None)  # what the reasoner reads back

    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows * 4), encoding="utf-8")
    dm = PromptRowsDataModule(str(tmp_path / "rows.jsonl"), str(tmp_path / "rows.jsonl"), batch_size=2)
    row = dm.rows("train")[0]
    n = len(dm.tokenizer(prompt)["input_ids"])
    assert dm.tokenizer.decode(row["input_ids"][n:-1]) == response and set(row["labels"][:n]) == {-100}


def test_a_bad_rows_file_names_the_line(tmp_path: Path):
    (tmp_path / "rows.jsonl").write_text('{"prompt": "p", "response": "r"}\n{"prompt": 3}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"rows.jsonl:2: expected an object"):
        read_prompt_rows(tmp_path / "rows.jsonl")


def test_the_reasoning_data_command_writes_rows_of_the_context_asked_for(tmp_path: Path, capsys):
    from kbqa_lit.cli import run_tools
    from kbqa_lit.data.schema import write_jsonl

    lines = [f"{fb_iri(s)} {fb_iri(DIRECTED)} {fb_iri('m.d')} .\n" for s in ("m.a", "m.b")]
    lines += [f'{fb_iri(e)} {fb_iri("type.object.name")} "{n}"@en .\n' for e, n in NAMES.items()]
    (tmp_path / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(tmp_path / "kb", [tmp_path / "kb.nt"], "nt")
    ex = KBQAExample(
        "1", "what did [Michael Mann] direct", [Answer("m.a"), Answer("m.b")], {"m.d": "Michael Mann"},
        f"(JOIN {DIRECTED} m.d)",
    )  # fmt: skip
    write_jsonl([ex], tmp_path / "train.jsonl")
    argv = ["keqing", "reasoning-data", "--input", str(tmp_path / "train.jsonl"), "--store", str(tmp_path / "kb")]
    argv += ["--semantics", "plain", "--out", str(tmp_path / "rows.jsonl")]
    assert run_tools([*argv, "--context", "chain"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 1
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    assert "(Heat, directed by, Michael Mann)" in row["prompt"] and row["response"] == "Heat\nRonin"
    assert run_tools(argv) == 2  # the paper's per-step rows need the decomposer's template bank
    assert "bank" in capsys.readouterr().err
    assert run_tools([*argv, "--templates", str(tmp_path / "none.json")]) == 2
    assert "no such template bank" in capsys.readouterr().err
