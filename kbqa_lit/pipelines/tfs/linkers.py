"""Entity linking of TFS-KBQA's generated mentions: mention → candidate KB ids, one linker each.

The models write entities as *mentions* (``[ john f. kennedy ]``); before a logical form can run,
each mention needs KB ids. A *linker* maps the mentions of one question to scored candidates, and
:func:`merge_links` merges several linkers per mention (in the order the config lists them, each
contributing at most ``top_k`` ids; an id found twice keeps its first place). The ``kb`` linkers
are a stand-in for the paper's entity linker; ``file`` merges a trained linker's results. The linkers:

- :class:`NameLinker` (``kb``, ``kb_match: exact``): ids whose name is exactly the mention (any
  ``Mapping`` name → ids; in the pipeline a :class:`~kbqa_lit.pipelines.selection.execution_guided.KBNameLookup`
  on the store, one SPARQL query per new mention — works on a Freebase endpoint too);
- :class:`IndexLinker` (``kb``, ``kb_match: fuzzy``): the store's surface-name index
  (:class:`~kbqa_lit.kb.index.entity_index.EntityIndex`: names and aliases, exact, normalised, then
  fuzzy). Building it reads every name of the store: meant for embedded stores, not full Freebase;
- :class:`ResultsFileLinker` (``file``): precomputed linking results (ELQ, ReFinED, ...) read by
  :func:`read_linking_results`; a generated mention takes the candidates of the file's mention that
  equals it (case- and space-insensitive) or, failing that, is most similar to it (at least
  ``fuzzy_threshold``; :func:`~kbqa_lit.kb.lf.denormalize.label_similarity`), or whose candidate label
  matches it.

Results file (JSON lines, one object per question; or JSON: a list of such objects, or one object
``{qid: {mention: [candidates]}}``)::

    {"qid": "WebQTest-12", "mentions": {"john f. kennedy": [["m.0d3k14", 0.98], ["m.0gx1", 0.41]]}}
    {"id": "WebQTest-13", "entities": [{"mention": "jamaica", "id": "m.03_r3", "score": 0.93}]}

The question key is ``qid``, ``id`` or ``question_id``; ``mentions`` maps a mention to its
candidates, ``entities`` lists ``{mention, id, score[, label]}`` items (the flat form ELQ/ReFinED
outputs take, one row per linked span). A candidate is ``[id, score]``, ``{"id", "score"[, "label"]}``
or a bare id (score 1.0); a full Freebase IRI is cut to its id. A missing file or a malformed
record is a :class:`~kbqa_lit.errors.UserInputError` naming the file and the line (JSON lines) or
the record. No linker ever reads an example's gold entities: only the question id and the mentions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.denormalize import label_similarity

log = logging.getLogger(__name__)

#: mention → ``[(id, score), ...]``, best first.
Links = dict[str, list[tuple[str, float]]]
#: Per question: mention → ``[(id, score, label or None), ...]``, best first.
LinkingResults = dict[str, dict[str, list[tuple[str, float, str | None]]]]
FREEBASE_NS = "http://rdf.freebase.com/ns/"
QID_KEYS: tuple[str, ...] = ("qid", "id", "question_id")


class MentionLinker(Protocol):
    """Maps the mentions of one question to scored candidate ids."""

    name: str

    def link(self, ex: KBQAExample, mentions: Sequence[str]) -> Links:
        """Candidates per mention (mentions without any may be left out), best first."""
        ...


class NameLinker:
    """Exact names: ``lookup[mention]`` → ids (a ``KeyError`` or a failing lookup links nothing).

    Args:
        lookup: Name → ids (e.g. :class:`~kbqa_lit.pipelines.selection.execution_guided.KBNameLookup`).
        name: The linker's name in reports.
    """

    def __init__(self, lookup: Mapping[str, Sequence[str]], name: str = "kb") -> None:
        self.lookup = lookup
        self.name = name

    def link(self, ex: KBQAExample, mentions: Sequence[str]) -> Links:
        """Every id named exactly like each mention, score 1.0."""
        out: Links = {}
        for mention in dict.fromkeys(mentions):
            try:
                ids = list(self.lookup.get(mention) or ())
            except Exception:  # a lookup that fails (a store hiccup) links nothing
                ids = []
            if ids:
                out[mention] = [(e, 1.0) for e in ids]
        return out


class IndexLinker:
    """Exact, normalised and fuzzy names and aliases from the store's surface-name index.

    Args:
        index: An :class:`~kbqa_lit.kb.index.entity_index.EntityIndex` (``EntityIndex.for_store(store)``).
        fuzzy_threshold: Least similarity of a fuzzy match.
        name: The linker's name in reports.
    """

    def __init__(self, index: Any, fuzzy_threshold: float = 0.8, name: str = "kb") -> None:
        self.index = index
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.name = name

    def link(self, ex: KBQAExample, mentions: Sequence[str]) -> Links:
        """The index's matches of each mention with their scores."""
        out: Links = {}
        for mention in dict.fromkeys(mentions):
            found = [(e, float(s)) for e, _, s in self.index.lookup(mention, self.fuzzy_threshold)]
            if found:
                out[mention] = found
        return out


