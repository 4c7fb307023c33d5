"""One ``kbqa pipeline`` at a time per work folder, and no step trusted that did not finish.

A step is skipped when its outputs exist (:mod:`kbqa_lit.runner.chain`), but outputs can exist
without the step having finished: ``kbqa fit`` writes ``last.ckpt`` after its first epoch, so a run
killed in epoch 3 (``kill -9``, a lost node, Ctrl-C) or a command that failed late leaves an output
that looks done. :class:`RunGuard` records, in ``<folder>/.kbqa-pipeline-running.json`` (written
atomically), the outputs of the command in progress before it starts and forgets them when it
finished; a later run re-runs any command whose outputs are still recorded there. When a command
finishes, the size and SHA-256 of each output file are recorded in ``<folder>/.kbqa-pipeline-outputs.json``;
an output truncated or changed since (a half-copied work folder, a disk error, an edit) is reported
in one line and its command runs again. Folder outputs (a store) are not fingerprinted.

It also holds ``<folder>/.kbqa-pipeline.lock`` (:class:`filelock.FileLock`) for the whole run, so a
second ``kbqa pipeline`` on the same work folder stops at once with a clear error instead of
interleaving its writes with the first's. The folder is the one of the pipeline's ``timings:`` file
(every shipped chain has one: ``${work}/pipeline_timings.jsonl``), else the deepest folder holding
every output; a pipeline with neither runs unguarded. A nested chain (the comparison's per-system
chains) guards its own folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from kbqa_lit.atomic import write_json_atomic
from kbqa_lit.errors import KBQAError

LOCK_NAME = ".kbqa-pipeline.lock"
RUNNING_NAME = ".kbqa-pipeline-running.json"
OUTPUTS_NAME = ".kbqa-pipeline-outputs.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PipelineLockedError(KBQAError):
    """Another ``kbqa pipeline`` holds the work folder."""


def guard_folder(timings: Path | None, outputs: Sequence[Path]) -> Path | None:
    """The folder a run guards: ``timings``' folder, else the deepest one holding every output (``None``: none)."""
    if timings is not None:
        return timings.parent
    parents = [str(p.absolute().parent) for p in outputs]
    if not parents:
        return None
    common = Path(os.path.commonpath(parents))
    return None if common == Path(common.anchor) else common


class RunGuard:
    """The lock and the record of unfinished outputs of one work folder (see the module docstring).

    Args:
        folder: The work folder (created when missing).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock_path = folder / LOCK_NAME
        self.state_path = folder / RUNNING_NAME
        self.outputs_path = folder / OUTPUTS_NAME
        self._lock: FileLock | None = None
        self._hashed: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) → SHA-256, this run

    def __enter__(self) -> RunGuard:
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.lock_path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise PipelineLockedError(
                f"another kbqa pipeline is running on {self.folder} (it holds {self.lock_path}); wait for it to "
                "finish, or give this run another work folder (--set work=...)"
            ) from None
        self._lock = lock
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def unfinished(self) -> set[str]:
        """The outputs of commands that started and did not finish (a missing or unreadable record: none)."""
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {str(p) for p in data.get("running", [])} if isinstance(data, dict) else set()

    def is_unfinished(self, outputs: Sequence[Path]) -> bool:
        """Whether any of ``outputs`` belongs to a command that did not finish."""
        running = self.unfinished()
        return any(str(p.absolute()) in running for p in outputs)

    def start(self, outputs: Sequence[Path]) -> None:
        """Record ``outputs`` as in progress (before their command runs)."""
        self._write(self.unfinished() | {str(p.absolute()) for p in outputs})

    def finish(self, outputs: Sequence[Path]) -> None:
        """Forget ``outputs`` (their command finished and wrote them) and record the fingerprints of the files."""
        prints = self._fingerprints()
        for path in outputs:
            if path.is_file():
                prints[str(path.absolute())] = {"size": path.stat().st_size, "sha256": self._digest(path)}
        write_json_atomic(self.outputs_path, prints)
        self._write(self.unfinished() - {str(p.absolute()) for p in outputs})

    def changed(self, outputs: Sequence[Path]) -> list[str]:
        """One line per output file that differs from what its finished command wrote (unrecorded files: none).

        Args:
            outputs: A command's outputs.

        Returns:
            ``"<path> changed since its step finished (...)"`` for each changed file.
        """
        prints = self._fingerprints()
        out = []
        for path in outputs:
            recorded = prints.get(str(path.absolute()))
            if not isinstance(recorded, dict) or not path.is_file():
                continue
            size = path.stat().st_size
            if size != recorded.get("size"):
                out.append(f"{path} changed since its step finished ({recorded.get('size')} bytes then, {size} now)")
            elif self._digest(path) != recorded.get("sha256"):
                out.append(f"{path} changed since its step finished (same size, other SHA-256)")
        return out

    def _digest(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path.absolute()), stat.st_size, stat.st_mtime_ns)
        if key not in self._hashed:
            self._hashed[key] = _sha256(path)
        return self._hashed[key]

    def _fingerprints(self) -> dict[str, object]:
        try:
            data = json.loads(self.outputs_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, running: set[str]) -> None:
        if running or self.state_path.exists():
            write_json_atomic(self.state_path, {"running": sorted(running)})


__all__ = ["LOCK_NAME", "OUTPUTS_NAME", "RUNNING_NAME", "PipelineLockedError", "RunGuard", "guard_folder"]
