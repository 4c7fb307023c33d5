"""CoQ step 1 reads no gold: ``kbqa decompose`` on a test file stripped of its gold fields sends the same
prompts and writes the same decompositions as on the full file.

The LLM is a real OpenAI-compatible HTTP server on 127.0.0.1 whose scripted "model" decomposes each
question it is asked (the question read back from the prompt), so what it answers depends only on
what the prompt carries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.schema import read_jsonl
from tests.helpers.llm_http_server import LLMServer, completion, prompt_of, question_of
from tests.helpers.no_gold import assert_same_predictions, stage_world, write_full_and_stripped


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("decompose_nogold")
    data = stage_world(root, n_test=6)
    return write_full_and_stripped(list(read_jsonl(data / "test.jsonl")), root, "test.jsonl")


def _model(files: tuple[Path, Path]):
    """A scripted LLM: a worked decomposition of every test question (keyed by the question text)."""
    chains = {ex.question: ex.decomposition for ex in read_jsonl(files[0].parent.parent / "world" / "test.jsonl")}

    def respond(server: LLMServer, path: str, body: dict) -> tuple[int, dict, float]:
        q = question_of(body)
        words = [w for w in q.rstrip("?").split() if w[:1].isupper()][1:] or ["it"]
        text = f"Sure.\n{chains[q]} [SCHEMA] {' '.join(words)} [SEP] {q.split()[1]}\n"
        return 200, completion(path, text), 0.0

    return respond


def _decompose(tmp_path: Path, url: str, src: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    cfg = tmp_path / "decompose.yaml"
    cfg.write_text(
        "backend:\n"
        "  class_path: kbqa_lit.llm.openai_backend.OpenAICompatibleBackend\n"
        f"  init_args: {{base_url: '{url}', model: tiny, retries: 0, timeout: 10, concurrency: 1}}\n"
        "prompt: {dataset: synthetic}\n"
        "batch_size: 4\n"
        "cache: null\n"  # every run asks the server: the prompts are what is compared
    )
    code = main(["decompose", "--config", str(cfg), "--input", str(src), "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_decompose_reads_no_gold(files, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full_in, stripped_in = files
    prompts, outs = {}, {}
    for name, src in (("full", full_in), ("stripped", stripped_in)):
        outs[name] = tmp_path / f"{name}.jsonl"
        with LLMServer(_model(files)) as server:
            summary = _decompose(tmp_path, server.base_url, src, outs[name], capsys)
            prompts[name] = [prompt_of(b) for b in server.bodies]
        assert (summary["n"], summary["ok"], summary["failed"]) == (6, 6, 0)  # no crash, nothing failed
    assert prompts["stripped"] == prompts["full"] and len(prompts["full"]) == 6
    assert_same_predictions(outs["full"], outs["stripped"])
    rows = list(read_jsonl(outs["stripped"]))
    assert all(r.meta["decomposition_status"] == "ok" and r.decomposition.startswith("[SUBQ]") for r in rows)
    assert len({r.decomposition for r in rows}) == len(rows)  # one per question, not a constant
    assert all(r.meta["decomposition_schema"]["relations"] for r in rows)
