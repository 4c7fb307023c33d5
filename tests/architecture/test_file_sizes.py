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


#: The user documentation's limits (issue 27): the README is short, a system's page holds what it is, its stages,
#: commands, settings and current figures; the measured history goes to docs/experiments/<system>.md.
DOC_LIMITS = {"README.md": 200, **{f"docs/{s}.md": 300 for s in ("coq", "fc", "keqing", "tfs")}}


def long_docs(root: Path, limits: dict[str, int]) -> list[str]:
    """``path: lines > limit`` of every listed document over its limit (a missing one counts)."""
    found = []
    for name, limit in limits.items():
        path = root / name
        lines = len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else None
        if lines is None or lines > limit:
            found.append(f"{name}: {lines if lines is not None else 'missing'} > {limit}")
    return found


def test_the_readme_and_each_systems_page_stay_short() -> None:
    assert long_docs(PACKAGE.parent, DOC_LIMITS) == []


def test_the_doc_rule_sees_a_long_page(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x\n" * 3)
    assert long_docs(tmp_path, {"a.md": 2, "b.md": 5}) == ["a.md: 3 > 2", "b.md: missing > 5"]
