"""The texts, gold labels and candidates of CoQ's joint relation/entity classifier (steps 2b–3).

Per example the classifier reads two kinds of items (one shared T5 encoder, two task prefixes)::

    Relation Classification: q ; D ; people , person , place of birth
    Entity Classification: q ; D ; Justin Bieber | people , person , place of birth | ...

``D`` is the decomposition (or one sub-chain ``[SUBQ] q_i [ANS] a_i`` of it when patterns are
scored; left out for the "w/o decomposition" ablation). An entity item lists the entity's label
and its 1-hop relations that are among the *refined* relations (see the datamodule's
``entity_item_relations`` setting: gold plus predicted, or only predicted, while training; only
predicted at validation, test and predict), written as words (:func:`~kbqa_lit.kb.lf.normalize.schema_to_words`).

Gold relations of an example are the relations of its gold S-expression; gold entities are the
entity atoms of that S-expression (the topic entities when it has none).

Candidates come from the meta fields of the retrieval stage (``relation_candidates``,
``entity_candidates``, ``entity_relations``) or are sampled here from the KB
(:class:`SchemaKB`): gold items plus negatives — 1-hop relations of the gold entities and
relations of the inventory, other entities with the same name and named 1-hop neighbours —
chosen deterministically from ``(seed, qid)``.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kbqa_lit.data.coq.classifier_texts import (  # noqa: F401 (re-exported: the datamodule's item texts)
    ENT_PREFIX,
    ENT_REL_SEP,
    ENT_TASK,
    PART_SEP,
    REL_PREFIX,
    REL_TASK,
    entity_item_relations,
    entity_text,
    relation_text,
)
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError, StoreError, UserInputError
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, TYPE_RELATION, iri, is_entity_id, local_id
from kbqa_lit.kb.lf.sexpr import schema_items

#: Relations that are bookkeeping, not schema: never candidates.
NON_SCHEMA_RELATIONS = frozenset({NAME_RELATION, TYPE_RELATION, ALIAS_RELATION})
_KEY_SEP = "\t"


def gold_relations(ex: KBQAExample) -> list[str]:
    """Relations of the gold S-expression in order ( ``[]`` without one or when it does not parse)."""
    if not ex.s_expression:
        return []
    try:
        return list(schema_items(ex.s_expression).relations)
    except SExprError:
        return []


def gold_entities(ex: KBQAExample) -> list[str]:
    """Entity atoms of the gold S-expression, else the topic entities."""
    if ex.s_expression:
        try:
            found = list(schema_items(ex.s_expression).entities)
        except SExprError:
            found = []
        if found:
            return found
    return list(ex.topic_entities)


def refined_relations_of(ex: KBQAExample) -> list[str]:
    """Relation ids of ``meta["refined_relations"]`` (``[[id, prob], ...]`` or ids), in order."""
    out: list[str] = []
    for item in ex.meta.get("refined_relations") or []:
        rel = item[0] if isinstance(item, list | tuple) else item
        out.append(str(rel))
    return out


@dataclass
class Candidates:
    """The candidate items of one example.

    Attributes:
        relations: Candidate relation ids, in rank order.
        entities: Candidate entity id → label, in rank order.
        entity_relations: Entity id → its 1-hop relations (either direction).
    """

    relations: list[str] = field(default_factory=list)
    entities: dict[str, str] = field(default_factory=dict)
    entity_relations: dict[str, list[str]] = field(default_factory=dict)


def _split_key(value: str) -> tuple[str, str]:
    head, _, tail = value.partition(_KEY_SEP)
    return local_id(head), local_id(tail) if tail.startswith("http") else tail


class SchemaKB:
    """Cached KB lookups for candidates: relation inventory, 1-hop relations, names, neighbours.

    Every lookup goes through ``store.execute`` (full IRIs, batched with ``VALUES``) and is cached
    here per entity; a failed query raises :class:`~kbqa_lit.errors.StoreError` naming it.

    Args:
        store: Anything with ``execute(sparql) -> ExecutionResult`` (an Oxigraph or endpoint store).
        batch_size: Entities per ``VALUES`` query.
        relations_file: The relation inventory: a ``schema.json`` with ``relations`` or a text file
            of one relation id per line; ``None`` asks the store (``SELECT DISTINCT ?p``, fine for
            small KBs, not for Freebase).
    """

    def __init__(self, store: Any, batch_size: int = 64, relations_file: str | Path | None = None) -> None:
        self.store = store
        self.batch_size = batch_size
        self.relations_file = Path(relations_file) if relations_file else None
        self._inventory: list[str] | None = None
        self._one_hop: dict[str, list[str]] = {}
        self._neighbours: dict[str, dict[str, str]] = {}
        self._names: dict[str, str | None] = {}

    def _select(self, sparql: str) -> list[str]:
        result = self.store.execute(sparql)
        if not result.ok:
            raise StoreError(f"KB lookup failed ({result.error}): {sparql[:200]}")
        return list(result.answers)

    def _batched(self, entities: Iterable[str], cache: dict[str, list[str]], query: str) -> None:
        missing = [e for e in dict.fromkeys(entities) if e not in cache]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            found: dict[str, list[str]] = {e: [] for e in chunk}
            values = " ".join(f"<{iri(e)}>" for e in chunk)
            for value in self._select(query.replace("__VALUES__", values)):
                ent, other = _split_key(value)
                if ent in found:
                    found[ent].append(other)
            cache.update(found)

    def relation_inventory(self) -> list[str]:
        """Every schema relation (sorted), from ``relations_file`` or the store."""
        if self._inventory is None:
            if self.relations_file is not None:
                rels = _read_relations_file(self.relations_file)
            else:
                rels = [local_id(p) for p in self._select("SELECT DISTINCT ?p WHERE { ?s ?p ?o }")]
            self._inventory = sorted(r for r in set(rels) if r not in NON_SCHEMA_RELATIONS and "://" not in r)
        return self._inventory

    def one_hop_relations(self, entities: Iterable[str]) -> dict[str, list[str]]:
        """Entity → relations incident to it in either direction (sorted, bookkeeping ones left out)."""
        entities = list(entities)
        query = (
            "SELECT DISTINCT ?k WHERE { VALUES ?e { __VALUES__ } { ?e ?p ?o } UNION { ?s ?p ?e } "
            f'BIND(CONCAT(STR(?e), "{_KEY_SEP}", STR(?p)) AS ?k) }}'
        )
        self._batched(entities, self._one_hop, query)
        return {
            e: sorted(r for r in set(self._one_hop[e]) if r not in NON_SCHEMA_RELATIONS and "://" not in r)
            for e in entities
        }

    def names(self, entities: Iterable[str]) -> dict[str, str | None]:
        """Entity → its ``type.object.name`` (``None`` when it has none)."""
        wanted = list(dict.fromkeys(entities))
        entities = [e for e in wanted if e not in self._names]
        holder: dict[str, list[str]] = {}
        query = (
            f"SELECT DISTINCT ?k WHERE {{ VALUES ?e {{ __VALUES__ }} ?e <{iri(NAME_RELATION)}> ?n . "
            f'BIND(CONCAT(STR(?e), "{_KEY_SEP}", STR(?n)) AS ?k) }}'
        )
        self._batched(entities, holder, query)
        for e in entities:
            found = sorted(holder.get(e) or [])
            self._names[e] = found[0] if found else None
        return {e: self._names[e] for e in wanted}

    def related_entities(self, entity: str) -> dict[str, str]:
        """Named entities sharing ``entity``'s name or one hop away from it: id → name (sorted by id)."""
        if entity not in self._neighbours:
            name = iri(NAME_RELATION)
            e = f"<{iri(entity)}>"
            query = (
                f"SELECT DISTINCT ?k WHERE {{ {{ {e} <{name}> ?nm . ?x <{name}> ?nm }} UNION "
                f"{{ {e} ?p ?x . ?x <{name}> ?nm }} UNION {{ ?x ?p {e} . ?x <{name}> ?nm }} "
                f'FILTER(?x != {e}) BIND(CONCAT(STR(?x), "{_KEY_SEP}", STR(?nm)) AS ?k) }}'
            )
            found: dict[str, str] = {}
            for value in self._select(query):
                ent, label = _split_key(value)
                if is_entity_id(ent):
                    found.setdefault(ent, label)
            self._neighbours[entity] = dict(sorted(found.items()))
        return self._neighbours[entity]


