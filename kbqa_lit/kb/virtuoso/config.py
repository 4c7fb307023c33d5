"""Virtuoso's configuration: find the binaries, size the buffers, write ``virtuoso.ini``.

Used by :class:`kbqa_lit.kb.virtuoso.server.VirtuosoServer` (which re-exports these names).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import Sequence
from pathlib import Path

from kbqa_lit.errors import StoreError

LOG_FILE = "virtuoso.log"
INSTALL_HINT = "Virtuoso is not installed: apt-get install virtuoso-opensource-7-bin"
#: Virtuoso's sizing rule: 85,000 buffers of 8 KB per GB of memory given to the server.
BUFFERS_PER_GB = 85_000
_SEARCH_DIRS = (
    "/usr/bin",
    "/usr/local/bin",
    "/usr/local/virtuoso-opensource/bin",
    "/opt/virtuoso-opensource/bin",
    "/opt/virtuoso/bin",
)
_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def find_binaries(virtuoso: str | None = None, isql: str | None = None) -> tuple[str, str]:
    """Locate ``virtuoso-t`` and Virtuoso's isql (``isql-vt`` on Debian).

    Args:
        virtuoso: An explicit server binary (else ``$KBQA_VIRTUOSO_BIN``, PATH, Debian's and
            OpenLink's install directories).
        isql: An explicit isql binary (else ``$KBQA_VIRTUOSO_ISQL``, ``isql-vt``/``isql-v`` on
            PATH, or ``isql`` beside the server binary — never unixODBC's ``isql``).

    Returns:
        ``(virtuoso_t, isql)`` paths.

    Raises:
        StoreError: When either binary is missing (the message says how to install them).

    """
    server = virtuoso or os.environ.get("KBQA_VIRTUOSO_BIN") or shutil.which("virtuoso-t")
    if not server:
        server = next((f"{d}/virtuoso-t" for d in _SEARCH_DIRS if os.access(f"{d}/virtuoso-t", os.X_OK)), None)
    client = isql or os.environ.get("KBQA_VIRTUOSO_ISQL") or shutil.which("isql-vt") or shutil.which("isql-v")
    if not client and server:
        here = Path(server).resolve().parent
        client = next((str(here / n) for n in ("isql-vt", "isql-v", "isql") if os.access(here / n, os.X_OK)), None)
    if not client:
        client = next((f"{d}/isql-vt" for d in _SEARCH_DIRS if os.access(f"{d}/isql-vt", os.X_OK)), None)
    if not server or not client or not os.access(server, os.X_OK) or not os.access(client, os.X_OK):
        raise StoreError(INSTALL_HINT)
    return server, client


def parse_memory(memory: str | int) -> int:
    """Return a memory size in bytes from ``"512M"``, ``"2G"``, ``"1.5GB"`` or a byte count.

    Raises:
        ValueError: For anything else or a size under 64 MB.

    """
    if isinstance(memory, int):
        size = memory
    else:
        m = _MEMORY_RE.match(str(memory))
        if not m:
            raise ValueError(f"not a memory size: {memory!r} (use e.g. 512M, 4G, 64G)")
        power = " kmgt".index((m.group(2) or " ").lower())
        size = int(float(m.group(1)) * 1024**power)
    if size < 64 * 1024**2:
        raise ValueError(f"memory for Virtuoso must be at least 64M, got {memory!r}")
    return size


def buffers_for(memory: str | int) -> tuple[int, int]:
    """Return ``(NumberOfBuffers, MaxDirtyBuffers)`` for the memory given to Virtuoso."""
    buffers = int(parse_memory(memory) / 1024**3 * BUFFERS_PER_GB)
    return buffers, buffers * 3 // 4


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def render_ini(
    directory: Path,
    http_port: int,
    isql_port: int,
    dirs_allowed: Sequence[str | Path] = (),
    memory: str | int = "1G",
    max_query_seconds: int = 60,
    max_rows: int = 100_000,
    http_threads: int = 16,
) -> str:
    """Return the text of a ``virtuoso.ini`` for a database in ``directory``.

    Args:
        directory: Where the database, transaction log, temp database and log live.
        http_port: ``/sparql`` port (bound to 127.0.0.1).
        isql_port: isql/ODBC port (bound to 127.0.0.1).
        dirs_allowed: Further directories the server may read (the bulk loader's input).
        memory: Memory for the page buffers (``NumberOfBuffers``/``MaxDirtyBuffers``).
        max_query_seconds: ``[SPARQL] MaxQueryExecutionTime``; ``0`` = no limit. A query that
            computes longer fails with HTTP 500 ``S1T00 ... Transaction timed out`` (an error,
            which :class:`~kbqa_lit.kb.store.EndpointStore` reports as a timeout); rows already
            being streamed are not cut. Unlike the ``timeout`` request parameter, which makes
            Virtuoso return INCOMPLETE results with HTTP 200 (``X-SQL-State: S1TAT``).
        max_rows: ``[SPARQL] ResultSetMaxRows``: longer results are silently cut to this many
            rows (only an ``X-SPARQL-MaxRows`` response header says so).
        http_threads: HTTP worker threads (concurrent queries served).

    """
    directory = Path(directory)
    buffers, dirty = buffers_for(memory)
    allowed = [".", str(directory)] + [str(d) for d in dirs_allowed]
    allowed = list(dict.fromkeys(allowed))
    return f"""; written by kbqa_lit.kb.virtuoso.server — Virtuoso 7.2 configuration
[Database]
DatabaseFile = {directory}/virtuoso.db
ErrorLogFile = {directory}/{LOG_FILE}
LockFile = {directory}/virtuoso.lck
TransactionFile = {directory}/virtuoso.trx
xa_persistent_file = {directory}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {directory}/virtuoso-temp.db
TransactionFile = {directory}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{isql_port}
DisableUnixSocket = 1
ServerThreads = {max(10, http_threads + 4)}
CheckpointInterval = 60
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
DirsAllowed = {", ".join(allowed)}
DefaultIsolation = 2
AllowOSCalls = 0

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerThreads = {http_threads}
MaxClientConnections = {http_threads}
KeepAliveTimeout = 10

[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = {max_query_seconds}
MaxQueryCostEstimationTime = 0
"""
