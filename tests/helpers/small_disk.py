"""A small, real file system for disk-full tests (issue 31, scenario 5): a tmpfs mounted for one test.

Mounting needs root (or ``CAP_SYS_ADMIN``); where it is refused — a non-root CI runner, a container
without the capability, another OS — the test is skipped with the reason. Writes past the size fail
with ``ENOSPC`` exactly as on a full disk; :meth:`SmallDisk.resize` gives room back (``remount``).
For a check that needs no privilege, :func:`file_size_limit` makes writes fail with ``EFBIG``
(``RLIMIT_FSIZE``) in a child process.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


class SmallDisk:
    """A mounted tmpfs.

    Args:
        path: The mount point.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def resize(self, size: str) -> None:
        """Give the file system another size (``"4m"``); the files on it stay."""
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True, capture_output=True)

    def files(self) -> list[str]:
        """Every file under the mount point, relative to it (hidden temporary files included), sorted."""
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file())


def mounted_small_disk(path: Path, size: str) -> Iterator[SmallDisk]:
    """Mount a tmpfs of ``size`` on ``path`` for the body of a fixture; skip the test where not permitted.

    Args:
        path: The folder to mount on (created).
        size: The tmpfs size, as ``mount`` takes it (``"64k"``, ``"1m"``).

    Yields:
        The mounted disk; it is unmounted afterwards.
    """
    if not sys.platform.startswith("linux") or shutil.which("mount") is None:
        pytest.skip("a tmpfs mount needs Linux and the mount command")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True
    )
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["refused"])[0]
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {reason}")
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def file_size_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` that caps the size of every file the child writes at ``limit`` bytes (``EFBIG`` past it)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply
