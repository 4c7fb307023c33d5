"""A local OpenLink Virtuoso 7 SPARQL endpoint: write ``virtuoso.ini``, bulk-load, start, stop.

:class:`VirtuosoServer` manages one database directory::

    with VirtuosoServer("/data/vdb", http_port=8890, isql_port=1111) as server:  # prepare + start
        server.load(["/data/kb.nt"])                 # ld_add + rdf_loader_run() + checkpoint
        store = server.store(timeout=30)             # an EndpointStore on the loaded graph
        ...
    # leaving the block shuts the server down (``clean_on_exit=True`` also deletes the database)

- :meth:`~VirtuosoServer.prepare` writes ``virtuoso.ini`` with the database files in the
  directory, both listeners bound to ``127.0.0.1`` (``[Parameters] ServerPort`` for isql,
  ``[HTTPServer] ServerPort`` for ``/sparql``), ``DirsAllowed`` covering the directory and the
  data directories, buffer sizes derived from ``memory`` (Virtuoso's rule: 85,000 8-KB buffers
  per GB given to it, ``MaxDirtyBuffers`` ≈ ¾ of them) and the ``[SPARQL]`` limits.
- :meth:`~VirtuosoServer.start` runs ``virtuoso-t +foreground +configfile virtuoso.ini`` in the
  background (``detach=True``: in its own session, so it outlives the caller), records pid,
  ports and the dba password in ``kbqa-virtuoso.json`` (mode 0600) and waits until ``/sparql``
  answers and the isql port accepts connections; on failure it kills the process and raises a
  :class:`~kbqa_lit.errors.StoreError` that ends with the server log's tail.
- :meth:`~VirtuosoServer.load` registers the files with the bulk loader (``ld_add``, the per-file
  form of ``ld_dir``), runs ``rdf_loader_run()`` (in ``loaders`` parallel isql sessions) and
  ``checkpoint``, and raises when the loader recorded an error for a file.
- :meth:`~VirtuosoServer.stop` sends ``shutdown`` through isql, then SIGTERM/SIGKILL as
  fallbacks; :meth:`~VirtuosoServer.cleanup` also deletes the database files.

The default graph: Virtuoso 7.2.5 answers a query without ``FROM`` over the union of ALL graphs,
which includes its own system graphs (``virtrdf:``, about 2,500 triples); ``[SPARQL]
DefaultGraph`` in the ini does not change that. The data therefore goes into one named graph
(``graph``) and :meth:`~VirtuosoServer.store` sends ``default-graph-uri=<graph>`` with every
query (the standard SPARQL protocol parameter), so the default graph is exactly the loaded data.
Queries from :func:`~kbqa_lit.kb.lf.sparql.sexpr_to_sparql` always name Freebase relations, so they
would give the same answers over the union too.

A fresh database gets a random dba password (kept in the state file) unless ``password`` is
given, and Virtuoso's WebDAV account ``dav`` (password ``dav``, which may write files over HTTP)
is disabled; the password is passed to ``isql-vt`` on its command line, so local users can see it while
isql runs. Both ports listen on ``127.0.0.1`` only; ``/sparql`` is read-only (Virtuoso's
``SPARQL`` user may not update).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.virtuoso.config import (
    BUFFERS_PER_GB,
    INSTALL_HINT,
    LOG_FILE,
    buffers_for,
    find_binaries,
    free_port,
    parse_memory,
    port_in_use,
    render_ini,
)
from kbqa_lit.kb.virtuoso.loading import LOAD_DIR, VirtuosoLoading, _check_graph, _sql_string

__all__ = [
    "BUFFERS_PER_GB",
    "DEFAULT_GRAPH",
    "INSTALL_HINT",
    "VirtuosoServer",
    "buffers_for",
    "find_binaries",
    "free_port",
    "parse_memory",
    "render_ini",
]

DEFAULT_GRAPH = "http://freebase.com"
INI_FILE = "virtuoso.ini"
STATE_FILE = "kbqa-virtuoso.json"
OUT_FILE = "virtuoso.out"
#: Every file a database directory may hold (what :meth:`VirtuosoServer.cleanup` deletes).
DB_FILES = (
    "virtuoso.db",
    "virtuoso.trx",
    "virtuoso.pxa",
    "virtuoso.lck",
    "virtuoso-temp.db",
    "virtuoso-temp.trx",
    LOG_FILE,
    OUT_FILE,
    INI_FILE,
    STATE_FILE,
)


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class VirtuosoServer(VirtuosoLoading):
    """One Virtuoso database directory and the server process that serves it.

    Args:
        directory: The database directory (created when missing).
        http_port: ``/sparql`` port; ``None``: the state file's, else a free one.
        isql_port: isql port; ``None``: the state file's, else a free one.
        graph: The named graph the data is loaded into (and queried as the default graph);
            ``None``: the state file's, else :data:`DEFAULT_GRAPH`.
        memory: Memory for Virtuoso's page buffers (``"1G"``; Freebase: 32G–64G, see docs/kb.md).
        max_query_seconds: ``[SPARQL] MaxQueryExecutionTime`` (``0``: none; see :func:`render_ini`).
        max_rows: ``[SPARQL] ResultSetMaxRows``.
        http_threads: HTTP worker threads.
        password: The dba password; ``None``: ``$KBQA_VIRTUOSO_PASSWORD``, else the state file's,
            else Virtuoso's default ``dba`` for a database made elsewhere, else (a fresh database)
            a random one, set at the first start.
        virtuoso_bin: The ``virtuoso-t`` binary (found automatically when ``None``).
        isql_bin: The isql binary (found automatically when ``None``).
        startup_timeout: Seconds :meth:`start` waits for the endpoint.
        clean_on_exit: Whether leaving a ``with`` block also deletes the database files.

    """

    def __init__(
        self,
        directory: str | Path,
        *,
        http_port: int | None = None,
        isql_port: int | None = None,
        graph: str | None = None,
        memory: str | int = "1G",
        max_query_seconds: int = 60,
        max_rows: int = 100_000,
        http_threads: int = 16,
        password: str | None = None,
        virtuoso_bin: str | None = None,
        isql_bin: str | None = None,
        startup_timeout: float = 60.0,
        clean_on_exit: bool = False,
    ) -> None:
        self.directory = Path(directory).expanduser().resolve()
        state = self.read_state()
        self.http_port = int(http_port or state.get("http_port") or free_port())
        self.isql_port = int(isql_port or state.get("isql_port") or free_port())
        self.graph = _check_graph(graph or state.get("graph") or DEFAULT_GRAPH)
        parse_memory(memory)
        self.memory = memory
        self.max_query_seconds = int(max_query_seconds)
        self.max_rows = int(max_rows)
        self.http_threads = int(http_threads)
        self.password = (
            password
            or os.environ.get("KBQA_VIRTUOSO_PASSWORD")
            or state.get("password")
            or ("dba" if self.has_database else secrets.token_hex(12))
        )
        self._bins = (virtuoso_bin, isql_bin)
        self.startup_timeout = float(startup_timeout)
        self.clean_on_exit = clean_on_exit
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = state.get("pid") if state.get("pid") and self._is_our_server(state["pid"]) else None
        self.start_seconds: float | None = None

    # ------------------------------------------------------------------ files and state

    @property
    def ini_path(self) -> Path:
        """The ``virtuoso.ini`` of this directory."""
        return self.directory / INI_FILE

    @property
    def state_path(self) -> Path:
        """The state file (pid, ports, graph, password)."""
        return self.directory / STATE_FILE

    @property
    def endpoint(self) -> str:
        """The SPARQL endpoint URL."""
        return f"http://127.0.0.1:{self.http_port}/sparql"

    @property
    def has_database(self) -> bool:
        """Whether the directory already holds a Virtuoso database."""
        return (self.directory / "virtuoso.db").exists()

    def binaries(self) -> tuple[str, str]:
        """Return ``(virtuoso_t, isql)``; raise :class:`StoreError` when Virtuoso is not installed."""
        return find_binaries(*self._bins)

    def read_state(self) -> dict[str, Any]:
        """Return the state file's contents (``{}`` when there is none)."""
        try:
            state = json.loads((self.directory / STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def _write_state(self, **extra: Any) -> None:
        state = {
            "endpoint": self.endpoint,
            "pid": self.pid,
            "http_port": self.http_port,
            "isql_port": self.isql_port,
            "graph": self.graph,
            "password": self.password,
            "ini": str(self.ini_path),
        }
        state.update(extra)
        tmp = self.state_path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh, indent=2)
        tmp.replace(self.state_path)

    def prepare(self, data_dirs: Sequence[str | Path] = ()) -> Path:
        """Create the directory and write ``virtuoso.ini``.

        Args:
            data_dirs: Directories the bulk loader will read (added to ``DirsAllowed``; files
                elsewhere are linked into ``<directory>/load`` by :meth:`load`).

        Returns:
            The ini path.

        """
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / LOAD_DIR).mkdir(exist_ok=True)
        dirs = [self.directory / LOAD_DIR] + [Path(d).expanduser().resolve() for d in data_dirs]
        text = render_ini(
            self.directory,
            self.http_port,
            self.isql_port,
            dirs,
            self.memory,
            self.max_query_seconds,
            self.max_rows,
            self.http_threads,
        )
        self.ini_path.write_text(text, encoding="utf-8")
        return self.ini_path

    # ------------------------------------------------------------------ process

    def _is_our_server(self, pid: int) -> bool:
        """Whether ``pid`` is a live virtuoso-t started on this directory's ini."""
        if not _pid_alive(pid):
            return False
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return True  # no /proc: trust the state file
        return any(b"virtuoso" in a for a in cmdline[:1]) and str(self.ini_path).encode() in cmdline

    def is_running(self) -> bool:
        """Whether the server process is alive."""
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and self._is_our_server(self.pid)

    def log_tail(self, lines: int = 25) -> str:
        """Return the last lines of the server log and of its stdout/stderr (lines not in the log)."""
        parts, seen = [], set()
        for name in (LOG_FILE, OUT_FILE):
            try:
                text = (self.directory / name).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            tail = [line for line in text.splitlines() if line.strip() and line not in seen][-lines:]
            seen.update(tail)
            if tail:
                parts.append(f"--- {self.directory / name} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(parts) or "(no server log)"

    def start(self, *, detach: bool = False, timeout: float | None = None) -> float:
        """Start ``virtuoso-t`` in the background and wait until it serves queries.

        Args:
            detach: Run the server in its own session (it survives the calling process; stop it
                with :meth:`stop` or ``kbqa kb stop-virtuoso``).
            timeout: Seconds to wait for the endpoint (default ``startup_timeout``).

        Returns:
            Seconds from launch until ``/sparql`` answered.

        Raises:
            StoreError: When Virtuoso is not installed, a server already runs on the directory,
                a port is taken, or the endpoint did not come up in time (with the log tail).

        """
        server_bin, _ = self.binaries()
        if self.is_running():
            raise StoreError(f"a Virtuoso server already runs on {self.directory} (pid {self.pid})")
        for port in (self.http_port, self.isql_port):
            if port_in_use(port):
                raise StoreError(f"port {port} on 127.0.0.1 is already in use; choose another")
        if not self.ini_path.is_file():
            self.prepare()
        fresh = not self.has_database
        start = time.perf_counter()
        with open(self.directory / OUT_FILE, "ab") as out:
            self.process = subprocess.Popen(
                [server_bin, "+foreground", "+configfile", str(self.ini_path)],
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=detach,
            )
        self.pid = self.process.pid
        self._write_state(started=time.time())
        try:
            self.wait_ready(self.startup_timeout if timeout is None else timeout)
            if fresh:  # Virtuoso ships dba/dba and a WebDAV account dav/dav that can write over HTTP
                sql = "USER_SET_OPTION ('dav', 'DISABLED', 1);"
                if self.password != "dba":
                    sql += f"\nUSER_SET_PASSWORD ('dba', {_sql_string(self.password)});"
                self._isql(sql, password="dba")
        except BaseException:
            self._kill()
            raise
        self.start_seconds = time.perf_counter() - start
        return self.start_seconds

    def wait_ready(self, timeout: float) -> None:
        """Wait until ``/sparql`` answers ``ASK {}`` and the isql port accepts connections.

        Raises:
            StoreError: When the process exits or the deadline passes (with the log tail).

        """
        deadline = time.monotonic() + timeout
        query = urllib.parse.urlencode({"query": "ASK {}"})
        request = urllib.request.Request(
            f"{self.endpoint}?{query}", headers={"Accept": "application/sparql-results+json"}
        )
        while True:
            if not self.is_running():
                code = self.process.poll() if self.process is not None else None
                raise StoreError(
                    f"Virtuoso exited during start-up (status {code}); ini {self.ini_path}\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(request, timeout=2) as response:
                    if response.status == 200 and port_in_use(self.isql_port):
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise StoreError(
                    f"Virtuoso did not answer at {self.endpoint} within {timeout:g} s; "
                    f"ini {self.ini_path}\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def _wait_exit(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None:
                try:
                    self.process.wait(timeout=0.2)
                    return True
                except subprocess.TimeoutExpired:
                    continue
            if self.pid is None or not _pid_alive(self.pid):
                return True
            time.sleep(0.2)
        return not self.is_running()

    def _kill(self) -> None:
        """SIGTERM, then SIGKILL, the server process (only ours: the pid is checked)."""
        if self.pid is None or not self.is_running():
            return
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return
            if self._wait_exit(wait):
                return

    def stop(self, timeout: float = 60.0) -> bool:
        """Shut the server down (``shutdown`` through isql; SIGTERM/SIGKILL as fallbacks).

        Args:
            timeout: Seconds to wait for a clean shutdown (it checkpoints first).

        Returns:
            Whether a running server was stopped (``False`` when none was running).

        """
        if not self.is_running():
            self.pid = None
            return False
        try:
            self._isql("shutdown;", timeout=timeout)
        except StoreError:
            pass  # the connection drops while the server goes down, or isql is unusable: kill below
        if not self._wait_exit(timeout):
            self._kill()
        if self.process is not None:
            self.process.poll()
        self.pid = None
        self.process = None
        if self.state_path.exists():
            self._write_state(stopped=time.time())
        return True

    def cleanup(self) -> None:
        """Stop the server and delete the database files (the directory too when left empty)."""
        self.stop()
        for name in DB_FILES:
            (self.directory / name).unlink(missing_ok=True)
        shutil.rmtree(self.directory / LOAD_DIR, ignore_errors=True)
        try:
            self.directory.rmdir()
        except OSError:
            pass

    def __enter__(self) -> VirtuosoServer:
        if not self.is_running():
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.clean_on_exit:
            self.cleanup()
        else:
            self.stop()

    def store(self, **kwargs: Any) -> Any:
        """Return an :class:`~kbqa_lit.kb.store.EndpointStore` on this server's graph.

        Args:
            **kwargs: Passed to ``EndpointStore`` (``timeout``, ``disk_cache``...); ``params``
                are merged with ``{"default-graph-uri": graph}``.

        """
        from kbqa_lit.kb.store import EndpointStore

        params = {"default-graph-uri": self.graph, **dict(kwargs.pop("params", None) or {})}
        return EndpointStore(self.endpoint, params=params, **kwargs)

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"VirtuosoServer({str(self.directory)!r}, endpoint={self.endpoint!r}, {state})"
