"""The floors of the house: every import inside ``kbqa_lit/`` runs down or sideways, never up or across systems.

Floors, lowest first (``docs/architecture.md``)::

    kb  <  decoding  <  data, metrics  <  backbones  <  llm  <  datamodules, modules  <  pipelines, callbacks
        <  tools, cli

``metrics`` needs only ``kb`` (logical-form EM parses S-expressions); ``backbones`` needs nothing
of the project; ``runner``, ``tracking`` and ``strategies`` are self-contained.

Each system (``coq``, ``tfs``, ``fc``, ``keqing``) owns a folder in ``data/``, ``modules/``,
``datamodules/`` and ``pipelines/``; a system's folders never import another system's, and
shared code never imports a system folder (what two systems share moves down to a shared floor).
Function-level (lazy) imports count like module-level ones.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kbqa_lit"
SYSTEMS = ("coq", "tfs", "fc", "keqing")
#: Importable from anywhere.
COMMON = {"errors", "atomic", ""}
#: Floor → the floors it may import (its own included).
ALLOWED: dict[str, set[str]] = {
    "kb": {"kb"},
    "decoding": {"kb", "decoding"},
    "metrics": {"kb", "metrics"},
    "data": {"kb", "decoding", "data"},
    "backbones": {"backbones"},
    "llm": {"backbones", "llm"},
    "datamodules": {"kb", "decoding", "data", "backbones", "datamodules"},
    "modules": {"kb", "data", "backbones", "modules"},
    "pipelines": {"kb", "decoding", "data", "metrics", "backbones", "llm", "datamodules", "modules", "pipelines"},
    "callbacks": {
        "kb",
        "decoding",
        "data",
        "metrics",
        "backbones",
        "llm",
        "datamodules",
        "modules",
        "pipelines",
        "callbacks",
    },
    "runner": {"runner"},
    "tracking": {"tracking"},
    "strategies": {"strategies"},
}
#: Top-floor modules: wire anything together.
TOP = {"tools", "cli", "lightning_cli", "demo", "__main__"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every kbqa_lit import in ``path``."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("kbqa_lit")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("kbqa_lit"):
                # ``from kbqa_lit.x import y`` may import the submodule ``x.y``
                out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return out


def _floor_and_system(module: str) -> tuple[str, str | None]:
    parts = module.split(".")[1:]
    floor = parts[0] if parts else ""
    system = parts[1] if len(parts) > 1 and parts[1] in SYSTEMS else None
    return floor, system


def _violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = _module_name(path)
        floor, system = _floor_and_system(me)
        for line, target in _imports(path):
            t_floor, t_system = _floor_and_system(target)
            where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
            if t_floor in COMMON or floor in TOP or floor == "":
                continue
            if t_floor in TOP:
                found.append(f"{where}: upward into the top floor")
            elif t_floor not in ALLOWED.get(floor, set()):
                found.append(f"{where}: {floor}/ may not import {t_floor}/")
            elif t_system is not None and t_system != system:
                kind = "another system's folder" if system else "a system folder from shared code"
                found.append(f"{where}: {kind}")
    return found


def test_no_upward_or_cross_system_import() -> None:
    assert _violations() == []


CONFIGS = PACKAGE.parent / "configs"
_CLASS_IN_SYSTEM = re.compile(r"kbqa_lit\.\w+\.(coq|tfs|fc|keqing)\.[\w.]+")


def _yaml_violations(configs: Path) -> list[str]:
    """A system's configs (``configs/<system>/``) name classes of its own folders or shared floors only."""
    found = []
    for system in SYSTEMS:
        for path in sorted((configs / system).rglob("*.yaml")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                code = line.split("#", 1)[0]
                for match in _CLASS_IN_SYSTEM.finditer(code):
                    if match.group(1) != system:
                        found.append(f"{path.relative_to(configs.parent)}:{number} names {match.group(0)}")
    return found


def test_no_config_names_another_systems_class() -> None:
    assert _yaml_violations(CONFIGS) == []


def test_the_config_rule_sees_a_foreign_class(tmp_path: Path) -> None:
    (tmp_path / "configs" / "fc").mkdir(parents=True)
    (tmp_path / "configs" / "fc" / "bad.yaml").write_text(
        "model:\n  class_path: kbqa_lit.modules.coq.schema_classifier.SchemaClassifier  # CoQ's\n"
        "data:\n  class_path: kbqa_lit.datamodules.fc.extractors.ExtractorDataModule\n"
        "# kbqa_lit.modules.tfs.x.Y in a comment is prose, not a class path\n"
    )
    assert _yaml_violations(tmp_path / "configs") == [
        "configs/fc/bad.yaml:2 names kbqa_lit.modules.coq.schema_classifier.SchemaClassifier"
    ]


def test_the_walker_sees_imports_it_must_reject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself can fail: plant bad imports in a copy of the layout and see them reported."""
    pkg = tmp_path / "kbqa_lit"
    for rel, text in {
        "kb/bad.py": "from kbqa_lit.data.schema import KBQAExample\n",
        "modules/coq/bad.py": "def f():\n    from kbqa_lit.modules.fc.extractor import ComponentExtractor\n",
        "modules/shared_bad.py": "from kbqa_lit.datamodules.coq import generation\n",
        "datamodules/tfs/ok.py": "from kbqa_lit.data.tfs.prompts import TASKS\nfrom ..split_files import SPLITS\n",
        "pipelines/coq/bad.py": "import kbqa_lit.tools.common\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", pkg)
    bad = _violations()
    assert len(bad) == 4, bad
    assert any("kb/bad.py" in v and "kb/ may not import data/" in v for v in bad)
    assert any("modules/coq/bad.py" in v and "another system's folder" in v for v in bad)
    assert any("modules/shared_bad.py" in v for v in bad)
    assert any("pipelines/coq/bad.py" in v and "top floor" in v for v in bad)
