"""Entity linking by surface names: candidate entities of a question, top-l (CoQ step 2a).

:class:`EntityIndex` is built from a store's ``type.object.name`` and ``common.topic.alias``
triples, with each entity's popularity (its degree: the fact triples it is subject or object of,
names/types/aliases not counted). Three kinds of match over the question's word n-grams:

- **exact**: the n-gram (outer punctuation stripped) is a name (score 1.0) or an alias (0.97);
- **normalised**: equal after :func:`normalize_surface` — casefold, accents and punctuation
  dropped, ``_`` as a space, articles (``a an the``) removed — name 0.93, alias 0.90;
- **fuzzy**: a character-trigram index proposes surfaces sharing at least half of the n-gram's
  trigrams; :func:`~kbqa_lit.kb.lf.denormalize.label_similarity` (difflib) scores them, and a
  similarity ``s >= fuzzy_threshold`` gives ``0.85 * s``.

N-grams are tried longest first; the words of an exact or normalised match are not matched again
by shorter n-grams (so ``Midnight Fever`` does not also propose ``Fever``). Text in square
brackets (MetaQA marks its topic entity so: ``what movies did [Temuera Morrison] act in``) is a
hinted mention: its matches get +0.05. Candidates are ranked by score, then mention length
(words), then popularity (degree), and the best match of each entity is kept.

The index is persisted next to the store (``<store>.entities.json``, keyed by the store's build
id) so it is built once; :meth:`EntityIndex.for_store` loads or builds it. 1-hop relations of
candidates (either direction) come from one batched ``VALUES`` query per 100 entities and are
cached in memory (:meth:`EntityIndex.relations_of`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, StoreError, UserInputError
from kbqa_lit.kb.index.connectivity import usable_id
from kbqa_lit.kb.index.relation_inventory import EXCLUDED_RELATIONS, is_fact_relation
from kbqa_lit.kb.lf.denormalize import label_similarity
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, iri, local_id

log = logging.getLogger(__name__)

_INDEX_FORMAT = 1
ARTICLES = frozenset({"a", "an", "the"})
_QUESTION_WORDS = frozenset(
    "what which who whom whose where when how is are was were do did does of in on at to by for from with and or "
    "a an the that this it its as be been has have had".split()
)
_STRIP = "?!.,;:\"'()[]{}"
_NON_WORD_RE = re.compile(r"[^\w\s]|_")
_BRACKET_RE = re.compile(r"\[([^\[\]]+)\]")
SCORES = {"exact": 1.0, "alias": 0.97, "normalized": 0.93, "normalized_alias": 0.90, "fuzzy": 0.85}
HINT_BONUS = 0.05


def normalize_surface(text: str) -> str:
    """Casefold, strip accents and punctuation, ``_`` → space, drop articles, squeeze spaces."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    words = _NON_WORD_RE.sub(" ", text).split()
    return " ".join(w for w in words if w not in ARTICLES)


def _trigrams(norm: str) -> set[str]:
    padded = f"  {norm} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


@dataclass(frozen=True)
class EntityCandidate:
    """One candidate entity of a question.

    Attributes:
        id: Entity id (``m.0abc``).
        label: Its name in the KB.
        score: Match quality (see the module docstring); candidates are ranked by it first.
        mention: The question text it was matched from.
        match: ``exact``, ``alias``, ``normalized``, ``normalized_alias`` or ``fuzzy``.
        degree: Its popularity (fact triples it takes part in).
    """

    id: str
    label: str
    score: float
    mention: str
    match: str
    degree: int


