"""The Virtuoso that ``kbqa kb serve-virtuoso`` starts is reachable from this machine only, with no default login.

Issue 31, scenario 8: the server's ``virtuoso.ini`` binds both listeners to ``127.0.0.1``; the
process listens on nothing else (read from ``/proc``); ``dba``/``dba`` is refused by isql while
the password in the state file works; Virtuoso's WebDAV account ``dav``/``dav`` is refused over
HTTP; an update sent straight to ``/sparql`` (not through :class:`EndpointStore`, which refuses it
itself) is refused by the server.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from kbqa_lit.kb.virtuoso.server import VirtuosoServer, find_binaries, free_port
from tests.helpers.run_if import run_if

pytestmark = [pytest.mark.virtuoso, pytest.mark.slow, run_if(virtuoso=True)]


def _listening(pid: int) -> set[tuple[str, int]]:
    """``(address, port)`` of every TCP socket the process listens on (``/proc/net/tcp`` and ``tcp6``)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            addr, port = cols[1].split(":")
            if len(addr) == 8:
                ip = ".".join(str(b) for b in reversed(bytes.fromhex(addr)))
            else:
                ip = "ipv6:" + addr
            found.add((ip, int(port, 16)))
    return found


def _isql(port: int, user: str, password: str) -> subprocess.CompletedProcess[str]:
    _, isql = find_binaries()
    return subprocess.run(
        [isql, f"127.0.0.1:{port}", user, password, "VERBOSE=OFF", "BANNER=OFF"],
        input="select 1;\n",
        capture_output=True,
        text=True,
        timeout=30,
    )


def _http_status(request: urllib.request.Request) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def test_served_virtuoso_listens_on_localhost_only_without_default_logins(tmp_path: Path) -> None:
    (tmp_path / "kb.nt").write_text(
        "<http://rdf.freebase.com/ns/m.a> <http://rdf.freebase.com/ns/r.s> <http://rdf.freebase.com/ns/m.b> .\n"
    )
    vdir, port, isql_port = tmp_path / "vdb", free_port(), free_port()
    serve = subprocess.run(
        [sys.executable, "-m", "kbqa_lit", "kb", "serve-virtuoso", "--data", str(tmp_path / "kb.nt")]
        + ["--dir", str(vdir), "--port", str(port), "--isql-port", str(isql_port), "--memory", "256M"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    server = VirtuosoServer(vdir)
    try:
        assert serve.returncode == 0, serve.stderr
        pid = json.loads(serve.stdout)["pid"]
        ini = (vdir / "virtuoso.ini").read_text()
        assert f"ServerPort = 127.0.0.1:{isql_port}\n" in ini and f"ServerPort = 127.0.0.1:{port}\n" in ini
        assert "DisableUnixSocket = 1" in ini
        assert _listening(pid) == {("127.0.0.1", port), ("127.0.0.1", isql_port)}

        password = json.loads((vdir / "kbqa-virtuoso.json").read_text())["password"]
        assert password != "dba" and len(password) >= 16
        refused = _isql(isql_port, "dba", "dba")  # one failed login (Virtuoso blocks the IP after 4)
        assert "Bad login" in refused.stdout + refused.stderr
        assert "*** Error" not in _isql(isql_port, "dba", password).stderr

        # before: 207 here, and a PUT of a file into /DAV/home/dav/ was 201 Created
        dav = urllib.request.Request(f"http://127.0.0.1:{port}/DAV/", method="PROPFIND", headers={"Depth": "0"})
        dav.add_header("Authorization", "Basic " + base64.b64encode(b"dav:dav").decode())
        assert _http_status(dav)[0] == 401

        update = "INSERT DATA { GRAPH <http://freebase.com> { <http://a> <http://b> <http://c> } }"
        body = urllib.parse.urlencode({"query": update}).encode()
        status, text = _http_status(urllib.request.Request(f"http://127.0.0.1:{port}/sparql", data=body))
        assert status != 200 and "No permission" in text
    finally:
        server.cleanup()
    assert not server.is_running()
