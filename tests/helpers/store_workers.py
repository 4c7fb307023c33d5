"""Find and kill the Oxigraph worker processes of a running process (issue 31, scenario 3).

Workers are found through ``/proc`` (Linux): the children of ``pid`` whose command line runs
:func:`kbqa_lit.kb.store.oxigraph_runner.worker_main`.
"""

from __future__ import annotations

import os
import signal
import time
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


def kill_worker(pid: int, wait: float = 30.0) -> int | None:
    """``SIGKILL`` one live worker of ``pid`` (waiting up to ``wait`` s for one); its pid, or ``None``."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        for worker in store_workers(pid):
            try:
                state = Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                os.kill(worker, signal.SIGKILL)
                return worker
        time.sleep(0.01)
    return None