class EntityIndex:
    """Surface names → entities, with exact, normalised and fuzzy lookup over question n-grams.

    Args:
        entities: ``{id: (name, degree)}`` of every named entity.
        aliases: ``(id, alias)`` pairs (ids without a name are ignored).
        store: The store that 1-hop relations are read from (optional; :meth:`relations_of` needs it).
        source: Where the index came from (a store identity), for reports.
        max_ngram: Longest question n-gram tried (words); default the longest surface, at most 12.
    """

    def __init__(
        self,
        entities: Mapping[str, tuple[str, int]],
        aliases: Iterable[tuple[str, str]] = (),
        store: Any = None,
        source: str = "",
        max_ngram: int | None = None,
    ) -> None:
        self.entities: dict[str, tuple[str, int]] = {e: (str(n), int(d)) for e, (n, d) in entities.items()}
        self.aliases: list[tuple[str, str]] = [(e, a) for e, a in aliases if e in self.entities and a]
        self.store = store
        self.source = source
        self.build_seconds = 0.0
        self._relations: dict[str, list[str]] = {}
        self._exact: dict[str, dict[str, str]] = defaultdict(dict)  # surface → {id: kind}
        self._normed: dict[str, dict[str, str]] = defaultdict(dict)
        for eid, (name, _) in self.entities.items():
            self._add(eid, name, "name")
        for eid, alias in self.aliases:
            self._add(eid, alias, "alias")
        self._keys = list(self._normed)
        self._grams: dict[str, list[int]] = defaultdict(list)
        for i, key in enumerate(self._keys):
            for g in _trigrams(key):
                self._grams[g].append(i)
        longest = max((len(k.split()) for k in self._exact), default=1)
        self.max_ngram = int(max_ngram or min(12, max(1, longest + 1)))
        self._common = max(200, len(self._keys) // 20)  # trigrams in more surfaces than this say little

    def _add(self, eid: str, surface: str, kind: str) -> None:
        surface = " ".join(surface.split())
        if not surface:
            return
        exact = self._exact[surface]
        if exact.get(eid) != "name":
            exact[eid] = kind
        norm = normalize_surface(surface)
        if norm and self._normed[norm].get(eid) != "name":
            self._normed[norm][eid] = kind

    def __len__(self) -> int:
        return len(self.entities)

    def label(self, eid: str) -> str | None:
        """The name of an entity (``None`` when it is not indexed)."""
        item = self.entities.get(eid)
        return item[0] if item else None

    def degree(self, eid: str) -> int:
        """The popularity (degree) of an entity, 0 when unknown."""
        item = self.entities.get(eid)
        return item[1] if item else 0

    @property
    def stats(self) -> dict[str, Any]:
        """Counts and build time, for reports."""
        return {
            "entities": len(self.entities),
            "aliases": len(self.aliases),
            "surfaces": len(self._exact),
            "normalized_surfaces": len(self._keys),
            "build_seconds": round(self.build_seconds, 3),
        }

    # ------------------------------------------------------------------ building and persistence

    @classmethod
    def build(cls, store: Any) -> EntityIndex:
        """Read names, aliases and degrees from a store (three queries).

        Raises:
            StoreError: When a query fails (e.g. times out: open the store with a longer timeout).
        """
        t0 = time.perf_counter()
        name_q = 'SELECT (CONCAT(STR(?e), "\\t", STR(?n)) AS ?x) WHERE { ?e <%s> ?n FILTER(isIRI(?e)) }'
        names = _pairs(store, name_q % iri(NAME_RELATION), "names")
        aliases = _pairs(store, name_q % iri(ALIAS_RELATION), "aliases")
        skip = ", ".join(f"<{iri(r)}>" for r in sorted(EXCLUDED_RELATIONS))
        degree_q = (
            'SELECT (CONCAT(STR(?e), "\\t", STR(COUNT(*))) AS ?x) WHERE { '
            f"{{ ?e ?p ?o }} UNION {{ ?s ?p ?e }} FILTER(isIRI(?e) && ?p NOT IN ({skip})) }} GROUP BY ?e"
        )
        degrees = {e: int(d) for e, d in _pairs(store, degree_q, "degrees")}
        entities: dict[str, tuple[str, int]] = {}
        for eid, name in names:
            entities.setdefault(eid, (name, degrees.get(eid, 0)))
        index = cls(entities, aliases, store=store, source=str(getattr(store, "identity", "") or repr(store)))
        index.build_seconds = time.perf_counter() - t0
        return index

    def save(self, path: str | Path) -> None:
        """Write the index as JSON (atomically)."""
        path = Path(path)
        payload = {
            "format": _INDEX_FORMAT,
            "store": self.source,
            "build_seconds": self.build_seconds,
            "entities": [[e, n, d] for e, (n, d) in self.entities.items()],
            "aliases": [list(p) for p in self.aliases],
        }
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: str | Path, store: Any = None) -> EntityIndex:
        """Read an index written by :meth:`save`.

        Raises:
            UserInputError: When the file does not exist.
            DataFormatError: When it is not an entity index.
        """
        path = Path(path)
        if not path.is_file():
            raise UserInputError(f"no entity index file: {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            entities = {e: (n, int(d)) for e, n, d in data["entities"]}
            aliases = [(e, a) for e, a in data.get("aliases", [])]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataFormatError(path, None, f"not an entity index ({exc})") from None
        index = cls(entities, aliases, store=store, source=str(data.get("store", "")))
        index.build_seconds = float(data.get("build_seconds", 0.0))
        return index

    @classmethod
    def for_store(cls, store: Any, path: str | Path | None = None, refresh: bool = False) -> EntityIndex:
        """Load the index persisted next to the store, or build and persist it (once per store build).

        Args:
            store: An opened store.
            path: The index file; default ``<store dir>.entities.json`` for an Oxigraph store
                (an endpoint store is indexed in memory only unless ``path`` is given).
            refresh: Rebuild even when the file exists.
        """
        identity = str(getattr(store, "identity", "") or repr(store))
        if path is None and getattr(store, "path", None) is not None:
            path = index_cache_path(store.path)
        if path is not None and Path(path).is_file() and not refresh:
            try:
                index = cls.load(path, store=store)
                if index.source == identity:
                    return index
            except DataFormatError as exc:
                log.warning("rebuilding the entity index: %s", exc)
        index = cls.build(store)
        if path is not None:
            try:
                index.save(path)
            except OSError as exc:
                log.warning("could not persist the entity index in %s: %s", path, exc)
        return index

    # ------------------------------------------------------------------ lookup

    def lookup(self, mention: str, fuzzy_threshold: float = 0.8) -> list[tuple[str, str, float]]:
        """``(id, match kind, score)`` of every entity a mention matches, best first."""
        out: dict[str, tuple[str, float]] = {}
        surface = mention.strip(_STRIP) or mention
        for text in dict.fromkeys((mention, surface)):
            for eid, kind in self._exact.get(text, {}).items():
                match = "exact" if kind == "name" else "alias"
                _keep(out, eid, match, SCORES[match])
        norm = normalize_surface(mention)
        if norm:
            for eid, kind in self._normed.get(norm, {}).items():
                match = "normalized" if kind == "name" else "normalized_alias"
                _keep(out, eid, match, SCORES[match])
        if not out and fuzzy_threshold < 1.0 and len(norm) >= 4:
            for key, sim in self._fuzzy(norm, fuzzy_threshold):
                for eid in self._normed[key]:
                    _keep(out, eid, "fuzzy", SCORES["fuzzy"] * sim)
        return sorted(((e, m, s) for e, (m, s) in out.items()), key=lambda t: (-t[2], -self.degree(t[0]), t[0]))

    def _fuzzy(self, norm: str, threshold: float, limit: int = 30) -> list[tuple[str, float]]:
        grams = _trigrams(norm)
        counts: Counter[int] = Counter()
        for g in grams:
            posting = self._grams.get(g)
            if posting and len(posting) <= self._common:
                counts.update(posting)
        need = 0.5 * len(grams)
        found = []
        for i, shared in counts.most_common(limit):
            if shared < need:
                break
            key = self._keys[i]
            if abs(len(key) - len(norm)) > 0.4 * max(len(key), len(norm)):
                continue
            sim = label_similarity(norm, key)
            if sim >= threshold:
                found.append((key, sim))
        return found

    def search(self, question: str, top_l: int = 10, fuzzy_threshold: float = 0.8) -> list[EntityCandidate]:
        """The top-l candidate entities of a question, best first (see the module docstring)."""
        hints = {normalize_surface(h) for h in _BRACKET_RE.findall(question)}
        words = _BRACKET_RE.sub(r" \1 ", question).split()
        covered = [False] * len(words)
        best: dict[str, EntityCandidate] = {}
        for n in range(min(self.max_ngram, len(words)), 0, -1):
            for start in range(len(words) - n + 1):
                span = range(start, start + n)
                if all(covered[i] for i in span):
                    continue
                toks = words[start : start + n]
                stripped = [t.strip(_STRIP).lower() for t in toks]
                if all(t in _QUESTION_WORDS or not t for t in stripped):
                    continue
                mention = " ".join(toks).strip(_STRIP) or " ".join(toks)
                fuzzy = fuzzy_threshold
                if any(covered[i] for i in span) or stripped[0] in _QUESTION_WORDS or stripped[-1] in _QUESTION_WORDS:
                    fuzzy = 1.0  # no fuzzy matching across covered words or from function words
                matches = self.lookup(mention, fuzzy)
                if not matches:
                    continue
                bonus = HINT_BONUS if normalize_surface(mention) in hints else 0.0
                for eid, match, score in matches:
                    cand = EntityCandidate(eid, self.entities[eid][0], score + bonus, mention, match, self.degree(eid))
                    old = best.get(eid)
                    if old is None or (cand.score, len(toks)) > (old.score, len(old.mention.split())):
                        best[eid] = cand
                if any(m != "fuzzy" for _, m, _ in matches):
                    for i in span:
                        covered[i] = True
        ranked = sorted(best.values(), key=lambda c: (-c.score, -len(c.mention.split()), -c.degree, c.id))
        return ranked[:top_l]

    # ------------------------------------------------------------------ 1-hop relations

    def relations_of(self, entity_ids: Sequence[str], batch_size: int = 100) -> dict[str, list[str]]:
        """Fact relations incident to each entity (either direction), sorted; cached per entity.

        Raises:
            StoreError: When the index has no store or a query fails.
        """
        missing = [e for e in dict.fromkeys(entity_ids) if e not in self._relations]
        if missing and self.store is None:
            raise StoreError("this entity index has no store to read 1-hop relations from")
        for eid, (out, into) in relation_edges(self.store, missing, batch_size).items():
            self._relations[eid] = sorted(out | into)
        return {e: list(self._relations[e]) for e in entity_ids}


def relation_edges(
    store: Any, entity_ids: Sequence[str], batch_size: int = 100
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per entity, the fact relations of its edges: ``(outgoing, incoming)`` (``e r ?o`` / ``?s r e``).

    Raises:
        StoreError: When a query fails.
    """
    found: dict[str, tuple[set[str], set[str]]] = {e: (set(), set()) for e in dict.fromkeys(entity_ids)}
    ids = [e for e in found if usable_id(e)]  # an id that is no IRI has no edges (and makes no SPARQL)
    for i in range(0, len(ids), batch_size):
        values = " ".join(f"<{iri(e)}>" for e in ids[i : i + batch_size])
        q = (
            'SELECT (CONCAT(STR(?e), "\\t", STR(?p), "\\t", ?d) AS ?x) WHERE { VALUES ?e { '
            f'{values} }} {{ ?e ?p ?o BIND("out" AS ?d) }} UNION {{ ?s ?p ?e BIND("in" AS ?d) }} }}'
        )
        for eid, rest in _pairs(store, q, "1-hop relations"):
            rel_iri, _, direction = rest.rpartition("\t")
            rel = local_id(rel_iri)
            if eid in found and is_fact_relation(rel):
                found[eid][0 if direction == "out" else 1].add(rel)
    return {e: (frozenset(out), frozenset(into)) for e, (out, into) in found.items()}


def _keep(out: dict[str, tuple[str, float]], eid: str, match: str, score: float) -> None:
    if eid not in out or out[eid][1] < score:
        out[eid] = (match, score)


def _pairs(store: Any, sparql: str, what: str) -> list[tuple[str, str]]:
    result = store.execute(sparql)
    if not result.ok:
        raise StoreError(f"could not read {what} from {getattr(store, 'identity', store)}: {result.error}")
    out = []
    for value in result.answers:
        head, sep, tail = value.partition("\t")
        if sep:
            out.append((local_id(head), tail))
    return out


def index_cache_path(store_path: str | Path) -> Path:
    """The file next to a store directory that persists its entity index: ``<store>.entities.json``."""
    p = Path(store_path)
    return p.with_name(p.name + ".entities.json")


__all__ = ["EntityCandidate", "EntityIndex", "index_cache_path", "normalize_surface", "relation_edges"]
