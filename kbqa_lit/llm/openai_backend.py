"""A decomposition backend for any OpenAI-compatible HTTP server (vLLM, TGI, llama.cpp, hosted APIs).

Requests go through one :class:`requests.Session` whose adapter retries with exponential backoff
(urllib3 :class:`~urllib3.util.retry.Retry`) on connection errors, read timeouts, 429 and 5xx
(honouring ``Retry-After``); at most ``concurrency`` requests are in flight (a thread pool).

Outcomes:

- 2xx with a well-formed body → the text;
- a read timeout, a 429/5xx after the last retry, another 4xx (a prompt over the context length),
  or a malformed body → a failure recorded for that prompt (not cached, so a rerun retries it);
- 401/403 (bad or missing API key), 404 (wrong URL, mode or model) or a server that cannot be
  reached → :class:`~kbqa_lit.llm.backends.DecompositionBackendError` naming the URL; the
  remaining requests are cancelled.

The API key is read from the environment variable named by ``api_key_env`` (never from a
config file) and sent as ``Authorization: Bearer <key>``; with the variable unset no header is
sent (local servers need none).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError, ReadTimeoutError
from urllib3.util.retry import Retry

from kbqa_lit.errors import check_choice
from kbqa_lit.llm.backends import DecompositionBackend, DecompositionBackendError, GenerationOutcome

log = logging.getLogger(__name__)

RETRY_STATUSES = (429, 500, 502, 503, 504)
FATAL_STATUSES = (401, 403, 404)
DEFAULT_STOP = ("Decompose the question",)


class _Fatal(Exception):
    """Internal: a failure that makes every further request pointless."""


class OpenAICompatibleBackend(DecompositionBackend):
    """Decompositions from an OpenAI-compatible ``/v1/chat/completions`` or ``/v1/completions`` endpoint.

    Args:
        base_url: The API root including ``/v1`` (``http://127.0.0.1:8000/v1``).
        model: The model name the server knows (``meta-llama/Llama-2-7b-chat-hf``).
        mode: ``chat`` (``/chat/completions``, the prompt as one user message) or ``completions``
            (``/completions``, the raw prompt; best for base models).
        api_key_env: Name of the environment variable that holds the API key (``None``: no key).
        max_tokens: Maximum number of generated tokens per decomposition.
        temperature: Sampling temperature (0 = greedy, reproducible and cacheable).
        stop: Stop strings, sent with every request; ``None``: the decomposition prompt's (handed
            over by the run, e.g. after the result line), else the next case's header.
        timeout: Seconds to wait for each request (connect and read).
        retries: Retries after a connection error, read timeout, 429 or 5xx.
        backoff: Backoff factor of the retries (waits ``backoff * 2**n`` seconds).
        concurrency: Maximum number of requests in flight.
        extra_body: Extra JSON fields sent with every request (``top_p``, ``seed``...); part of the
            cache identity.
    """

    kind = "openai-compatible"

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000/v1",
        model: str = "meta-llama/Llama-2-7b-chat-hf",
        mode: Literal["chat", "completions"] = "chat",
        api_key_env: str | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        concurrency: int = 8,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        check_choice("mode", mode, ("chat", "completions"), error=DecompositionBackendError)
        if concurrency < 1:
            raise DecompositionBackendError(f"concurrency must be >= 1, got {concurrency}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.mode = mode
        self.api_key_env = api_key_env
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.stop = list(DEFAULT_STOP if stop is None else stop)
        #: Whether ``stop`` was given (else the decomposition prompt's stop strings replace the default).
        self.stop_given = stop is not None
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.extra_body = dict(extra_body or {})
        self._session: requests.Session | None = None

    @property
    def model_name(self) -> str:
        """The server-side model name."""
        return self.model

    @property
    def url(self) -> str:
        """The endpoint URL of the chosen mode."""
        return f"{self.base_url}/{'chat/completions' if self.mode == 'chat' else 'completions'}"

    def generation_settings(self) -> dict[str, Any]:
        """Mode, max tokens, temperature, stop strings and extra body fields."""
        return {
            "mode": self.mode,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": self.stop,
            "extra_body": self.extra_body,
        }

    def _new_session(self) -> requests.Session:
        retry = Retry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            other=0,
            backoff_factor=self.backoff,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=None,  # POST too: a generation request has no side effects
            respect_retry_after_header=True,
            raise_on_status=False,  # the last 5xx response comes back and is recorded
        )
        adapter = HTTPAdapter(max_retries=retry, pool_connections=1, pool_maxsize=self.concurrency)
        session = requests.Session()
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.api_key_env and not key:
            log.warning("environment variable %s is not set; sending no API key", self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        session.headers.update(headers)
        return session

    @property
    def session(self) -> requests.Session:
        """The HTTP session (created on first use)."""
        if self._session is None:
            self._session = self._new_session()
        return self._session

    def _payload(self, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "temperature": self.temperature}
        if self.stop:
            body["stop"] = self.stop
        if self.mode == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        body.update(self.extra_body)
        return body

    def _extract(self, data: Any) -> str:
        choice = data["choices"][0]
        text = choice["message"]["content"] if self.mode == "chat" else choice["text"]
        if not isinstance(text, str):
            raise TypeError(f"the generated text is {type(text).__name__}, not a string")
        return text

    def _request(self, prompt: str) -> GenerationOutcome:
        url = self.url
        try:
            resp = self.session.post(url, json=self._payload(prompt), timeout=self.timeout)
        except requests.exceptions.ConnectTimeout as exc:
            raise _Fatal(f"cannot reach the decomposition server at {url} (connect timeout): {exc}") from None
        except requests.exceptions.Timeout:
            return GenerationOutcome(None, f"timed out after {self.timeout:g} s ({url})")
        except requests.exceptions.ConnectionError as exc:
            reason = exc.args[0].reason if exc.args and isinstance(exc.args[0], MaxRetryError) else None
            if isinstance(reason, ReadTimeoutError):
                return GenerationOutcome(None, f"timed out after {self.timeout:g} s, {self.retries} retries ({url})")
            if reason is None or isinstance(reason, NewConnectionError | ConnectTimeoutError):
                raise _Fatal(f"cannot reach the decomposition server at {url}: {exc}") from None
            return GenerationOutcome(None, f"connection failed ({url}): {exc}")
        except requests.exceptions.RequestException as exc:
            return GenerationOutcome(None, f"request failed ({url}): {exc}")
        if resp.status_code in FATAL_STATUSES:
            what = (
                "authentication failed" if resp.status_code in (401, 403) else "not found (check base_url, mode, model)"
            )
            raise _Fatal(f"{url}: HTTP {resp.status_code} {what}: {resp.text[:200]}")
        if resp.status_code >= 400:
            return GenerationOutcome(None, f"HTTP {resp.status_code} from {url}: {resp.text[:200]}")
        try:
            return GenerationOutcome(self._extract(resp.json()))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return GenerationOutcome(None, f"malformed response from {url}: {exc!r}: {resp.text[:200]}")

    def generate_outcomes(self, prompts: Sequence[str]) -> list[GenerationOutcome]:
        """Send the prompts, ``concurrency`` at a time; outcomes in prompt order.

        Raises:
            DecompositionBackendError: On 401/403/404 or an unreachable server (the URL is named).
        """
        prompts = list(prompts)
        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            futures = [pool.submit(self._request, p) for p in prompts]
            outcomes: list[GenerationOutcome] = []
            for fut in futures:
                try:
                    outcomes.append(fut.result())
                except _Fatal as exc:
                    for other in futures:
                        other.cancel()
                    raise DecompositionBackendError(str(exc)) from None
        return outcomes

    def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def __repr__(self) -> str:
        return f"OpenAICompatibleBackend({self.url!r}, model={self.model!r})"


__all__ = ["OpenAICompatibleBackend"]
