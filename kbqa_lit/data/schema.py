"""One example schema for every dataset.

A :class:`KBQAExample` is what every reader yields and what every JSON-lines file of the project
holds (one ``to_dict()`` per line). Dataset-specific facts go to ``meta``; the keys used across
the project are:

- ``meta["semantics"]``: answer semantics for S-expression execution: ``"exclude-topic"``
  (WebQSP, synthetic), ``"exclude-source"`` (CWQ), ``"distinct-nodes"`` (GrailQA),
  ``"simple-path"`` (MetaQA) or ``"plain"`` (PathQuestion); see :mod:`kbqa_lit.kb.lf.semantics`.
- ``meta["parses"]``: for WebQSP, every annotated parse as
  ``{"parse_id", "s_expression", "sparql", "answers": [Answer dicts]}``; metrics take the best.
- ``meta["entity_labels"]``: ``{id: label}`` of the non-topic entities the gold logical form uses.
- ``meta["entity_candidates"]``: ``{id: label}`` of linked entity candidates (predicted).
- ``meta["dataset"]``, ``meta["split"]``, ``meta["hops"]``, ``meta["qtype"]`` where known.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.errors import DataFormatError, check_choice

AnswerKind = Literal["entity", "literal"]
SEMANTICS = ("exclude-topic", "exclude-source", "distinct-nodes", "simple-path", "plain")


@dataclass(frozen=True)
class Answer:
    """One gold answer.

    Attributes:
        id: KB id without namespace (``m.0abc``) for entities; the lexical value for literals.
        name: Human-readable name (entity label, or the literal itself).
        kind: ``"entity"`` or ``"literal"``.
    """

    id: str
    name: str = ""
    kind: AnswerKind = "entity"

    @classmethod
    def from_obj(cls, obj: Any) -> Answer:
        """Build an answer from a dict (``id``/``name``/``kind``) or a bare id string."""
        if isinstance(obj, str):
            return cls(id=obj, name=obj, kind="entity")
        if isinstance(obj, Mapping) and "id" in obj:
            kind = obj.get("kind", "entity")
            check_choice("answer kind", kind, ("entity", "literal"))
            return cls(id=str(obj["id"]), name=str(obj.get("name") or ""), kind=kind)
        raise ValueError(f"an answer must be a string or an object with 'id', got {obj!r}")


@dataclass
class KBQAExample:
    """One question of any dataset in the common schema.

    Attributes:
        qid: Question id, unique within its file.
        question: The natural-language question.
        answers: Gold answers (for WebQSP, those of the first parse; all parses are in ``meta``).
        topic_entities: Topic entity ids mapped to their names.
        s_expression: Gold S-expression, when the dataset has one.
        sparql: Gold SPARQL, when the dataset has one.
        decomposition: Gold or predicted progressive decomposition (CoQ form), when available.
        meta: Dataset-specific facts (see the module docstring for the shared keys).
    """

    qid: str
    question: str
    answers: list[Answer] = field(default_factory=list)
    topic_entities: dict[str, str] = field(default_factory=dict)
    s_expression: str | None = None
    sparql: str | None = None
    decomposition: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def semantics(self) -> str:
        """Answer semantics of this example (``meta["semantics"]``, default ``"exclude-topic"``)."""
        return str(self.meta.get("semantics", "exclude-topic"))

    def entity_labels(self) -> dict[str, str]:
        """Entity id → label for normalising this example's S-expressions.

        The topic entities, then ``meta["entity_labels"]`` (other entities the gold logical form
        mentions, e.g. WebQSP's ``mid2name``), then ``meta["entity_candidates"]`` (linked
        candidates as ``{id: label}``) where present; earlier sources win.
        """
        labels: dict[str, str] = {}
        for key in ("entity_candidates", "entity_labels"):
            extra = self.meta.get(key)
            if isinstance(extra, Mapping):
                labels.update({str(k): str(v) for k, v in extra.items()})
        labels.update(self.topic_entities)
        return labels

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the line format of the project's JSON-lines files)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> KBQAExample:
        """Build an example from a dict as written by :meth:`to_dict`.

        Raises:
            ValueError: When a required field is missing or has the wrong type.
        """
        if not isinstance(obj, Mapping):
            raise ValueError(f"an example must be a JSON object, got {type(obj).__name__}")
        for key in ("qid", "question"):
            if key not in obj:
                raise ValueError(f"missing field {key!r}")
        answers = obj.get("answers") or []
        if not isinstance(answers, list):
            raise ValueError("'answers' must be a list")
        topics = obj.get("topic_entities") or {}
        if not isinstance(topics, Mapping):
            raise ValueError("'topic_entities' must be an object {id: name}")
        meta = obj.get("meta") or {}
        if not isinstance(meta, Mapping):
            raise ValueError("'meta' must be an object")
        return cls(
            qid=str(obj["qid"]),
            question=str(obj["question"]),
            answers=[Answer.from_obj(a) for a in answers],
            topic_entities={str(k): str(v) for k, v in topics.items()},
            s_expression=obj.get("s_expression"),
            sparql=obj.get("sparql"),
            decomposition=obj.get("decomposition"),
            meta=dict(meta),
        )


def read_jsonl(path: str | Path) -> Iterator[KBQAExample]:
    """Stream examples from a JSON-lines file in the common schema.

    Raises:
        DataFormatError: Naming the file and line of the first bad record.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield KBQAExample.from_dict(json.loads(line))
            except (json.JSONDecodeError, ValueError, TypeError) as exc:
                raise DataFormatError(path, lineno, str(exc)) from None


def write_jsonl(examples: Iterable[KBQAExample], path: str | Path) -> int:
    """Write examples atomically (temp file + rename) as JSON lines; return how many were written.

    Raises:
        FileWriteError: When the file cannot be written (disk full...); nothing is left under its name.
    """
    return write_jsonl_atomic((ex.to_dict() for ex in examples), path)
