"""The relation inventory of a knowledge base and a BM25 pre-filter over it (CoQ step 2a).

:class:`RelationInventory` holds the relation ids of a KB (``SELECT DISTINCT ?p`` over the store,
without the naming/typing plumbing: ``type.object.name``, ``type.object.type``,
``common.topic.alias`` and every IRI outside the Freebase namespace such as ``rdf:``/``rdfs:``)
and their readable text (:func:`~kbqa_lit.kb.lf.normalize.schema_to_words`:
``people.person.place_of_birth`` → ``people , person , place of birth``). It is cached in a
JSON file next to the store (``<store>.relations.json``, keyed by the store's build id), read
from a file (JSON ``{"relations": [...]}``, a JSON list, or one id per line), or scanned from an
N-Triples file (the synthetic world's ``kb.nt``) without a store.

:class:`BM25RelationRanker` scores the relation words against a question with
``rank_bm25.BM25Okapi`` (lower-cased word tokens, a light plural folding on both sides) and
returns the top-N relations — the pre-filter in front of the cross-encoder when the inventory is
large; :meth:`BM25RelationRanker.prefilter` returns the whole inventory when it has at most N
relations (or N is 0/``None``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

from kbqa_lit.errors import DataFormatError, StoreError, UserInputError
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, NS, TYPE_RELATION, is_schema_id
from kbqa_lit.kb.lf.normalize import schema_to_words

log = logging.getLogger(__name__)

#: Relations that carry names and types rather than facts; never candidates.
EXCLUDED_RELATIONS: frozenset[str] = frozenset(
    {NAME_RELATION, TYPE_RELATION, ALIAS_RELATION, "type.object.key", "type.object.id", "common.topic.description"}
)
_INVENTORY_FORMAT = 1
_WORD_RE = re.compile(r"[a-z0-9]+")
_NT_PREDICATE_RE = re.compile(r"^\s*(?:<[^>]*>|_:\S+)\s+<([^>]*)>")
#: Function words dropped on both sides before BM25 (they only add noise to relation words).
STOPWORDS: frozenset[str] = frozenset(
    "a an the of in on at to by for from with and or is are was were be been do did does has have had "
    "what which who whom whose where when how that this these those it its as".split()
)


def is_fact_relation(rel: str) -> bool:
    """Whether a store's predicate (namespace stripped) is a fact relation worth retrieving."""
    return is_schema_id(rel) and rel not in EXCLUDED_RELATIONS


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased word tokens, stopwords dropped, plurals folded (``actors`` → ``actor``); BM25's tokenizer."""
    out = []
    for tok in _WORD_RE.findall(text.lower().replace("_", " ")):
        if tok in STOPWORDS:
            continue
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
    return out


def inventory_cache_path(store_path: str | Path) -> Path:
    """The JSON file next to a store directory that caches its inventory: ``<store>.relations.json``."""
    p = Path(store_path)
    return p.with_name(p.name + ".relations.json")


