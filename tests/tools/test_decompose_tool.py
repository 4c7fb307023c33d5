"""``kbqa decompose`` end to end: a real OpenAI-compatible HTTP server on 127.0.0.1, the synthetic world."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world

GOLD_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "coq" / "decompose" / "synthetic_gold.yaml"
HEADER = re.compile(r'Decompose the question "(.*)" step by step:\s*$')


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("decompose_tool_world")
    build_world(out, seed=0, size="small")
    return out


class _Server:
    """A chat-completions server answering with the gold decomposition of the question asked."""

    def __init__(self, gold: dict[str, str], status: int = 200) -> None:
        self.count = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.count += 1
                q = HEADER.search(body["messages"][-1]["content"]).group(1)
                text = f"Here it is:\n{gold.get(q, 'no idea')} [SCHEMA] {q.split()[-1]} [SEP] r.a.b"
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _config(tmp_path, base_url: str) -> str:
    path = tmp_path / "decompose.yaml"
    path.write_text(
        "backend:\n"
        "  class_path: kbqa_lit.llm.openai_backend.OpenAICompatibleBackend\n"
        f"  init_args: {{base_url: '{base_url}', model: tiny, retries: 0, timeout: 5, concurrency: 2}}\n"
        "prompt: {dataset: synthetic}\n"
        "batch_size: 3\n"
        f"cache: {tmp_path / 'cache.sqlite'}\n"
    )
    return str(path)


def _run(args, capsys):
    code = main(["decompose", *args, "--no-progress"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def test_decompose_against_a_local_server(tmp_path, world, capsys):
    examples = list(read_jsonl(world / "test.jsonl"))[:6]
    src = tmp_path / "in.jsonl"
    write_jsonl(examples, src)
    gold = {ex.question: ex.decomposition for ex in examples[:5]}  # the 6th gets an unusable answer
    out = tmp_path / "out.jsonl"
    with _Server(gold) as url:
        cfg = _config(tmp_path, url)
        code, summary, err = _run(["--config", cfg, "--input", str(src), "--out", str(out)], capsys)
        assert code == 0, err
        assert {k: summary[k] for k in ("n", "ok", "failed", "gold", "cached")} == {
            "n": 6,
            "ok": 5,
            "failed": 1,
            "gold": 0,
            "cached": 0,
        }
        assert summary["seconds"] >= 0 and summary["variant"] == "full" and summary["source"] == "backend"
        rows = list(read_jsonl(out))
        assert [r.decomposition for r in rows[:5]] == [ex.decomposition for ex in examples[:5]]
        assert rows[5].decomposition is None and "no [SUBQ] step" in rows[5].meta["decomposition_error"]
        assert rows[0].meta["decomposition_schema"]["relations"] == ["r.a.b"]
        # the same run again: everything usable comes from the cache
        code, again, _ = _run(
            [
                "--config",
                cfg,
                "--input",
                str(src),
                "--out",
                str(tmp_path / "o2.jsonl"),
                "--variant",
                "placeholders",
                "--limit",
                "4",
            ],
            capsys,
        )
        assert (again["n"], again["ok"], again["cached"], again["variant"]) == (4, 4, 4, "placeholders")
        assert all("[ANS] #1" in r.decomposition for r in read_jsonl(tmp_path / "o2.jsonl"))


def test_gold_source_and_shipped_config(tmp_path, world, capsys):
    out = tmp_path / "gold.jsonl"
    code, summary, err = _run(
        ["--config", str(GOLD_CONFIG), "--input", str(world / "dev.jsonl"), "--out", str(out), "--limit", "10"],
        capsys,
    )
    assert code == 0, err
    assert (summary["n"], summary["gold"], summary["ok"], summary["failed"]) == (10, 10, 0, 0)
    assert all(r.meta["decomposition_status"] == "gold" for r in read_jsonl(out))


def test_user_errors_exit_2(tmp_path, world, capsys):
    code, _, err = _run(["--config", str(tmp_path / "none.yaml"), "--input", "x", "--out", "y"], capsys)
    assert code == 2 and "no such decomposition config" in err
    with _Server({}, status=401) as url:
        cfg = _config(tmp_path, url)
        code, _, err = _run(
            ["--config", cfg, "--input", str(world / "dev.jsonl"), "--out", str(tmp_path / "o.jsonl")], capsys
        )
    assert code == 2 and "HTTP 401" in err and url in err


def test_masked_entities_reach_the_model_as_slots_and_come_back_as_names(tmp_path, capsys):
    """The linked entity (meta.entity_candidates, not the gold) is [E0] in the prompt and its name in the row."""
    from kbqa_lit.data.schema import KBQAExample

    ex = KBQAExample(
        qid="q1",
        question="Which directors has Amos Garrick worked with?",
        topic_entities={"m.gold": "Amos Garrick"},
        meta={"entity_candidates": {"m.linked": "Amos Garrick"}},
    )
    data = tmp_path / "in.jsonl"
    write_jsonl([ex], data)
    masked = "Which directors has [E0] worked with?"
    with _Server({masked: "[SUBQ] what films has [E0] appeared in? [ANS] #1"}) as url:
        cfg = _config(tmp_path, url)
        out = str(tmp_path / "o.jsonl")
        args = ["--config", cfg, "--set", "mask_entities=true", "--input", str(data), "--out", out]
        code, summary, err = _run(args, capsys)
    assert code == 0, err
    assert summary["ok"] == 1  # the server found the masked question: the prompt said [E0], not the name
    (row,) = read_jsonl(tmp_path / "o.jsonl")
    assert row.decomposition == "[SUBQ] what films has Amos Garrick appeared in? [ANS] #1"
