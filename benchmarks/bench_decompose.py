"""Decomposition throughput against a local OpenAI-compatible server with a fixed latency.

Starts a ``ThreadingHTTPServer`` on 127.0.0.1 that answers every chat request after
``--latency`` seconds, then decomposes N synthetic questions through ``OpenAICompatibleBackend``
at several concurrency limits, and once more from the SQLite cache. Prints prompts/s and the
speed-up over concurrency 1.

    .venv/bin/python benchmarks/bench_decompose.py --questions 120 --latency 0.05
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kbqa_lit.data.synthetic import build_world
from kbqa_lit.llm.backends import OpenAICompatibleBackend
from kbqa_lit.llm.response_cache import DecompositionCache
from kbqa_lit.pipelines.coq.decomposition.decompose import decompose_file
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt

QUESTION = re.compile(r'Decompose the question "(.*)" step by step:\s*$')


def serve(latency: float) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            m = QUESTION.search(body["messages"][-1]["content"])
            time.sleep(latency)
            text = f"[SUBQ] {m.group(1) if m else ''} [ANS] #1 [SCHEMA] x [SEP] r"
            payload = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload.encode())

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 128
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=120)
    ap.add_argument("--latency", type=float, default=0.05, help="server seconds per request")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        build_world(world, seed=0, size="small")
        src = Path(tmp) / "questions.jsonl"
        lines = (world / "train.jsonl").read_text().splitlines()[: args.questions]
        src.write_text("\n".join(lines) + "\n")
        server = serve(args.latency)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        prompt = DecompositionPrompt(dataset="synthetic")
        base = None
        print(f"{len(lines)} questions, server latency {args.latency * 1000:.0f} ms per request")
        for conc in args.concurrency:
            backend = OpenAICompatibleBackend(base_url=url, model="bench", concurrency=conc, timeout=30)
            out = Path(tmp) / f"out-{conc}.jsonl"
            start = time.perf_counter()
            summary = decompose_file(src, out, backend=backend, prompt=prompt, batch_size=64, progress=False)
            secs = time.perf_counter() - start
            rate = len(lines) / secs
            base = base or rate
            print(f"concurrency {conc:>2}: {secs:6.2f} s  {rate:7.1f} prompts/s  x{rate / base:4.1f}  ok={summary.ok}")
        cache = DecompositionCache(Path(tmp) / "cache.sqlite")
        backend = OpenAICompatibleBackend(base_url=url, model="bench", concurrency=8, timeout=30)
        decompose_file(src, Path(tmp) / "c1.jsonl", backend=backend, prompt=prompt, cache=cache, progress=False)
        start = time.perf_counter()
        decompose_file(src, Path(tmp) / "c2.jsonl", backend=backend, prompt=prompt, cache=cache, progress=False)
        print(f"rerun from the cache: {time.perf_counter() - start:.2f} s ({cache.hits} hits)")
        server.shutdown()


if __name__ == "__main__":
    main()
