"""``kbqa kb query`` and ``kbqa sexpr run`` against an endpoint that does not answer: one line on stderr, exit 2.

A store never raises for a failed query; the tools check an endpoint once (``ping``, with the store's
retries and back-off, ≈ 3.5 s) before running anything, so a wrong URL or a server that is down is a
usage error, not a JSON result (or a batch of error rows) on stdout.
"""

from __future__ import annotations

import pytest

from kbqa_lit.cli import main
from kbqa_lit.kb.virtuoso.server import free_port


@pytest.fixture()
def closed_url() -> str:
    """The URL of a local port nothing listens on (connections are refused)."""
    return f"http://127.0.0.1:{free_port()}/sparql"


def _expect_unreachable(capsys: pytest.CaptureFixture[str], code: int, command: str, url: str) -> None:
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kbqa {command}: error: SPARQL endpoint {url} is unreachable (4 attempt(s))")
    assert "Connection refused" in lines[0]


def test_kb_query_on_an_unreachable_endpoint(closed_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["kb", "query", "--store", closed_url, "--timeout", "2", "ASK {}"])
    _expect_unreachable(capsys, code, "kb", closed_url)


def test_sexpr_run_on_an_unreachable_endpoint(closed_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sexpr", "run", "--store", closed_url, "(JOIN film.film.directed_by m.0abc)"])
    _expect_unreachable(capsys, code, "sexpr", closed_url)
