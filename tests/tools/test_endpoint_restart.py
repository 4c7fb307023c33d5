"""Virtuoso stopped and started again in the middle of ``kbqa sexpr run --batch`` (issue 31, scenario 2).

A real Virtuoso holds the synthetic world; a batch of its 700 gold S-expressions runs through
``kbqa sexpr run`` as a subprocess. The server logs every HTTP request (``HTTPLogFile``), so the
test stops it (``shutdown`` through isql, as ``kbqa kb stop-virtuoso`` does) once the run has sent
150 queries, and starts it again on the same database some seconds later.

- An outage of ≈ 6 s: the run waits (``--retry-for``, 60 s by default), finishes with exit 0, and
  its output equals that of a clean run line for line — no question turned into an error row.
- An outage longer than ``--retry-for``: the run stops with exit 2 and one line naming the endpoint
  and the bound; the output file is not written (nothing half-done to be mistaken for figures), and
  the same command run again later gives the clean output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.data.formats.synthetic import read_synthetic
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.kb.virtuoso.server import VirtuosoServer
from tests.helpers.run_if import run_if

pytestmark = [pytest.mark.virtuoso, pytest.mark.slow, run_if(virtuoso=True)]
HTTP_LOG = "http.log"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world")
    build_world(out, seed=0, size="small")
    rows = [
        {"qid": f"{ex.qid}/{sem}", "s_expression": ex.s_expression, "semantics": sem}
        for ex in (e for split in ("train", "dev", "test") for e in read_synthetic(out, split))
        for sem in ("exclude-topic",)
    ]
    (out / "batch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def server(world: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtuosoServer]:
    server = VirtuosoServer(tmp_path_factory.mktemp("vdb"), memory="256M", max_query_seconds=20)
    try:
        server.prepare(data_dirs=[world])
        ini = server.ini_path.read_text()
        server.ini_path.write_text(ini.replace("[HTTPServer]\n", f"[HTTPServer]\nHTTPLogFile = {HTTP_LOG}\n"))
        server.start(timeout=60)
        server.load([world / "kb.nt"])
        yield server
    finally:
        server.cleanup()


def _requests(server: VirtuosoServer) -> int:
    """Queries the server has logged (Virtuoso writes ``http<DDMMYYYY>.log`` for ``HTTPLogFile = http.log``)."""
    return sum(log.read_text(errors="replace").count("POST /sparql") for log in server.directory.glob("http*.log"))


def _run(server: VirtuosoServer, world: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "kbqa_lit", "sexpr", "run", "--store", server.endpoint]
    cmd += ["--batch", str(world / "batch.jsonl"), "--out", str(out), "--workers", "2", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _outage_during(server: VirtuosoServer, run: subprocess.Popen[str], down_for: float) -> float:
    """Stop the server once the run has sent 150 queries; start it again ``down_for`` s later."""
    start = _requests(server)
    deadline = time.monotonic() + 120
    while _requests(server) < start + 150:
        assert run.poll() is None, f"the run ended before the outage: {run.communicate()}"
        assert time.monotonic() < deadline, "the run sent no queries"
        time.sleep(0.05)
    server.stop()
    stopped = time.monotonic()
    assert run.poll() is None, "the run ended before the outage"
    time.sleep(down_for)
    server.start(timeout=60)
    return time.monotonic() - stopped


def test_a_run_waits_for_a_restarted_endpoint_and_equals_a_clean_run(
    server: VirtuosoServer, world: Path, tmp_path: Path
) -> None:
    clean = _run(server, world, tmp_path / "clean.jsonl")
    assert clean.wait(300) == 0, clean.communicate()
    rows = [json.loads(line) for line in (tmp_path / "clean.jsonl").read_text().splitlines()]
    assert len(rows) == 700 and not [r for r in rows if "error" in r]

    run = _run(server, world, tmp_path / "restarted.jsonl")
    outage = _outage_during(server, run, down_for=6.0)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    assert outage > 6.0
    assert (tmp_path / "restarted.jsonl").read_text() == (tmp_path / "clean.jsonl").read_text()


def test_an_outage_beyond_the_bound_stops_the_run_with_nothing_written(
    server: VirtuosoServer, world: Path, tmp_path: Path
) -> None:
    target = tmp_path / "cut.jsonl"
    run = _run(server, world, target, "--retry-for", "3")
    _outage_during(server, run, down_for=8.0)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 2, (out, err[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and server.endpoint in lines[0] and "3 s" in lines[0], err[-2000:]
    assert not target.exists()
    again = _run(server, world, target, "--retry-for", "3")
    assert again.wait(300) == 0
