"""Run pyoxigraph queries with a deadline the caller can rely on.

pyoxigraph 0.5.13 offers no query timeout and no cancellation: ``Store.query`` parses the query
and returns a lazy iterator, and producing one solution (e.g. of a cross product whose
``FILTER`` rejects everything, or of a ``COUNT``) is one uninterruptible native call. This module
bounds the wait in two ways, used by :class:`kbqa_lit.kb.store.OxigraphStore`:

- :class:`ProcessRunner`: a worker process (``python -c ...worker_main()``, not
  ``multiprocessing``, so no fork of a threaded parent and no re-import of ``__main__``) opens
  the store read-only and answers JSON-line requests on its stdin/stdout. The parent waits on the
  pipe with ``select`` until the deadline; on timeout it kills the worker (freeing its CPU and
  memory) and starts a new one at once, whose start-up overlaps the caller's next work.
- :class:`ThreadRunner`: the query runs in a daemon thread; on timeout the caller returns, and
  the abandoned query runs on until it ends by itself.

Both also run a list of queries in one go (``run_many``: one pipe round trip, one thread), each
query still under its own deadline. Both return plain dicts ``{"answers", "ok", "error",
"kind"}`` with ``kind`` one of ``ok``, ``syntax`` and ``unsupported`` (definitive: the query
itself is at fault), ``error``, ``timeout`` and ``crash`` (the moment is at fault).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import select
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.lf.iri import local_id

#: File that :func:`kbqa_lit.kb.store.loaders.build_store` writes into a store directory (build id, stats).
STORE_MARKER = "kbqa_store.json"

log = logging.getLogger(__name__)

_WORKER_CODE = "from kbqa_lit.kb.store.oxigraph_runner import worker_main; worker_main()"


def _fail(kind: str, error: str) -> dict[str, Any]:
    return {"answers": [], "ok": False, "error": error, "kind": kind}


def _term_text(term: Any) -> str:
    import pyoxigraph

    if isinstance(term, pyoxigraph.NamedNode):
        return local_id(term.value)
    if isinstance(term, pyoxigraph.Literal):
        return term.value
    if isinstance(term, pyoxigraph.BlankNode):
        return "_:" + term.value
    return str(term)


def run_query(store: Any, sparql: str) -> dict[str, Any]:
    """Execute ``sparql`` on a pyoxigraph store and collect the first variable's values.

    Args:
        store: A ``pyoxigraph.Store``.
        sparql: A ``SELECT`` or ``ASK`` query.

    Returns:
        A result dict (see the module docstring); never raises for a bad query.

    """
    import pyoxigraph

    try:
        results = store.query(sparql)
    except SyntaxError as exc:
        return _fail("syntax", f"SPARQL syntax error: {' '.join(str(exc).split())}")
    except Exception as exc:
        return _fail("error", f"{type(exc).__name__}: {exc}")
    try:
        if isinstance(results, pyoxigraph.QueryBoolean):
            answers = ["true" if bool(results) else "false"]
        elif isinstance(results, pyoxigraph.QuerySolutions):
            seen: dict[str, None] = {}
            if results.variables:
                for solution in results:
                    term = solution[0]
                    if term is not None:
                        seen.setdefault(_term_text(term), None)
            answers = list(seen)
        else:
            return _fail("unsupported", "only SELECT and ASK queries are supported (got CONSTRUCT/DESCRIBE)")
    except Exception as exc:
        return _fail("error", f"query evaluation failed: {type(exc).__name__}: {exc}")
    return {"answers": answers, "ok": True, "error": None, "kind": "ok"}


def _kill(proc: subprocess.Popen[bytes], owner: int) -> None:
    if os.getpid() != owner:  # a forked child must not kill its parent's worker
        return
    if proc.poll() is None:
        proc.kill()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - a killed process always ends
        pass


class _WorkerDied(Exception):
    pass


class ProcessRunner:
    """Queries in a killable worker process (one query at a time; thread-safe).

    Fork-safe: a forked child starts its own worker instead of sharing its parent's pipes.

    Args:
        path: The store directory.
        startup_timeout: Seconds a new worker may take to open the store.

    """

    def __init__(self, path: Path, startup_timeout: float = 120.0) -> None:
        self.path = Path(path)
        self.startup_timeout = startup_timeout
        self.restarts = 0
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None
        self._ready = False
        self._buf = bytearray()
        self._owner = os.getpid()

    def _spawn(self) -> None:
        import kbqa_lit

        env = dict(os.environ)
        root = str(Path(kbqa_lit.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_CODE, str(self.path), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _kill, self._proc, self._owner)
        self._ready = False
        self._buf = bytearray()

    def _stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills and reaps the worker
        self._proc, self._finalizer, self._ready = None, None, False

    def _read_line(self, deadline: float) -> bytes | None:
        """Read one reply line; ``None`` when the deadline passes first."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while True:
            cut = self._buf.find(b"\n")
            if cut >= 0:
                line = bytes(self._buf[:cut])
                del self._buf[: cut + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _WorkerDied
            self._buf += chunk

    def _handshake(self, retry: bool = True) -> None:
        """Wait for the worker's ready line; raise :class:`StoreError` when it cannot open the store.

        A worker that dies without a word (killed from outside) is replaced once; one that reports
        that it cannot open the store is not.
        """
        if self._proc is None or self._proc.poll() is not None:
            self._stop()
            self._spawn()
        try:
            line = self._read_line(time.monotonic() + self.startup_timeout)
        except _WorkerDied:
            if retry:
                log.warning("the Oxigraph worker process of %s died while opening the store; restarted", self.path)
                self._stop()
                self.restarts += 1
                return self._handshake(retry=False)
            line = b'{"ready": false, "error": "the worker process exited while opening the store"}'
        if line is None:
            line = b'{"ready": false, "error": "the worker process did not open the store in time"}'
        reply = json.loads(line)
        if not reply.get("ready"):
            self._stop()
            raise StoreError(f"cannot open the Oxigraph store at {self.path}: {reply.get('error')}")
        self._ready = True

    def start(self) -> None:
        """Start the worker and wait until it has opened the store.

        Raises:
            StoreError: When the store cannot be opened.

        """
        with self._lock:
            self._handshake()

    def run(self, sparql: str, timeout: float) -> dict[str, Any]:
        """Execute one query, giving up (and restarting the worker) after ``timeout`` seconds."""
        return self.run_many([sparql], timeout)[0]

    def run_many(self, queries: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        """Execute queries in one round trip, each under its own ``timeout``; replies in order.

        The worker answers query by query; each reply must arrive within ``timeout`` seconds of the
        previous one (of the request, for the first). A query that misses its deadline gets a
        ``timeout`` result, the worker is killed and restarted, and the queries after it are sent
        to the new worker, so a slow query fails alone. A worker that dies (killed, out of
        memory) is replaced in the same way and the query it was running is sent once more, to
        the new worker; only a query whose second run also loses its worker gets a ``crash``
        result. Each query's reply thus appears exactly once, in order.

        Args:
            queries: The SPARQL texts.
            timeout: Seconds each query may run.

        Returns:
            One result dict per query, in order.

        """
        out: list[dict[str, Any]] = []
        retried: set[int] = set()
        with self._lock:
            while len(out) < len(queries):
                start = len(out)
                batch = self._run_batch(queries[start:], timeout)
                crash = next((i for i, r in enumerate(batch) if r.get("kind") == "crash"), None)
                if crash is not None and start + crash not in retried:
                    retried.add(start + crash)
                    log.warning("%s; restarted, running the query once more", batch[crash]["error"])
                    out.extend(batch[:crash])  # the crashed query goes again to the new worker
                    continue
                out.extend(batch)
        return out

    def _run_batch(self, queries: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        """Send ``queries`` to the worker; return the replies up to and including the first failure of the worker."""
        if self._owner != os.getpid():  # forked: the inherited worker belongs to the parent
            if self._finalizer is not None:
                self._finalizer.detach()
            self._proc, self._finalizer, self._ready = None, None, False
            self._owner = os.getpid()
        if not self._ready or self._proc is None or self._proc.poll() is not None:
            try:
                self._handshake()
            except StoreError as exc:
                return [_fail("crash", str(exc)) for _ in queries]
        assert self._proc is not None and self._proc.stdin is not None
        request = {"q": queries[0]} if len(queries) == 1 else {"qs": list(queries)}
        replies: list[dict[str, Any]] = []
        try:
            self._proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            self._proc.stdin.flush()
            while len(replies) < len(queries):
                line = self._read_line(time.monotonic() + timeout)
                if line is None:
                    break
                replies.append(json.loads(line))
        except (_WorkerDied, OSError):
            code = self._proc.poll()
            self._restart()
            replies.append(
                _fail("crash", f"the Oxigraph worker process of {self.path} died during a query (exit code {code})")
            )
            return replies
        if len(replies) < len(queries):  # the deadline of queries[len(replies)] passed
            self._restart()
            replies.append(
                _fail(
                    "timeout",
                    f"timeout: the query ran longer than {timeout:g} s and was cancelled "
                    "(Oxigraph worker process killed and restarted)",
                )
            )
        return replies

    def _restart(self) -> None:
        """Kill the worker and start a new one (its start-up overlaps the caller's next work)."""
        self._stop()
        self.restarts += 1
        self._spawn()

    def close(self) -> None:
        """Stop the worker process."""
        with self._lock:
            self._stop()


class ThreadRunner:
    """Queries in daemon threads of this process; a timed-out query is abandoned, not stopped.

    Args:
        path: The store directory.

    Attributes:
        abandoned: How many timed-out queries were left running.

    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.abandoned = 0
        self._store: Any = None

    def start(self) -> None:
        """Open the store read-only.

        Raises:
            StoreError: When the store cannot be opened.

        """
        import pyoxigraph

        try:
            self._store = pyoxigraph.Store.read_only(str(self.path))
        except OSError as exc:
            raise StoreError(f"cannot open the Oxigraph store at {self.path}: {exc}") from None

    def run(self, sparql: str, timeout: float) -> dict[str, Any]:
        """Execute one query, returning a timeout result after ``timeout`` seconds."""
        if self._store is None:  # closed: reopen
            try:
                self.start()
            except StoreError as exc:
                return _fail("crash", str(exc))
        box: dict[str, dict[str, Any]] = {}
        done = threading.Event()

        def target() -> None:
            box["r"] = run_query(self._store, sparql)
            done.set()

        threading.Thread(target=target, daemon=True, name="kbqa-oxigraph-query").start()
        if done.wait(timeout):
            return box["r"]
        self.abandoned += 1
        return _fail(
            "timeout",
            f"timeout: the query ran longer than {timeout:g} s "
            "(abandoned; it keeps running in a background thread until it ends)",
        )

    def _serve(self, todo: list[str], replies: queue.SimpleQueue[dict[str, Any]], stop: threading.Event) -> None:
        store = self._store
        for sparql in todo:
            if stop.is_set():
                return
            replies.put(run_query(store, sparql))

    def run_many(self, queries: Sequence[str], timeout: float) -> list[dict[str, Any]]:
        """Execute queries in one daemon thread, each under its own ``timeout``; results in order.

        When a query times out, its thread is abandoned (told to stop after that query) and a new
        thread runs the queries after it.
        """
        if self._store is None:  # closed: reopen
            try:
                self.start()
            except StoreError as exc:
                return [_fail("crash", str(exc)) for _ in queries]
        out: list[dict[str, Any]] = []
        while len(out) < len(queries):
            todo = list(queries[len(out) :])
            replies: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
            stop = threading.Event()

            threading.Thread(
                target=self._serve, args=(todo, replies, stop), daemon=True, name="kbqa-oxigraph-query"
            ).start()
            for _ in todo:
                try:
                    out.append(replies.get(timeout=timeout))
                except queue.Empty:
                    stop.set()
                    self.abandoned += 1
                    out.append(
                        _fail(
                            "timeout",
                            f"timeout: the query ran longer than {timeout:g} s "
                            "(abandoned; it keeps running in a background thread until it ends)",
                        )
                    )
                    break
        return out

    def close(self) -> None:
        """Drop this runner's handle (abandoned queries keep theirs until they end)."""
        self._store = None


def _watch_parent(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(1.0)


def worker_main() -> None:
    """Entry of a worker process: ``argv = [-c, STORE_DIR, PARENT_PID]``; JSON lines in and out."""
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but replies may reach the pipe
    path, parent_pid = sys.argv[1], int(sys.argv[2])
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    try:
        import pyoxigraph

        store = pyoxigraph.Store.read_only(path)
    except Exception as exc:
        out.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        out.flush()
        return
    out.write(b'{"ready": true}\n')
    out.flush()
    replies = _ReplyPipe(out)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            queries = [request["q"]] if "q" in request else list(request["qs"])
        except Exception as exc:  # a garbled request must not kill the worker
            replies.add(_fail("error", f"bad request to the worker: {type(exc).__name__}: {exc}"))
            replies.flush()
            continue
        replies.busy.set()
        for sparql in queries:
            replies.add(run_query(store, sparql))
        replies.busy.clear()
        replies.flush()


#: Seconds between flushes of finished replies while a batch is still running.
FLUSH_EVERY = 0.002


class _ReplyPipe:
    """The worker's reply lines: buffered during a batch, written at its end in one write.

    A batch of fast queries thus costs the parent one wake-up rather than one per query. While a
    batch runs, a daemon thread flushes finished replies every :data:`FLUSH_EVERY` seconds
    (pyoxigraph releases the GIL while it evaluates), so a slow query never holds back the
    replies before it: the parent times each query from the previous reply and, on a timeout,
    knows which query it was.
    """

    def __init__(self, out: Any) -> None:
        self.out = out
        self.busy = threading.Event()
        self._pending = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._flush_while_busy, daemon=True, name="kbqa-reply-flush").start()

    def add(self, reply: dict[str, Any]) -> None:
        """Buffer one reply line."""
        line = json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"
        with self._lock:
            self._pending += line

    def flush(self) -> None:
        """Write the buffered replies."""
        with self._lock:
            if self._pending:
                self.out.write(bytes(self._pending))
                self.out.flush()
                self._pending.clear()

    def _flush_while_busy(self) -> None:
        while True:
            self.busy.wait()
            time.sleep(FLUSH_EVERY)
            self.flush()
