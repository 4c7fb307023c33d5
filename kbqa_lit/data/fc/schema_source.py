"""The ontology FC-KBQA's extractors and pairs read: from GrailQA's schema files or ``schema.json``.

:func:`load_ontology` accepts a directory with GrailQA's ``fb_roles`` / ``fb_types`` /
``reverse_properties`` (:meth:`~kbqa_lit.kb.lf.ontology.Ontology.load`), a ``schema.json`` (the
synthetic world's: ``relations`` with ``domain``/``range``, ``reverse_properties``; it declares no
class hierarchy), or a directory holding one. :func:`ontology_classes` lists the classes the
class extractor ranks: every domain and range class, literal types (``type.int``,
``type.datetime``...) left out, plus the ``classes`` a ``schema.json`` lists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.lf.ontology import ROLES_FILE, Ontology

SCHEMA_FILE = "schema.json"
#: Literal value types: ranges, never classes an entity belongs to.
LITERAL_TYPE_PREFIX = "type."


def _from_schema_document(path: Path) -> tuple[Ontology, list[str]]:
    try:
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
        rels = doc["relations"]
        domains = {str(r["id"]): str(r["domain"]) for r in rels}
        ranges = {str(r["id"]): str(r["range"]) for r in rels}
        reverses = {str(a): str(b) for a, b in (doc.get("reverse_properties") or {}).items()}
        classes = [str(c["id"] if isinstance(c, dict) else c) for c in doc.get("classes") or []]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataFormatError(
            path, None, f"not a schema document with relations and their domain/range ({exc})"
        ) from None
    return Ontology(domains=domains, ranges=ranges, reverses=reverses), classes


def load_schema(spec: str | Path) -> tuple[Ontology, list[str]]:
    """The ontology and the listed classes (``[]`` for GrailQA's files) of a schema source.

    Args:
        spec: A ``schema.json`` file, a directory with ``fb_roles`` (GrailQA's ontology files), or
            a directory with a ``schema.json`` (the synthetic world).

    Raises:
        UserInputError: When ``spec`` is none of these.
        DataFormatError: When a file is malformed (file and line named).
    """
    path = Path(spec).expanduser()
    if path.is_file():
        return _from_schema_document(path)
    if (path / ROLES_FILE).is_file():
        return Ontology.load(path), []
    if (path / SCHEMA_FILE).is_file():
        return _from_schema_document(path / SCHEMA_FILE)
    raise UserInputError(f"no ontology at {path}: expected a schema.json or a directory with {ROLES_FILE}")


def load_ontology(spec: str | Path) -> Ontology:
    """The :class:`~kbqa_lit.kb.lf.ontology.Ontology` of a schema source (see :func:`load_schema`)."""
    return load_schema(spec)[0]


def ontology_classes(ontology: Ontology, listed: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Sorted classes: the listed ones and every domain and range class, literal types left out."""
    found = set(listed) | set(ontology.domains.values()) | set(ontology.ranges.values())
    return sorted(c for c in found if c and not c.startswith(LITERAL_TYPE_PREFIX))


__all__ = ["LITERAL_TYPE_PREFIX", "SCHEMA_FILE", "load_ontology", "load_schema", "ontology_classes"]