def _read_relations_file(path: Path) -> list[str]:
    if not path.is_file():
        raise UserInputError(f"relations_file not found: {path}")
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data.get("relations", []) if isinstance(data, Mapping) else data
        return [str(r["id"] if isinstance(r, Mapping) else r) for r in items]
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def meta_candidates(ex: KBQAExample) -> Candidates | None:
    """The retrieval stage's candidates of ``ex`` (``None`` when meta has no ``relation_candidates``).

    ``entity_relations`` is left empty for entities the meta does not cover (look them up).
    """
    rel_meta = ex.meta.get("relation_candidates")
    if rel_meta is None:
        return None
    rels = [str(item[0] if isinstance(item, list | tuple) else item) for item in rel_meta]
    ents_meta = ex.meta.get("entity_candidates") or {}
    ents = {str(k): str(v) for k, v in ents_meta.items()} if isinstance(ents_meta, Mapping) else {}
    er_meta = ex.meta.get("entity_relations") or {}
    er = {str(k): [str(r) for r in v] for k, v in er_meta.items()} if isinstance(er_meta, Mapping) else {}
    return Candidates(list(dict.fromkeys(rels)), ents, er)


def sampled_candidates(ex: KBQAExample, kb: SchemaKB, limit: int, seed: int = 0) -> Candidates:
    """Gold items plus negatives sampled from the KB, deterministic in ``(seed, ex.qid)``.

    Relation negatives: up to half from the 1-hop relations of the gold entities (hard ones),
    the rest from the inventory. Entity negatives: entities with the same name or one hop from a
    gold entity. Candidates are shuffled so their position says nothing about gold.
    """
    rng = random.Random(f"{seed}:{ex.qid}")
    gold_r = gold_relations(ex)[:limit]
    gold_e = gold_entities(ex)[:limit]
    hops = kb.one_hop_relations(gold_e)
    near = sorted({r for e in gold_e for r in hops[e]} - set(gold_r))
    hard = rng.sample(near, min(len(near), max(0, (limit - len(gold_r) + 1) // 2)))
    rest = sorted(set(kb.relation_inventory()) - set(gold_r) - set(hard))
    easy = rng.sample(rest, min(len(rest), max(0, limit - len(gold_r) - len(hard))))
    rels = gold_r + hard + easy
    rng.shuffle(rels)
    labels = ex.entity_labels()
    missing = [e for e in gold_e if e not in labels]
    if missing:
        labels.update({e: n for e, n in kb.names(missing).items() if n})
    pool: dict[str, str] = {}
    for e in gold_e:
        pool.update(kb.related_entities(e))
    negatives = sorted(set(pool) - set(gold_e))
    chosen = rng.sample(negatives, min(len(negatives), max(0, limit - len(gold_e))))
    ent_ids = gold_e + chosen
    rng.shuffle(ent_ids)
    ents = {e: labels.get(e) or pool.get(e) or e for e in ent_ids}
    return Candidates(rels, ents, kb.one_hop_relations(ent_ids))


def with_gold(cands: Candidates, ex: KBQAExample, limit: int) -> Candidates:
    """``cands`` with the gold relations and entities put first, cut to ``limit`` each (training)."""
    gold_r = gold_relations(ex)
    rels = list(dict.fromkeys(gold_r + cands.relations))[: max(limit, len(gold_r))]
    labels = ex.entity_labels()
    gold_e = gold_entities(ex)
    ids = list(dict.fromkeys(gold_e + list(cands.entities)))[: max(limit, len(gold_e))]
    ents = {e: cands.entities.get(e) or labels.get(e) or e for e in ids}
    return Candidates(rels, ents, dict(cands.entity_relations))


def fold_of(qid: str, num_folds: int) -> int:
    """The cross-fold fold of a question: ``crc32(qid) mod num_folds`` (stable across files and runs)."""
    return zlib.crc32(qid.encode("utf-8")) % num_folds


def in_fold(examples: list[KBQAExample], num_folds: int, fold: int, *, held_out: bool) -> list[KBQAExample]:
    """The examples of fold ``fold`` (``held_out=True``) or of every other fold (``held_out=False``)."""
    return [ex for ex in examples if (fold_of(ex.qid, num_folds) == fold) == held_out]


def read_refined_relations(paths: Iterable[str | Path]) -> dict[str, list[Any]]:
    """``qid → meta["refined_relations"]`` of the rows of JSON-lines files (a cross-fold pass's output).

    Raises:
        UserInputError: When a file is missing or a row has no ``refined_relations``.
    """
    out: dict[str, list[Any]] = {}
    for path in map(Path, paths):
        if not path.is_file():
            raise UserInputError(f"no such refined-relations file: {path} (run the cross-fold predict step first)")
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            meta = row.get("meta") or {}
            if "refined_relations" not in meta:
                raise UserInputError(f"{path}:{lineno}: row {row.get('qid')!r} has no meta.refined_relations")
            out[str(row["qid"])] = list(meta["refined_relations"])
    return out


class ItemCollator:
    """Pad a list of items (``input_ids``, ``label``, ``task``, ``index``) into one tensor batch."""

    def __init__(self, pad_token_id: int) -> None:
        self.pad_token_id = pad_token_id

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        """Right-pad to the longest item; the attention mask is 1 on real tokens."""
        width = max(len(it["input_ids"]) for it in items)
        ids = torch.full((len(items), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(items), width), dtype=torch.long)
        for row, it in enumerate(items):
            n = len(it["input_ids"])
            ids[row, :n] = torch.tensor(it["input_ids"], dtype=torch.long)
            mask[row, :n] = 1
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "labels": torch.tensor([float(it["label"]) for it in items]),
            "task": torch.tensor([int(it["task"]) for it in items], dtype=torch.long),
            "index": torch.tensor([int(it["index"]) for it in items], dtype=torch.long),
        }


__all__ = [
    "ItemCollator",
    "ENT_PREFIX",
    "ENT_TASK",
    "NON_SCHEMA_RELATIONS",
    "REL_PREFIX",
    "REL_TASK",
    "Candidates",
    "SchemaKB",
    "entity_item_relations",
    "entity_text",
    "fold_of",
    "gold_entities",
    "gold_relations",
    "in_fold",
    "meta_candidates",
    "read_refined_relations",
    "refined_relations_of",
    "relation_text",
    "sampled_candidates",
    "with_gold",
]
