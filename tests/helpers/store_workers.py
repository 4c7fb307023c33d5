"""Find and kill the Oxigraph worker processes of a running process (issue 31, scenario 3).

Workers are found through ``/proc`` (Linux): the children of ``pid`` whose command line runs
:func:`kbqa_lit.kb.store.oxigraph_runner.worker_main`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Collection
from pathlib import Path


def store_workers(pid: int) -> list[int]:
    """The pids of the Oxigraph worker processes that are children of ``pid`` (alive or not yet reaped)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    out = []
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"worker_main" in cmdline:
            out.append(child)
    return out


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def kill_worker(
    pid: int,
    wait: float = 30.0,
    *,
    min_cpu: float = 0.0,
    give_up: threading.Event | None = None,
    spare: Collection[int] = (),
) -> int | None:
    """``SIGKILL`` one live worker of ``pid`` once it has used ``min_cpu`` CPU seconds; its pid, or ``None``.

    CPU time rather than wall time tells a worker that runs a query from one that is still opening
    the store (about 0.1 s of CPU), whatever the load on the machine.

    Args:
        pid: The process whose workers to look at.
        wait: Seconds to wait for such a worker.
        min_cpu: CPU seconds (user + system) the worker must have used.
        give_up: Stop waiting (and kill nothing) once this event is set.
        spare: Workers not to kill (those killed already, which may not have ended yet).
    """
    tick = os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + wait
    while time.monotonic() < end and not (give_up is not None and give_up.is_set()):
        for worker in store_workers(pid):
            if worker in spare:
                continue
            try:
                fields = _stat(worker)
            except OSError:
                continue
            if fields[0] != "Z" and (int(fields[11]) + int(fields[12])) / tick >= min_cpu:
                os.kill(worker, signal.SIGKILL)
                return worker
        time.sleep(0.01)
    return None
