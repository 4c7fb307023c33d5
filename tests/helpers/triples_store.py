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
