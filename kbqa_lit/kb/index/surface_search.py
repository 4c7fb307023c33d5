"""Surface-name lookup over question n-grams, independent of where the surfaces are kept.

:class:`SurfaceSearch` holds the matching rules of entity linking by name (exact, normalised and
fuzzy matches of a question's word n-grams, longest first; see
:mod:`kbqa_lit.kb.index.entity_index`). Subclasses say where the surfaces live: in memory
(:class:`~kbqa_lit.kb.index.entity_index.EntityIndex`) or in an SQLite file
(:class:`~kbqa_lit.kb.index.entity_db.DiskEntityIndex`, for KBs whose names outgrow RAM). Both
answer through the same code here, so they return the same candidates for the same names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbqa_lit.errors import StoreError
from kbqa_lit.kb.index.edges import relation_edges
from kbqa_lit.kb.lf.denormalize import label_similarity

ARTICLES = frozenset({"a", "an", "the"})
QUESTION_WORDS = frozenset(
    "what which who whom whose where when how is are was were do did does of in on at to by for from with and or "
    "a an the that this it its as be been has have had".split()
)
STRIP = "?!.,;:\"'()[]{}"
_NON_WORD_RE = re.compile(r"[^\w\s]|_")
_BRACKET_RE = re.compile(r"\[([^\[\]]+)\]")
SCORES = {"exact": 1.0, "alias": 0.97, "normalized": 0.93, "normalized_alias": 0.90, "fuzzy": 0.85}
HINT_BONUS = 0.05
#: A trigram in more surfaces than ``max(200, min(surfaces // 20, POSTING_CAP))`` is skipped by the
#: fuzzy match: it says little, and reading its posting list would grow with the KB.
POSTING_CAP = 20_000
#: Longest question n-gram tried, whatever the longest surface.
MAX_NGRAM = 12
#: Mentions whose lookups an index keeps (then it starts over).
LOOKUP_CACHE = 100_000


def normalize_surface(text: str) -> str:
    """Casefold, strip accents and punctuation, ``_`` → space, drop articles, squeeze spaces."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    words = _NON_WORD_RE.sub(" ", text).split()
    return " ".join(w for w in words if w not in ARTICLES)


