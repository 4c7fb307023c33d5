"""Freebase-style IRIs and the identifiers kbqa_lit mints for KBs that have none.

Every KB uses IRIs under ``http://rdf.freebase.com/ns/``: entity ``m.0abc`` is
``<http://rdf.freebase.com/ns/m.0abc>``, names hang off ``type.object.name`` and classes off
``type.object.type``. Datasets whose KB has bare names (MetaQA, PathQuestion) get deterministic
entity ids minted from the name by :func:`entity_id_for_name`, so a reader and ``kbqa kb build``
agree without sharing state.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

NS = "http://rdf.freebase.com/ns/"
NAME_RELATION = "type.object.name"
TYPE_RELATION = "type.object.type"
ALIAS_RELATION = "common.topic.alias"
XSD = "http://www.w3.org/2001/XMLSchema#"

ENTITY_RE = re.compile(r"^[mg]\.[A-Za-z0-9_]+\Z")  # \Z: "m.0\n" is no id ($ matches before a final newline)
SCHEMA_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_][A-Za-z0-9_-]*)+\Z")

#: Relation id prefix of each dataset with a bare-name KB.
DATASET_RELATION_PREFIX = {"metaqa": "metaqa.movie", "pathquestion": "pathquestion.relation"}
#: Entity id prefix (after ``m.``) of each dataset with a bare-name KB.
DATASET_ENTITY_PREFIX = {"metaqa": "mq", "pathquestion": "pq"}


def is_entity_id(token: str) -> bool:
    """Return whether ``token`` is a Freebase-style entity id (``m.*`` / ``g.*``)."""
    return bool(ENTITY_RE.match(token))


def is_schema_id(token: str) -> bool:
    """Return whether ``token`` is a dotted relation or class id (``people.person.nationality``)."""
    return bool(SCHEMA_ID_RE.match(token)) and not is_entity_id(token)


def iri(local: str) -> str:
    """Return the full IRI (without angle brackets) of a Freebase local id."""
    return NS + local


def local_id(full_iri: str) -> str:
    """Strip the Freebase namespace (and angle brackets) from an IRI; other IRIs are returned whole."""
    s = full_iri[1:-1] if full_iri.startswith("<") and full_iri.endswith(">") else full_iri
    return s[len(NS) :] if s.startswith(NS) else s


def _slug(name: str, max_len: int = 40) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9]+", "_", text.lower()).strip("_")
    return text[:max_len].rstrip("_")


def entity_id_for_name(name: str, dataset: str) -> str:
    """Mint the deterministic entity id of a bare KB name.

    The id is ``m.<prefix>_<slug>_<hash>``: readable, a valid S-expression entity token, and
    injective (the hash is over the exact name, so ``"Up"`` and ``"UP"`` differ).

    Args:
        name: The entity's name exactly as the dataset's KB writes it.
        dataset: ``"metaqa"`` or ``"pathquestion"``.

    Returns:
        An id such as ``m.mq_the_killing_room_1a2b3c4d``.
    """
    prefix = DATASET_ENTITY_PREFIX[dataset]
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=5).hexdigest()
    slug = _slug(name)
    return f"m.{prefix}_{slug}_{digest}" if slug else f"m.{prefix}_{digest}"


def relation_id_for(rel: str, dataset: str) -> str:
    """Return the dotted relation id of a bare dataset relation (``directed_by`` → ``metaqa.movie.directed_by``)."""
    clean = re.sub(r"[^A-Za-z0-9_]+", "_", rel.strip())
    return f"{DATASET_RELATION_PREFIX[dataset]}.{clean}"


def display_name(raw: str, dataset: str) -> str:
    """Return the ``type.object.name`` stored for a bare KB name (PathQuestion's underscores become spaces)."""
    return raw.replace("_", " ") if dataset == "pathquestion" else raw