@dataclass
class RelationInventory:
    """The fact relations of a KB, in a fixed (sorted) order, with their readable words.

    Attributes:
        relations: Relation ids, sorted and unique.
        source: Where the inventory came from (a store identity or a file path), for reports.
    """

    relations: tuple[str, ...]
    source: str = ""
    _words: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.relations = tuple(sorted(dict.fromkeys(r for r in self.relations if r)))
        self._words = {r: schema_to_words(r) for r in self.relations}

    def __len__(self) -> int:
        return len(self.relations)

    def __iter__(self) -> Iterator[str]:
        return iter(self.relations)

    def __contains__(self, rel: object) -> bool:
        return rel in self._words

    def words(self, rel: str) -> str:
        """Readable text of a relation id (for ids outside the inventory too)."""
        return self._words.get(rel) or schema_to_words(rel)

    @property
    def texts(self) -> list[str]:
        """The words of every relation, in inventory order."""
        return [self._words[r] for r in self.relations]

    # ------------------------------------------------------------------ sources

    @classmethod
    def from_relations(cls, relations: Iterable[str], source: str = "") -> RelationInventory:
        """An inventory of the given ids (non fact relations dropped)."""
        return cls(tuple(r for r in relations if is_fact_relation(r)), source=source)

    @classmethod
    def from_file(cls, path: str | Path) -> RelationInventory:
        """Read an inventory file: JSON ``{"relations": [...]}``, a JSON list, or one id per line.

        Raises:
            UserInputError: When the file does not exist.
            DataFormatError: When the file holds no usable relation ids.
        """
        path = Path(path).expanduser()
        if not path.is_file():
            raise UserInputError(f"no relation inventory file: {path}")
        text = path.read_text(encoding="utf-8")
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError:
            data = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        if isinstance(data, dict):
            data = data.get("relations")
        if not isinstance(data, list) or not all(isinstance(r, str) for r in data):
            raise DataFormatError(
                path, None, 'expected {"relations": [ids...]}, a JSON list of ids, or one id per line'
            )
        bad = [r for r in data if not is_schema_id(r)]
        if bad:
            raise DataFormatError(path, None, f"not relation ids: {', '.join(bad[:5])}")
        inv = cls.from_relations(data, source=str(path))
        if not inv.relations:
            raise DataFormatError(path, None, "no relation ids")
        return inv

    @classmethod
    def from_ntriples(cls, path: str | Path) -> RelationInventory:
        """Scan the predicates of an N-Triples file (no store needed; the synthetic world's ``kb.nt``).

        Raises:
            UserInputError: When the file does not exist.
        """
        path = Path(path).expanduser()
        if not path.is_file():
            raise UserInputError(f"no N-Triples file: {path}")
        seen: set[str] = set()
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                m = _NT_PREDICATE_RE.match(line)
                if m and m.group(1).startswith(NS):
                    seen.add(m.group(1)[len(NS) :])
        return cls.from_relations(seen, source=str(path))

    @classmethod
    def from_store(cls, store: Any, cache_path: str | Path | None = None, refresh: bool = False) -> RelationInventory:
        """The inventory of a store, cached in a JSON file.

        A KB that describes its schema as Freebase does is asked for its ``type.property`` nodes
        (:func:`schema_relations_query`, bounded by the ontology); any other KB is scanned once
        (``SELECT DISTINCT ?p``).

        Args:
            store: An opened store (anything with ``execute(sparql)``; an ``OxigraphStore`` gives
                its own cache location next to its directory).
            cache_path: The cache file; default ``<store dir>.relations.json`` for an Oxigraph
                store, none for an endpoint.
            refresh: Ignore an existing cache file.

        Raises:
            StoreError: When the query fails.
        """
        identity = str(getattr(store, "identity", "") or repr(store))
        if cache_path is None and getattr(store, "path", None) is not None:
            cache_path = inventory_cache_path(store.path)
        cache = Path(cache_path) if cache_path is not None else None
        if cache is not None and cache.is_file() and not refresh:
            try:
                data = json.loads(cache.read_text(encoding="utf-8"))
                if data.get("format") == _INVENTORY_FORMAT and data.get("store") == identity:
                    return cls(tuple(data["relations"]), source=identity)
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                log.warning("ignoring an unreadable relation inventory cache %s", cache)
        result = store.execute(schema_relations_query())  # Freebase's schema: bounded by the ontology
        if not (result.ok and result.answers):  # no schema nodes: one scan of the KB (then cached)
            result = store.execute("SELECT DISTINCT ?p WHERE { ?s ?p ?o }")
        if not result.ok:
            raise StoreError(f"could not list the relations of {identity}: {result.error}")
        inv = cls.from_relations(result.answers, source=identity)
        if cache is not None:
            inv.save(cache, store=identity)
        return inv

    def save(self, path: str | Path, store: str = "") -> None:
        """Write the inventory as JSON (atomically; an unwritable place only logs a warning)."""
        path = Path(path)
        payload = {"format": _INVENTORY_FORMAT, "store": store or self.source, "relations": list(self.relations)}
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(payload, indent=0) + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            log.warning("could not cache the relation inventory in %s: %s", path, exc)
            tmp.unlink(missing_ok=True)


def load_inventory(spec: str | Path, refresh: bool = False) -> RelationInventory:
    """An inventory from a store directory or URL, an inventory file, or an N-Triples file (``.nt``).

    Raises:
        UserInputError: When ``spec`` names nothing usable.
    """
    text = str(spec)
    path = Path(text).expanduser()
    if path.is_file():
        return RelationInventory.from_ntriples(path) if path.suffix == ".nt" else RelationInventory.from_file(path)
    from kbqa_lit.kb.store import is_endpoint, open_store

    if path.is_dir() or is_endpoint(text):
        store = open_store(text, timeout=600.0, cache_size=0)
        try:
            return RelationInventory.from_store(store, refresh=refresh)
        finally:
            store.close()
    raise UserInputError(f"no store, inventory file or N-Triples file at {text}")