def trigrams(norm: str) -> set[str]:
    """The character trigrams of a normalised surface (padded: two spaces before, one after)."""
    padded = f"  {norm} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def common_posting(surfaces: int) -> int:
    """The longest posting list the fuzzy match reads, for an index of ``surfaces`` normalised surfaces."""
    return max(200, min(surfaces // 20, POSTING_CAP))


def ngram_limit(longest_surface_words: int) -> int:
    """The longest question n-gram worth trying: one word past the longest surface, at most 12."""
    return min(MAX_NGRAM, max(1, longest_surface_words + 1))


@dataclass(frozen=True)
class EntityCandidate:
    """One candidate entity of a question.

    Attributes:
        id: Entity id (``m.0abc``).
        label: Its name in the KB.
        score: Match quality (see :mod:`kbqa_lit.kb.index.entity_index`); candidates are ranked by it first.
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


class SurfaceSearch:
    """Entity linking by surface names; subclasses provide the storage primitives.

    Attributes a subclass sets (after ``super().__init__()``, which starts the caches): ``store`` (for
    :meth:`relations_of`), ``max_ngram`` (longest n-gram tried) and ``_common`` (longest posting list
    read, :func:`common_posting`).
    """

    store: Any = None
    max_ngram: int = 1
    _common: int = 200

    def __init__(self) -> None:
        self._relations: dict[str, list[str]] = {}  # relations_of, per entity
        self._lookups: dict[tuple[str, float], list[tuple[str, str, float]]] = {}  # lookup, per mention

    # ------------------------------------------------------------------ storage primitives

    def label(self, eid: str) -> str | None:
        """The name of an entity (``None`` when it is not indexed)."""
        raise NotImplementedError

    def degree(self, eid: str) -> int:
        """The popularity (degree) of an entity, 0 when unknown."""
        raise NotImplementedError

    def _exact_kinds(self, surface: str) -> Mapping[str, str]:
        """``{id: "name" | "alias"}`` of the entities with this exact surface."""
        raise NotImplementedError

    def _normed_kinds(self, norm: str) -> Mapping[str, str]:
        """``{id: "name" | "alias"}`` of the entities with this normalised surface."""
        raise NotImplementedError

    def _posting(self, gram: str) -> Sequence[int] | None:
        """Ids of the normalised surfaces containing a trigram (``None`` when longer than ``_common``)."""
        raise NotImplementedError

    def _key(self, key_id: int) -> str:
        """The normalised surface of a posting id."""
        raise NotImplementedError

    # ------------------------------------------------------------------ lookup

    def lookup(self, mention: str, fuzzy_threshold: float = 0.8) -> list[tuple[str, str, float]]:
        """``(id, match kind, score)`` of every entity a mention matches, best first.

        Answers are kept per ``(mention, fuzzy_threshold)`` (at most :data:`LOOKUP_CACHE`; the index does
        not change once built): questions share most of their n-grams (question words, templates), and a
        fuzzy lookup reads posting lists that grow with the KB.
        """
        cache = self._lookups
        found = cache.get((mention, fuzzy_threshold))
        if found is None:
            if len(cache) >= LOOKUP_CACHE:
                cache.clear()
            found = cache[(mention, fuzzy_threshold)] = self._lookup(mention, fuzzy_threshold)
        return list(found)

    def _lookup(self, mention: str, fuzzy_threshold: float) -> list[tuple[str, str, float]]:
        out: dict[str, tuple[str, float]] = {}
        surface = mention.strip(STRIP) or mention
        for text in dict.fromkeys((mention, surface)):
            for eid, kind in self._exact_kinds(text).items():
                match = "exact" if kind == "name" else "alias"
                _keep(out, eid, match, SCORES[match])
        norm = normalize_surface(mention)
        if norm:
            for eid, kind in self._normed_kinds(norm).items():
                match = "normalized" if kind == "name" else "normalized_alias"
                _keep(out, eid, match, SCORES[match])
        if not out and fuzzy_threshold < 1.0 and len(norm) >= 4:
            for key, sim in self._fuzzy(norm, fuzzy_threshold):
                for eid in self._normed_kinds(key):
                    _keep(out, eid, "fuzzy", SCORES["fuzzy"] * sim)
        return sorted(((e, m, s) for e, (m, s) in out.items()), key=lambda t: (-t[2], -self.degree(t[0]), t[0]))

    def _fuzzy(self, norm: str, threshold: float, limit: int = 30) -> list[tuple[str, float]]:
        grams = trigrams(norm)
        # sorted: ties among the most shared keep one order (their first appearance), whatever the hash seed
        postings = [p for g in sorted(grams) if (p := self._posting(g))]
        if not postings:
            return []
        ids = np.concatenate([np.asarray(p, dtype=np.int64) for p in postings])
        counts = np.bincount(ids)
        enough = np.zeros(len(counts), dtype=bool)
        enough[np.flatnonzero(counts >= 0.5 * len(grams))] = True
        # the first appearance of each key that shares enough, in the order the postings were read
        keys, first = np.unique(ids[enough[ids]], return_index=True)
        shared = counts[keys]
        found = []
        for i in np.lexsort((first, -shared))[:limit]:  # most shared first, then first seen
            key = self._key(int(keys[i]))
            if abs(len(key) - len(norm)) > 0.4 * max(len(key), len(norm)):
                continue
            sim = label_similarity(norm, key)
            if sim >= threshold:
                found.append((key, sim))
        return found

    def search(self, question: str, top_l: int = 10, fuzzy_threshold: float = 0.8) -> list[EntityCandidate]:
        """The top-l candidate entities of a question, best first (see :mod:`kbqa_lit.kb.index.entity_index`)."""
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
                stripped = [t.strip(STRIP).lower() for t in toks]
                if all(t in QUESTION_WORDS or not t for t in stripped):
                    continue
                mention = " ".join(toks).strip(STRIP) or " ".join(toks)
                fuzzy = fuzzy_threshold
                if any(covered[i] for i in span) or stripped[0] in QUESTION_WORDS or stripped[-1] in QUESTION_WORDS:
                    fuzzy = 1.0  # no fuzzy matching across covered words or from function words
                matches = self.lookup(mention, fuzzy)
                if not matches:
                    continue
                bonus = HINT_BONUS if normalize_surface(mention) in hints else 0.0
                for eid, match, score in matches:
                    label = self.label(eid) or ""
                    cand = EntityCandidate(eid, label, score + bonus, mention, match, self.degree(eid))
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
        cache = self._relations
        missing = [e for e in dict.fromkeys(entity_ids) if e not in cache]
        if missing and self.store is None:
            raise StoreError("this entity index has no store to read 1-hop relations from")
        for eid, (out, into) in relation_edges(self.store, missing, batch_size).items():
            cache[eid] = sorted(out | into)
        return {e: list(cache[e]) for e in entity_ids}


def _keep(out: dict[str, tuple[str, float]], eid: str, match: str, score: float) -> None:
    if eid not in out or out[eid][1] < score:
        out[eid] = (match, score)


__all__ = [
    "EntityCandidate",
    "SurfaceSearch",
    "common_posting",
    "ngram_limit",
    "normalize_surface",
    "trigrams",
]
