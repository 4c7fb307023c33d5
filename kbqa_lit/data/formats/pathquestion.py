r"""Reader of PathQuestion (Zhou et al. 2018, IRN): PQ (2/3 hops) and PQL (longer paths).

Line: ``question\tanswer(a1/a2/)\tsubject#r1#e1#r2#e2...#<end>#answer``. The path before
``<end>`` alternates entities and relations and may have any number of hops. The gold
S-expression follows the relations from the subject:
``(JOIN (R pathquestion.relation.r2) (JOIN (R pathquestion.relation.r1) m.<subject>))``, with ids
from :func:`kbqa_lit.kb.lf.iri.entity_id_for_name` and :func:`kbqa_lit.kb.lf.iri.relation_id_for`
(exactly as ``kbqa kb build --format pathquestion`` mints them).

The answers are the alternatives inside the parentheses (``female(male/female/)`` → ``male``,
``female``), or the token before ``(`` when there are none; names are the KB's
``type.object.name`` (:func:`kbqa_lit.kb.lf.iri.display_name`: underscores become spaces). Gold
answers follow plain paths (the subject itself can be an answer): ``meta["semantics"] =
"plain"``. ``meta`` also has ``dataset``, ``hops`` and ``path`` (the raw path tokens before
``<end>``, intermediate entities included).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from kbqa_lit.data.formats._common import dedupe_answers, existing_file
from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.iri import display_name, entity_id_for_name, relation_id_for

DATASET = "pathquestion"
SEMANTICS = "plain"
_ANSWER_RE = re.compile(r"^([^()]*)(?:\((.*)\))?$")


def path_to_sexpr(subject: str, relations: list[str]) -> str:
    """Return the S-expression following ``relations`` (raw PathQuestion names) from ``subject``.

    Example:
        ``path_to_sexpr("claudius", ["parents", "gender"])`` →
        ``(JOIN (R pathquestion.relation.gender) (JOIN (R pathquestion.relation.parents) m.pq_...))``.

    """
    expr = entity_id_for_name(subject, DATASET)
    for rel in relations:
        expr = f"(JOIN (R {relation_id_for(rel, DATASET)}) {expr})"
    return expr


def parse_answer_field(text: str) -> list[str]:
    """Return the raw answer tokens of an answer field (``a(a/b/)`` → ``["a", "b"]``).

    Raises:
        ValueError: When the field is empty or its parentheses are malformed.

    """
    m = _ANSWER_RE.match(text.strip())
    if not m:
        raise ValueError(f"malformed answer field {text!r}")
    alternatives = [a.strip() for a in (m.group(2) or "").split("/") if a.strip()]
    if alternatives:
        return alternatives
    head = m.group(1).strip()
    if not head:
        raise ValueError(f"empty answer field {text!r}")
    return [head]


def parse_path_field(text: str) -> list[str]:
    """Return the path tokens before ``<end>`` (``subject, r1, e1, ..., rn, en``).

    Raises:
        ValueError: When the path is not ``entity (#relation#entity)+``.

    """
    tokens = [t.strip() for t in text.strip().split("#")]
    if "<end>" in tokens:
        tokens = tokens[: tokens.index("<end>")]
    if len(tokens) < 3 or len(tokens) % 2 == 0 or any(not t for t in tokens):
        raise ValueError(f"malformed path {text!r}: expected subject#relation#entity[#relation#entity...]")
    return tokens


def read_pathquestion(path: str | Path) -> Iterator[KBQAExample]:
    """Stream the questions of a PathQuestion file (PQ or PQL).

    Args:
        path: A PathQuestion question file such as ``PQ-2H.txt``.

    Returns:
        An iterator of examples with qids ``pq-{file stem}-{index}`` (0-based line index).

    Raises:
        UserInputError: When ``path`` is not a file (raised at once).
        DataFormatError: While iterating, naming the file and line of the first bad line.

    """
    p = existing_file(path, "PathQuestion file")
    return _iter_pathquestion(p)


def _iter_pathquestion(path: Path) -> Iterator[KBQAExample]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield _example(line, path, lineno)


def _example(line: str, path: Path, lineno: int) -> KBQAExample:
    fields = line.rstrip("\r\n").split("\t")
    if len(fields) != 3:
        raise DataFormatError(path, lineno, f"expected 'question<TAB>answer(...)<TAB>path', got {len(fields)} field(s)")
    try:
        raw_answers = parse_answer_field(fields[1])
        tokens = parse_path_field(fields[2])
    except ValueError as exc:
        raise DataFormatError(path, lineno, str(exc)) from None
    subject, relations = tokens[0], tokens[1::2]
    answers = [
        Answer(id=entity_id_for_name(a, DATASET), name=display_name(a, DATASET), kind="entity") for a in raw_answers
    ]
    return KBQAExample(
        qid=f"pq-{path.stem}-{lineno - 1}",
        question=fields[0].strip(),
        answers=dedupe_answers(answers),
        topic_entities={entity_id_for_name(subject, DATASET): display_name(subject, DATASET)},
        s_expression=path_to_sexpr(subject, relations),
        meta={
            "dataset": DATASET,
            "semantics": SEMANTICS,
            "hops": len(relations),
            "path": tokens,
        },
    )
