"""The public data beside the checkout (``../shared``): paths that skip the test, with the path, when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

#: ``../shared`` seen from the repository root (CI clones the repository beside it).
SHARED = Path(__file__).resolve().parents[2].parent / "shared"
SHARED_DATA = SHARED / "data"
SHARED_CHECKS = SHARED / "checks"


def shared_path(*parts: str) -> Path:
    """Return a path under ``../shared/data``, skipping the calling test when it does not exist.

    Args:
        *parts: Path parts below ``../shared/data`` (e.g. ``"metaqa", "kb.txt"``).

    Returns:
        The existing path.
    """
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} (tests read ../shared/data beside the checkout)")
    return path
