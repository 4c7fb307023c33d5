"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the decomposition backend tests.

``LLMServer(respond)`` serves ``POST /v1/chat/completions`` and ``POST /v1/completions`` with a
``ThreadingHTTPServer`` on a free port; ``respond(server, path, body)`` returns ``(status, payload,
delay_seconds)`` for each request, so a test scripts 500s, 401s, slow replies or answers. The
server records every request body and the maximum number of requests in flight.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Respond = Callable[["LLMServer", str, dict], tuple[int, Any, float]]
QUESTION_RE = re.compile(r'Decompose the question "(.*)" step by step:\s*$')


def prompt_of(body: dict) -> str:
    """The prompt text of a chat or completions request body."""
    if "messages" in body:
        return body["messages"][-1]["content"]
    return body["prompt"]


def question_of(body: dict) -> str:
    """The question the prompt asks to decompose (its last header)."""
    m = QUESTION_RE.search(prompt_of(body))
    return m.group(1) if m else ""


def completion(path: str, text: str) -> dict:
    """A well-formed response body for the endpoint ``path``."""
    if path.endswith("/chat/completions"):
        return {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        }
    return {"object": "text_completion", "choices": [{"index": 0, "text": text}]}


def echo_decomposition(server: LLMServer, path: str, body: dict) -> tuple[int, Any, float]:
    """Answer every prompt with a one-step decomposition of its question."""
    q = question_of(body)
    return 200, completion(path, f"[SUBQ] {q} [ANS] #1 [SCHEMA] x [SEP] r"), 0.0


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 drops concurrent connects (a 1 s SYN retry)
    daemon_threads = True


class LLMServer:
    """A scripted OpenAI-compatible server (use as a context manager)."""

    def __init__(self, respond: Respond = echo_decomposition) -> None:
        self.respond = respond
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.bodies.append(body)
                    server.paths.append(self.path)
                    server.headers.append(dict(self.headers))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    status, payload, delay = server.respond(server, self.path, body)
                    if delay:
                        time.sleep(delay)
                finally:
                    # leave the in-flight count before replying: the client may send its next
                    # request as soon as it has the reply
                    with server.lock:
                        server.in_flight -= 1
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        """The API root (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        """How many requests arrived."""
        with self.lock:
            return len(self.bodies)

    def __enter__(self) -> LLMServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
