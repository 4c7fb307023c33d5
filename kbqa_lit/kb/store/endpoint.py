"""A SPARQL 1.1 endpoint over HTTP as a knowledge base (:class:`EndpointStore`; Virtuoso, QLever, Fuseki).

Same contract as the embedded store (:mod:`kbqa_lit.kb.store.base`): answers of the first projected
variable, a per-query timeout, updates refused, results cached; an unreachable endpoint raises
:class:`~kbqa_lit.errors.EndpointUnreachableError` only from :meth:`EndpointStore.ping`.
"""

from __future__ import annotations

import re
import time
from typing import Any

from kbqa_lit.errors import EndpointUnreachableError, StoreError, check_choice
from kbqa_lit.kb.lf.iri import local_id
from kbqa_lit.kb.lf.literals import canonical_literal
from kbqa_lit.kb.store.base import ExecutionResult, _CachingStore
from kbqa_lit.kb.store.cache import ExecutionCache

#: The longest wait between two attempts.
MAX_BACKOFF = 5.0


def _http_body(exc: BaseException) -> str:
    """Return the response body that SPARQLWrapper folded into an exception message."""
    text = str(exc)
    _, sep, body = text.partition("Response:\n")
    if not sep:
        return text
    body = body.strip()
    if body[:2] in ("b'", 'b"'):
        try:
            import ast

            body = ast.literal_eval(body).decode("utf-8", "replace")
        except (ValueError, SyntaxError):
            pass
    return " ".join(body.split())[:1000]


