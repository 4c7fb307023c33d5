"""tests/ is a package that mirrors kbqa_lit/: every folder is a package, shared code lives in tests/helpers/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "kbqa_lit"


def _folders(root: Path) -> list[Path]:
    return [p for p in [root, *root.rglob("*")] if p.is_dir() and "__pycache__" not in p.parts]


def test_every_test_folder_is_a_package() -> None:
    missing = [p.relative_to(TESTS).as_posix() for p in _folders(TESTS) if not (p / "__init__.py").is_file()]
    assert missing == [], f"folders without __init__.py (tests would be imported by basename): {missing}"


def test_test_folders_mirror_the_package() -> None:
    own = {"helpers", "architecture", "cli", "benchmarks", "."}  # benchmarks: the repository's benchmarks/ scripts
    strays = [
        rel
        for p in _folders(TESTS)
        if (rel := p.relative_to(TESTS).as_posix()) not in own and not (PACKAGE / rel).is_dir()
    ]
    assert strays == [], f"test folders with no package folder of that name: {strays}"


def test_helpers_hold_no_tests() -> None:
    assert list((TESTS / "helpers").glob("test_*.py")) == []
