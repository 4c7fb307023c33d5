"""FC-KBQA entity linking: mentions and candidates, literals, then relation-aware pruning.

:class:`FCEntityLinker` runs the three steps of the paper:

1. **mentions** from a pluggable :class:`MentionLinker`: :class:`IndexMentionLinker` (longest match
   over every surface name — names and aliases — with the KB's
   :class:`~kbqa_lit.kb.index.entity_index.EntityIndex`) or :class:`JsonMentionLinker` (precomputed
   results from a file);
2. **literals** (dates, years, numbers) by regular expressions
   (:func:`~kbqa_lit.data.fc.literals.detect_literals`);
3. **relation-aware pruning** (:class:`~kbqa_lit.pipelines.fc.pruning.RelationAwarePruner`): a
   candidate with no KB edge to any of the top-k relations is dropped, and the most popular
   (degree) of the rest is picked per mention.

The JSON file of :class:`JsonMentionLinker` holds one JSON object per line::

    {"qid": "q1", "question": "...", "mentions": {"paris": [["m.0a", 0.9], {"id": "m.0b", "score": 0.4}]}}

— candidates best first, as ``[id, score]`` pairs or objects with ``id``, ``score`` and optional
``label`` and ``degree``. Questions are found by ``qid``, else by their text (spaces squeezed); a
question the file does not hold has no mentions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbqa_lit.data.fc.literals import LiteralMention, detect_literals
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.pipelines.fc.pruning import EntityMention, LinkedEntity, RelationAwarePruner, ScoredEntity

log = logging.getLogger(__name__)


class MentionLinker(Protocol):
    """Anything that finds a question's entity mentions and their scored candidates."""

    def mentions(self, question: str, qid: str | None = None) -> list[EntityMention]:
        """The mentions of ``question`` (in order of appearance), candidates best first."""
        ...


class IndexMentionLinker:
    """Mentions by longest match over every surface name of the KB (an ``EntityIndex``).

    Args:
        index: The entity index (``EntityIndex.for_store(store)``).
        max_candidates: Candidates kept over the whole question.
        fuzzy_threshold: Least similarity of a fuzzy match (1.0: exact and normalised matches only).
    """

    def __init__(self, index: Any, max_candidates: int = 50, fuzzy_threshold: float = 0.8) -> None:
        self.index = index
        self.max_candidates = max_candidates
        self.fuzzy_threshold = fuzzy_threshold

    def mentions(self, question: str, qid: str | None = None) -> list[EntityMention]:
        """Group the index's candidates by mention (candidates by match score, then degree)."""
        found = self.index.search(question, top_l=self.max_candidates, fuzzy_threshold=self.fuzzy_threshold)
        by_mention: dict[str, list[ScoredEntity]] = {}
        for c in found:
            by_mention.setdefault(c.mention, []).append(ScoredEntity(c.id, c.score, c.label, c.degree))
        lowered = question.lower()

        def position(mention: str) -> int:
            at = lowered.find(mention.lower())
            return at if at >= 0 else len(lowered)

        order = sorted(by_mention, key=lambda m: (position(m), -len(m)))
        return [EntityMention(m, tuple(by_mention[m])) for m in order]


def _candidate(path: Path, lineno: int, item: Any) -> ScoredEntity:
    if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
        eid, score, label, degree = item[0], item[1], "", None
    elif isinstance(item, Mapping) and isinstance(item.get("id"), str):
        eid, score, label, degree = item["id"], item.get("score", 0.0), item.get("label", ""), item.get("degree")
    else:
        raise DataFormatError(path, lineno, f"a candidate must be [id, score] or {{'id', 'score'}}, got {item!r}")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise DataFormatError(path, lineno, f"the score of {eid} is not a number: {score!r}")
    if degree is not None and (isinstance(degree, bool) or not isinstance(degree, int)):
        raise DataFormatError(path, lineno, f"the degree of {eid} is not an integer: {degree!r}")
    return ScoredEntity(eid, float(score), str(label or ""), degree)


class JsonMentionLinker:
    """Precomputed linking results from a JSON-lines file (see the module docstring for the format).

    Args:
        path: The file.

    Raises:
        UserInputError: When the file does not exist.
        DataFormatError: On a bad line, naming the file and the line.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise UserInputError(f"no linking results file: {self.path}")
        self.by_qid: dict[str, list[EntityMention]] = {}
        self.by_question: dict[str, list[EntityMention]] = {}
        with self.path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    self._read(lineno, line)

    def _read(self, lineno: int, line: str) -> None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(self.path, lineno, f"not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("mentions"), dict):
            raise DataFormatError(self.path, lineno, 'expected {"qid" or "question", "mentions": {mention: [...]}}')
        qid, question = record.get("qid"), record.get("question")
        if not isinstance(qid, str) and not isinstance(question, str):
            raise DataFormatError(self.path, lineno, "a record needs a qid or a question")
        mentions = []
        for mention, cands in record["mentions"].items():
            if not isinstance(cands, list):
                raise DataFormatError(self.path, lineno, f"the candidates of {mention!r} are not a list")
            mentions.append(EntityMention(mention, tuple(_candidate(self.path, lineno, c) for c in cands)))
        if isinstance(qid, str):
            self.by_qid[qid] = mentions
        if isinstance(question, str):
            self.by_question[" ".join(question.split())] = mentions

    def mentions(self, question: str, qid: str | None = None) -> list[EntityMention]:
        """The file's mentions of the question (by ``qid``, else by text); ``[]`` when absent."""
        if qid is not None and qid in self.by_qid:
            return list(self.by_qid[qid])
        return list(self.by_question.get(" ".join(question.split()), []))


@dataclass(frozen=True)
class LinkingResult:
    """What linking gives one question.

    Attributes:
        entities: One picked entity per mention (in order), with its edges to the top-k relations.
        literals: The question's dates, years and numbers.
        mentions: The linker's mentions and candidates before pruning.
    """

    entities: list[LinkedEntity]
    literals: list[LiteralMention]
    mentions: list[EntityMention] = field(default_factory=list)


class FCEntityLinker:
    """Mentions + literals + relation-aware pruning (see the module docstring).

    Args:
        linker: The mention linker.
        store: The KB the pruning asks (``None``: no pruning — the most popular candidate per mention).
        degree: Entity popularity for candidates that carry none (e.g. ``EntityIndex.degree``).
        top_k: How many of the extractor's best relations the pruning checks edges to.
        prune: Switch the pruning off (an ablation) without dropping the store.
        on_empty: ``keep`` (the mention keeps its unpruned pick) or ``drop`` (the mention is dropped)
            when pruning removes every candidate of a mention.
    """

    def __init__(
        self,
        linker: MentionLinker,
        store: Any = None,
        degree: Callable[[str], int] | None = None,
        top_k: int = 10,
        prune: bool = True,
        on_empty: str = "keep",
    ) -> None:
        self.linker = linker
        self.pruner = RelationAwarePruner(store if prune else None, degree=degree, top_k=top_k, on_empty=on_empty)

    def link(self, question: str, relations: Sequence[str], qid: str | None = None) -> LinkingResult:
        """Link ``question`` given the relation extractor's ranking (best first)."""
        mentions = self.linker.mentions(question, qid)
        return LinkingResult(self.pruner.pick(mentions, relations), detect_literals(question), mentions)


__all__ = [
    "FCEntityLinker",
    "IndexMentionLinker",
    "JsonMentionLinker",
    "LinkingResult",
    "MentionLinker",
]