class EndpointStore(_CachingStore):
    """A SPARQL 1.1 endpoint over HTTP (Virtuoso, QLever, Fuseki, ``oxigraph serve-read-only``).

    Connection failures, HTTP 5xx and dropped connections are retried ``retries`` times with
    exponential back-off (``backoff``, ``2·backoff``, ... at most 5 s apart). Once the endpoint has
    answered, a connection failure or HTTP 502–504 is an outage (a restart, say): the query keeps
    retrying until ``retry_for`` seconds have passed, and a query that still fails is an
    ``unreachable`` result (:class:`~kbqa_lit.kb.store.result.ExecutionResult`); later queries then
    fail after their ``retries`` until the endpoint answers again. An endpoint that never answered
    (a wrong URL) fails after ``retries``. A read timeout (the query is slow),
    HTTP 4xx and a syntax error that Virtuoso answers with HTTP 500 (SQLSTATE ``37000``, e.g. a raw
    NUL in a string) are not retried. ``timeout`` bounds each blocking socket operation (connect, each
    read), so a server that trickles bytes could exceed it. Bound the server's work with its own
    setting (Virtuoso: ``MaxQueryExecutionTime`` in virtuoso.ini, which ``kbqa kb serve-virtuoso``
    sets; it answers HTTP 500 ``S1T00``, reported as a failed query). Do NOT pass Virtuoso's
    ``timeout`` request parameter: it returns partial results with HTTP 200 (only an
    ``X-SQL-State: S1TAT`` header says so), which would be cached as answers. Typed-literal
    answers are put in canonical form (:mod:`kbqa_lit.kb.lf.literals`) so they equal Oxigraph's.

    Args:
        url: The endpoint URL (``http://host:8890/sparql``).
        timeout: Socket timeout in seconds per attempt.
        retries: Extra attempts after a connection failure or a 5xx.
        backoff: Seconds before the first retry; doubled each time (at most 5 s).
        retry_for: Seconds a query keeps retrying through an outage of an endpoint that has
            answered before (connection refused or reset, HTTP 502–504).
        disk_cache: An optional shared on-disk cache.
        cache_size: Capacity of the in-memory LRU cache.
        method: ``"POST"`` (form-encoded, no URL-length limit) or ``"GET"``.
        params: Extra request parameters sent with every query.
        agent: The HTTP User-Agent.

    Raises:
        StoreError: When ``url`` is not an http(s) URL.

    """

    def __init__(
        self,
        url: str,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        retry_for: float = 60.0,
        disk_cache: ExecutionCache | None = None,
        cache_size: int = 100_000,
        method: str = "POST",
        params: dict[str, str] | None = None,
        agent: str = "kbqa_lit",
    ) -> None:
        self._args = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        if not re.match(r"^https?://[^\s/]+", url, re.IGNORECASE):
            raise StoreError(f"not an http(s) SPARQL endpoint URL: {url!r}")
        check_choice("method", method.upper(), ("GET", "POST"))
        self.url = url
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.retry_for = max(0.0, float(retry_for))
        self.method = method.upper()
        self.params = dict(params or {})
        self.agent = agent
        self.identity = f"sparql:{url}"
        self._init_cache(cache_size, disk_cache)
        self._answered = False  # the endpoint answered once: a later connection failure is an outage
        self._gave_up = False  # a query outlasted retry_for; until the endpoint answers, do not wait again

    def _attempt(self, sparql: str) -> tuple[str, Any]:
        """One HTTP request; return ``(outcome, payload)``, outcome in ok/bad/retry/down/timeout/fail.

        ``down``: no answer from the server (connection refused or reset, HTTP 502–504);
        ``retry``: another 5xx.
        """
        import http.client
        import urllib.error

        from SPARQLWrapper import GET, JSON, POST, SPARQLWrapper
        from SPARQLWrapper.SPARQLExceptions import (
            EndPointInternalError,
            EndPointNotFound,
            QueryBadFormed,
            SPARQLWrapperException,
        )

        client = SPARQLWrapper(self.url, agent=self.agent)
        client.setReturnFormat(JSON)
        client.setMethod(POST if self.method == "POST" else GET)
        client.timeout = self.timeout  # setTimeout() truncates to int (0.5 → no timeout at all)
        for key, value in self.params.items():
            client.addParameter(key, value)
        client.setQuery(sparql)
        try:
            data = client.query().convert()
        except QueryBadFormed as exc:
            return "bad", f"the endpoint rejected the query (HTTP 400): {_http_body(exc)}"
        except EndPointNotFound as exc:
            return "fail", f"no SPARQL endpoint at {self.url} (HTTP 404): {_http_body(exc)}"
        except EndPointInternalError as exc:
            body = _http_body(exc)
            if re.search(r"time[ -]?out|execution time|timed out", body, re.IGNORECASE):
                return "timeout", f"timeout: the endpoint gave up on the query (HTTP 500): {body}"
            if re.search(r"\b37000 Error\b", body):  # Virtuoso's SQL lexer (SQ074...): the query, not the server
                return "bad", f"the endpoint rejected the query (HTTP 500, syntax error): {body}"
            return "retry", f"endpoint error (HTTP 500): {body}"
        except urllib.error.HTTPError as exc:
            outcome = "down" if exc.code in (502, 503, 504) else "retry" if exc.code >= 500 else "fail"
            return outcome, f"HTTP {exc.code} {exc.reason} from {self.url}"
        except urllib.error.URLError as exc:
            return "down", f"cannot connect to {self.url}: {exc.reason}"
        except TimeoutError:
            return "timeout", f"timeout: no answer from {self.url} within {self.timeout:g} s"
        except (ConnectionError, http.client.HTTPException) as exc:
            return "down", f"connection to {self.url} failed: {type(exc).__name__}: {exc}"
        except SPARQLWrapperException as exc:
            return "fail", f"{type(exc).__name__}: {_http_body(exc)}"
        except ValueError as exc:
            return "fail", f"the endpoint {self.url} did not return SPARQL JSON results: {exc}"
        return "ok", data

    def _request(self, sparql: str) -> tuple[str, Any, int]:
        """Run attempts with back-off (an outage: up to ``retry_for``); return ``(outcome, payload, attempts)``."""
        attempts = 0
        first_failure: float | None = None
        while True:
            attempts += 1
            outcome, payload = self._attempt(sparql)
            if outcome not in ("retry", "down"):
                self._answered, self._gave_up = True, False
                return outcome, payload, attempts
            now = time.monotonic()
            first_failure = now if first_failure is None else first_failure
            if attempts > self.retries:
                outage = outcome == "down" and self._answered and not self._gave_up
                if not outage or now - first_failure >= self.retry_for:
                    self._gave_up = self._gave_up or outage
                    return outcome, payload, attempts
            time.sleep(min(self.backoff * 2 ** (attempts - 1), MAX_BACKOFF))

    def _run(self, sparql: str) -> tuple[ExecutionResult, bool]:
        start = time.monotonic()
        outcome, payload, attempts = self._request(sparql)
        if outcome == "ok":
            try:
                return ExecutionResult(_answers_from_json(payload)), False
            except (KeyError, TypeError, IndexError, AttributeError) as exc:
                msg = f"malformed SPARQL JSON results from {self.url}: {type(exc).__name__}: {exc}"
                return ExecutionResult([], False, msg), False
        if outcome in ("retry", "down"):
            waited = time.monotonic() - start
            payload = f"SPARQL endpoint {self.url} is unreachable after {attempts} attempts ({waited:.0f} s): {payload}"
        return ExecutionResult([], False, payload, unreachable=outcome == "down"), outcome == "bad"

    def ping(self) -> float:
        """Check that the endpoint answers a trivial query (``ASK {}``).

        Returns:
            The round-trip time in seconds.

        Raises:
            EndpointUnreachableError: Naming the URL, when it does not answer after the retries.

        """
        start = time.perf_counter()
        outcome, payload, attempts = self._request("ASK {}")
        if outcome in ("ok", "bad"):
            return time.perf_counter() - start
        raise EndpointUnreachableError(f"SPARQL endpoint {self.url} is unreachable ({attempts} attempt(s)): {payload}")

    def __repr__(self) -> str:
        return f"EndpointStore({self.url!r}, timeout={self.timeout:g})"


def _answers_from_json(data: dict[str, Any]) -> list[str]:
    """Turn SPARQL JSON results into answers of the first projected variable."""
    if "boolean" in data:
        return ["true" if data["boolean"] else "false"]
    variables = data["head"].get("vars") or []
    if not variables:
        return []
    first = variables[0]
    if variables == ["__ASK_RETVAL"]:  # Virtuoso answers ASK as a one-column SELECT
        return ["true" if data["results"]["bindings"] else "false"]
    seen: dict[str, None] = {}
    for binding in data["results"]["bindings"]:
        term = binding.get(first)
        if term is None:
            continue
        kind, value = term["type"], term["value"]
        if kind == "uri":
            value = local_id(value)
        elif kind == "bnode":
            value = "_:" + value
        elif kind in ("literal", "typed-literal"):
            value = canonical_literal(value, term.get("datatype"))
        seen.setdefault(value, None)
    return list(seen)
