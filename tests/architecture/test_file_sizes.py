"""No file of the package over 500 lines: small files with one job each (the project's convention)."""

from __future__ import annotations

from pathlib import Path

from tests.architecture.test_import_floors import PACKAGE

MAX_LINES = 500


def oversized(package: Path) -> list[str]:
    """``path: lines`` of every Python file under ``package`` longer than :data:`MAX_LINES`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(package.parent)}: {lines}")
    return found


def test_no_file_over_500_lines() -> None:
    assert oversized(PACKAGE) == []


def test_the_rule_sees_a_long_file(tmp_path: Path) -> None:
    (tmp_path / "kbqa_lit").mkdir()
    (tmp_path / "kbqa_lit" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "kbqa_lit" / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert oversized(tmp_path / "kbqa_lit") == [f"kbqa_lit/long.py: {MAX_LINES + 1}"]