class ResultsFileLinker:
    """Precomputed linking results per question (see the module docstring for the file).

    Args:
        path: The results file (JSON lines or JSON).
        fuzzy_threshold: Least similarity between a generated mention and a file mention.
        name: The linker's name in reports.

    Raises:
        UserInputError: A missing or malformed file (naming the file and the line or record).
    """

    def __init__(self, path: str | Path, fuzzy_threshold: float = 0.8, name: str = "file") -> None:
        self.path = Path(path)
        self.results = read_linking_results(self.path)
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.name = name

    def _match(self, mention: str, found: Mapping[str, list[tuple[str, float, str | None]]]) -> list[tuple]:
        if mention in found:
            return found[mention]
        folded = _fold(mention)
        for key, cands in found.items():
            if _fold(key) == folded or any(label and _fold(label) == folded for _, _, label in cands):
                return cands
        best, best_score = None, self.fuzzy_threshold
        for key, cands in found.items():
            score = label_similarity(mention, key)
            if score >= best_score:
                best, best_score = cands, score
        return best or []

    def link(self, ex: KBQAExample, mentions: Sequence[str]) -> Links:
        """The file's candidates of the file mention matching each generated mention."""
        found = self.results.get(ex.qid)
        if not found:
            return {}
        out: Links = {}
        for mention in dict.fromkeys(mentions):
            cands = self._match(mention, found)
            if cands:
                out[mention] = [(e, s) for e, s, _ in cands]
        return out


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def merge_links(per_linker: Sequence[Links], top_k: int) -> dict[str, list[str]]:
    """Merge linkers' candidates per mention: linker order, at most ``top_k`` ids from each, no repeats."""
    out: dict[str, list[str]] = {}
    for links in per_linker:
        for mention, cands in links.items():
            bucket = out.setdefault(mention, [])
            for eid, _ in cands[:top_k]:
                if eid not in bucket:
                    bucket.append(eid)
    return out


# --------------------------------------------------------------------------- results file


def _entity_id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
        raise UserInputError(f"{where}: an entity id must be a non-empty string without spaces, got {value!r}")
    value = value.strip()
    return value[len(FREEBASE_NS) :] if value.startswith(FREEBASE_NS) else value


