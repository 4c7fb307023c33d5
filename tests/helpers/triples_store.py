"""A tiny embedded store from (subject, relation, object) ids and names, for tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"


def build_triples_store(root: Path, triples: Iterable[tuple[str, str, str]], names: Mapping[str, str]) -> Path:
    """Write ``root/kb.nt`` (the triples and ``type.object.name`` of each named id) and build ``root/store``."""
    lines = [f"<{NS}{s}> <{NS}{p}> <{NS}{o}> ." for s, p, o in triples]
    lines += [f'<{NS}{e}> <{NS}type.object.name> "{n}"@en .' for e, n in names.items()]
    (root / "kb.nt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"


def build_typed_store(
    root: Path, facts: Iterable[tuple[str, str, str]], types: Mapping[str, Iterable[str]], name: str = "kb"
) -> Path:
    """Write ``root/kb.nt`` (the facts and ``type.object.type`` of each typed id) and build ``root/<name>``."""
    lines = [f"<{NS}{s}> <{NS}{p}> <{NS}{o}> ." for s, p, o in facts]
    lines += [f"<{NS}{e}> <{NS}type.object.type> <{NS}{c}> ." for e, cs in types.items() for c in cs]
    (root / "kb.nt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_store(root / name, [root / "kb.nt"], "nt")
    return root / name