class BM25RelationRanker:
    """BM25 (``rank_bm25.BM25Okapi``) over the relation words of an inventory.

    Args:
        inventory: The relations to rank.
        top_n: How many relations :meth:`prefilter` keeps; ``None`` or 0 keeps them all, and an
            inventory of at most ``top_n`` relations is returned whole.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    def __init__(self, inventory: RelationInventory, top_n: int | None = 100, k1: float = 1.5, b: float = 0.75) -> None:
        if not len(inventory):
            raise UserInputError("the relation inventory is empty")
        self.inventory = inventory
        self.top_n = int(top_n or 0)
        self._bm25 = BM25Okapi([bm25_tokens(t) or ["_"] for t in inventory.texts], k1=k1, b=b)

    def scores(self, question: str) -> list[float]:
        """BM25 score of every relation (inventory order) for ``question``."""
        return [float(s) for s in self._bm25.get_scores(bm25_tokens(question))]

    def rank(self, question: str, n: int | None = None) -> list[tuple[str, float]]:
        """The ``n`` best ``(relation, score)`` pairs, best first (ties in inventory order); all for ``None``."""
        scores = self.scores(question)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        rels = self.inventory.relations
        return [(rels[i], scores[i]) for i in (order if n is None else order[:n])]

    def prefilter(self, question: str, n: int | None = None) -> list[str]:
        """Candidate relations for the cross-encoder: the BM25 top-N, or everything when the inventory is small."""
        n = self.top_n if n is None else int(n)
        if n <= 0 or len(self.inventory) <= n:
            return list(self.inventory.relations)
        return [r for r, _ in self.rank(question, n)]


def recall_at(gold: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """Share of ``gold`` items found in the first ``k`` of ``ranked`` (1.0 when there is no gold)."""
    if not gold:
        return 1.0
    top = set(ranked[:k])
    return sum(g in top for g in gold) / len(gold)


#: At most this many classes are read from the schema nodes (Freebase has about 10^4 ``type.type``
#: nodes with its user and base types; the cap bounds a query whose cost must not grow with the KB).
CLASS_LIMIT = 100_000


def schema_classes_query(limit: int = CLASS_LIMIT) -> str:
    """The bounded class query: the schema's ``type.type`` nodes (Freebase's ontology), ``LIMIT limit``."""
    return f"SELECT ?c WHERE {{ ?c <{NS}{TYPE_RELATION}> <{NS}type.type> }} LIMIT {int(limit)}"


def schema_relations_query(limit: int = CLASS_LIMIT) -> str:
    """The bounded relation query: the schema's ``type.property`` nodes, ``LIMIT limit``."""
    return f"SELECT ?p WHERE {{ ?p <{NS}{TYPE_RELATION}> <{NS}type.property> }} LIMIT {int(limit)}"


def classes_cache_path(store_path: str | Path) -> Path:
    """The JSON file next to a store directory that caches its scanned classes: ``<store>.classes.json``."""
    p = Path(store_path)
    return p.with_name(p.name + ".classes.json")


def store_classes(store: Any) -> list[str]:
    """The classes of a store's entities.

    A KB that describes its schema as Freebase does (each class a node of type ``type.type``) is
    asked for those nodes: one bounded query (:func:`schema_classes_query`) whose cost is the
    ontology's size, not the KB's. A KB without schema nodes (MetaQA, the synthetic world, the
    GrailQA mini-KB) is scanned once — the ``type.object.type`` objects that are schema ids — and
    the list is cached next to an on-disk store (``<store>.classes.json``, keyed by its build id),
    so later processes read the file instead of scanning again.

    Raises:
        StoreError: When a query fails.
    """
    identity = str(getattr(store, "identity", "") or repr(store))
    result = store.execute(schema_classes_query())
    if not result.ok:
        raise StoreError(f"could not read the classes of {identity}: {result.error}")
    if result.answers:
        return [c for c in result.answers if is_schema_id(c)]
    cache = classes_cache_path(store.path) if getattr(store, "path", None) is not None else None
    if cache is not None and cache.is_file():
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
            if data.get("format") == _INVENTORY_FORMAT and data.get("store") == identity:
                return [str(c) for c in data["classes"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            log.warning("ignoring an unreadable class cache %s", cache)
    result = store.execute(f"SELECT DISTINCT ?c WHERE {{ ?s <{NS}{TYPE_RELATION}> ?c }}")
    if not result.ok:
        raise StoreError(f"could not read the classes of {identity}: {result.error}")
    classes = [c for c in result.answers if is_schema_id(c)]
    if cache is not None:
        payload = {"format": _INVENTORY_FORMAT, "store": identity, "classes": classes}
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(payload) + "\n", encoding="utf-8")
            tmp.replace(cache)
        except OSError as exc:
            log.warning("could not cache the classes in %s: %s", cache, exc)
            tmp.unlink(missing_ok=True)
    return classes


__all__ = [
    "CLASS_LIMIT",
    "EXCLUDED_RELATIONS",
    "BM25RelationRanker",
    "RelationInventory",
    "bm25_tokens",
    "classes_cache_path",
    "inventory_cache_path",
    "is_fact_relation",
    "load_inventory",
    "recall_at",
    "schema_classes_query",
    "schema_relations_query",
    "store_classes",
]
