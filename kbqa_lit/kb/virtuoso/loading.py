"""Talking to a running Virtuoso through isql: bulk loading RDF files, counting triples.

:class:`VirtuosoLoading` is the part of :class:`~kbqa_lit.kb.virtuoso.server.VirtuosoServer` that runs
SQL through ``isql`` on the server's port (the server class adds the process lifecycle).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kbqa_lit.errors import StoreError

#: Folder (inside the database directory) of links to files outside ``DirsAllowed``.
LOAD_DIR = "load"
_GRAPH_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"'{}|^`\\]+$")


def _sql_string(text: str) -> str:
    """Quote ``text`` as an SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _check_graph(graph: str) -> str:
    if not _GRAPH_RE.match(graph):
        raise StoreError(f"not a usable graph IRI: {graph!r}")
    return graph


class VirtuosoLoading:
    """isql, bulk loading and triple counts of a running server (a mixin of ``VirtuosoServer``).

    The host class provides ``directory``, ``graph``, ``password``, ``isql_port``, ``ini_path``,
    ``binaries()`` and ``is_running()``.
    """

    directory: Path
    graph: str
    password: str
    isql_port: int

    @property
    def ini_path(self) -> Path:  # pragma: no cover - the host class's
        """The server's ini file."""
        raise NotImplementedError

    def binaries(self) -> tuple[str, str]:  # pragma: no cover - the host class's
        """The server and isql executables."""
        raise NotImplementedError

    def is_running(self) -> bool:  # pragma: no cover - the host class's
        """Whether the server answers."""
        raise NotImplementedError

    def _isql(self, sql: str, *, timeout: float | None = None, password: str | None = None) -> str:
        """Run SQL statements through isql; return stdout.

        Raises:
            StoreError: When isql cannot connect or a statement fails.

        """
        _, isql_bin = self.binaries()
        cmd = [
            isql_bin,
            f"127.0.0.1:{self.isql_port}",
            "dba",
            password or self.password,
            "VERBOSE=OFF",
            "BANNER=OFF",
            "PROMPT=OFF",
            "ECHO=OFF",
        ]
        try:
            done = subprocess.run(cmd, input=sql + "\n", capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StoreError(f"isql did not finish within {timeout:g} s: {sql[:200]}") from None
        errors = done.stderr.strip()
        if done.returncode != 0 or "*** Error" in errors:
            raise StoreError(f"isql on 127.0.0.1:{self.isql_port} failed: {' '.join(errors.split())[:1000]}")
        return done.stdout

    def _loadable(self, path: Path) -> Path:
        """Return a path the server may read: ``path`` itself or a link in the load directory."""
        allowed = {self.directory / LOAD_DIR}
        try:
            ini = self.ini_path.read_text(encoding="utf-8")
            line = re.search(r"^DirsAllowed\s*=\s*(.*)$", ini, re.MULTILINE)
            allowed |= {Path(d.strip()) for d in (line.group(1).split(",") if line else [])}
        except OSError:
            pass
        if path.parent in allowed:
            return path
        link_dir = self.directory / LOAD_DIR
        link_dir.mkdir(exist_ok=True)
        link = link_dir / f"{len(list(link_dir.iterdir())):04d}-{path.name}"
        link.symlink_to(path)
        return link

    def load(self, files: Sequence[str | Path], *, graph: str | None = None, loaders: int = 1) -> dict[str, Any]:
        """Bulk-load RDF files into ``graph`` (the running server's bulk loader).

        The loader picks the parser from the file name: ``.nt``/``.ttl`` (Turtle, a superset of
        N-Triples), ``.nq``, ``.rdf``/``.owl``/``.xml``; ``.gz`` files are decompressed.

        Args:
            files: The files.
            graph: Target graph (default: the server's ``graph``).
            loaders: Parallel ``rdf_loader_run()`` sessions (Virtuoso suggests cores / 2.5 for
                many files; one file is always loaded by one session).

        Returns:
            ``{"graph", "files", "triples" (in the graph afterwards), "seconds"}``.

        Raises:
            StoreError: For a missing file, a server that is not running, or a file the loader
                rejected (its error is quoted).

        """
        graph = _check_graph(graph or self.graph)
        paths = [Path(f).expanduser().resolve() for f in files]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise StoreError(f"no such file: {', '.join(missing)}")
        if not self.is_running():
            raise StoreError(f"the Virtuoso server on {self.directory} is not running (start it first)")
        start = time.perf_counter()
        targets = [str(self._loadable(p)) for p in paths]
        self._isql("\n".join(f"ld_add ({_sql_string(t)}, {_sql_string(graph)});" for t in targets))
        with ThreadPoolExecutor(max(1, loaders)) as pool:
            for future in [pool.submit(self._isql, "rdf_loader_run ();") for _ in range(max(1, loaders))]:
                future.result()
        self._isql("checkpoint;")
        listed = ", ".join(_sql_string(t) for t in targets)
        report = self._isql(
            "SELECT concat ('KBQA-LOAD-ERROR ', ll_file, ' :: ', ll_error) FROM DB.DBA.load_list "
            f"WHERE ll_error IS NOT NULL AND ll_file IN ({listed});"
        )
        errors = [line.split("KBQA-LOAD-ERROR ", 1)[1] for line in report.splitlines() if "KBQA-LOAD-ERROR " in line]
        if errors:
            raise StoreError("the Virtuoso bulk loader rejected: " + "; ".join(errors))
        return {
            "graph": graph,
            "files": [str(p) for p in paths],
            "triples": self.count_triples(graph),
            "seconds": round(time.perf_counter() - start, 3),
        }

    def count_triples(self, graph: str | None = None) -> int:
        """Return the number of triples in ``graph`` (default: the server's graph)."""
        graph = _check_graph(graph or self.graph)
        out = self._isql(f"SPARQL SELECT COUNT(*) FROM <{graph}> WHERE {{ ?s ?p ?o }};")
        numbers = re.findall(r"^\s*(\d+)\s*$", out, re.MULTILINE)
        if not numbers:
            raise StoreError(f"cannot read the triple count from isql: {out[:200]!r}")
        return int(numbers[-1])

    def has_triples(self, graph: str | None = None) -> bool:
        """Whether ``graph`` (default: the server's graph) holds at least one triple (fast)."""
        graph = _check_graph(graph or self.graph)
        out = self._isql(f"SPARQL SELECT ?s FROM <{graph}> WHERE {{ ?s ?p ?o }} LIMIT 1;")
        return bool(out.strip())


__all__ = ["LOAD_DIR", "VirtuosoLoading"]