def _score(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserInputError(f"{where}: a score must be a number, got {value!r}")
    return float(value)


def _candidate(raw: Any, where: str) -> tuple[str, float, str | None]:
    if isinstance(raw, str):
        return _entity_id(raw, where), 1.0, None
    if isinstance(raw, list | tuple) and len(raw) == 2:
        return _entity_id(raw[0], where), _score(raw[1], where), None
    if isinstance(raw, Mapping) and "id" in raw:
        label = raw.get("label")
        return _entity_id(raw["id"], where), _score(raw.get("score", 1.0), where), str(label) if label else None
    raise UserInputError(f"{where}: a candidate is [id, score], {{'id', 'score'}} or an id, got {raw!r}")


def _mention(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserInputError(f"{where}: a mention must be a non-empty string, got {value!r}")
    return value.strip()


def _mentions(raw: Any, where: str) -> dict[str, list[tuple[str, float, str | None]]]:
    """``{mention: [candidates]}`` or ``[{mention, id, score}, ...]`` → mention → candidates."""
    out: dict[str, list[tuple[str, float, str | None]]] = {}
    if isinstance(raw, Mapping):
        for mention, cands in raw.items():
            if not isinstance(cands, list):
                raise UserInputError(f"{where}: the candidates of {mention!r} must be a list")
            out.setdefault(_mention(mention, where), []).extend(_candidate(c, where) for c in cands)
    elif isinstance(raw, list):
        for item in raw:
            if not isinstance(item, Mapping) or "mention" not in item:
                raise UserInputError(f"{where}: an 'entities' item is {{'mention', 'id', 'score'}}, got {item!r}")
            out.setdefault(_mention(item["mention"], where), []).append(_candidate(item, where))
    else:
        raise UserInputError(f"{where}: 'mentions' must map a mention to candidates, 'entities' be a list")
    return {m: sorted(c, key=lambda t: -t[1]) for m, c in out.items()}


def _record(raw: Any, where: str) -> tuple[str, dict[str, list[tuple[str, float, str | None]]]]:
    if not isinstance(raw, Mapping):
        raise UserInputError(f"{where}: expected a JSON object per question, got {type(raw).__name__}")
    qid = next((raw[k] for k in QID_KEYS if k in raw), None)
    if not isinstance(qid, str | int) or isinstance(qid, bool) or str(qid) == "":
        raise UserInputError(f"{where}: no question id (one of {', '.join(QID_KEYS)})")
    body = raw.get("mentions", raw.get("entities"))
    if body is None:
        raise UserInputError(f"{where}: question {qid}: no 'mentions' or 'entities'")
    return str(qid), _mentions(body, f"{where} (question {qid})")


def _merge(out: LinkingResults, qid: str, found: dict[str, list[tuple[str, float, str | None]]]) -> None:
    bucket = out.setdefault(qid, {})
    for mention, cands in found.items():
        bucket[mention] = sorted([*bucket.get(mention, []), *cands], key=lambda t: -t[1])


def read_linking_results(path: str | Path) -> LinkingResults:
    """Read a linking-results file (JSON lines, or JSON; see the module docstring).

    Returns:
        Question id → mention → ``[(id, score, label or None), ...]``, best first.

    Raises:
        UserInputError: A missing file or a malformed record, naming the file and line (or record).
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such linking results file: {path}")
    text = path.read_text(encoding="utf-8")
    out: LinkingResults = {}
    stripped = text.lstrip()
    if path.suffix == ".json" or stripped.startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
        if isinstance(doc, list):
            for i, raw in enumerate(doc):
                _merge(out, *_record(raw, f"{path}: record {i}"))
        elif isinstance(doc, Mapping) and not any(k in doc for k in ("mentions", "entities")):
            for qid, mentions in doc.items():
                _merge(out, str(qid), _mentions(mentions, f"{path}: question {qid}"))
        else:
            _merge(out, *_record(doc, f"{path}: record 0"))
        return out
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from None
        _merge(out, *_record(raw, f"{path}: line {lineno}"))
    return out


__all__ = [
    "FREEBASE_NS",
    "IndexLinker",
    "LinkingResults",
    "Links",
    "MentionLinker",
    "NameLinker",
    "ResultsFileLinker",
    "merge_links",
    "read_linking_results",
]
