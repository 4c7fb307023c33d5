"""Reader of WebQuestionsSP (Yih et al. 2016): the official release and two common variants.

Three record layouts are recognised, per record, in a JSON list, a JSON-lines file or the
official ``{"Version": ..., "Questions": [...]}`` document:

- **official** (``Parses`` present): ``QuestionId``, ``RawQuestion``, ``ProcessedQuestion`` and
  ``Parses`` = ``[{ParseId, AnnotatorComment, Sparql, TopicEntityMid, TopicEntityName,
  InferentialChain, Constraints, Answers, optional SExpr}]``. Every parse is kept in
  ``meta["parses"]`` as ``{"parse_id", "s_expression", "sparql", "answers", "topic_entity",
  "inferential_chain"}`` (``topic_entity`` is ``{mid: name}``, empty when the parse has none;
  ``answers`` are :class:`Answer` dicts); the example's own answers, S-expression, SPARQL and topic
  entities come from the first parse. ``AnswerType`` ``Entity`` gives ``kind="entity"`` (id = mid,
  name = ``EntityName`` or ``""``); ``Value`` gives ``kind="literal"`` (id = name =
  ``AnswerArgument``).
- **S-expression variant** (``SExpr`` present, no ``Parses``): ``QuestionId``, ``question``,
  ``SExpr`` (``"null"`` → ``None``), ``SExpr_w_name``, ``TopicEntityMid``, ``mid2name``. It has no
  answers; ``meta["entity_labels"]`` (the ``mid2name`` map) and ``meta["s_expression_with_names"]`` keep the rest.
- **answer-name variant** (``answer`` present): ``QuestionId``, ``RawQuestion``, ``answer``
  (a list of names), ``topic_entity`` (``{mid: name}``). The answers are known by name only, so
  each becomes ``Answer(id=name, name=name, kind="entity")`` and ``meta["answers_by_name"]`` is
  ``True``: compare such answers by name, never against KB ids. A ``null`` or empty name (an
  answer the release could not name) is dropped and counted in ``meta["unnamed_answers"]``.

Every example has ``meta["dataset"] = "webqsp"`` and ``meta["semantics"] = "exclude-topic"``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from kbqa_lit.data.formats._common import (
    Where,
    dedupe_answers,
    get_field,
    null_to_none,
    read_json_examples,
    require_object,
)
from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import DataFormatError, check_choice

DATASET = "webqsp"
SEMANTICS = "exclude-topic"


def read_webqsp(path: str | Path) -> Iterator[KBQAExample]:
    """Stream the questions of a WebQSP file (official release or one of the two variants).

    Args:
        path: A WebQSP JSON file (``{"Questions": [...]}``, a JSON list or JSON lines).

    Returns:
        An iterator of examples, one per question, in file order.

    Raises:
        UserInputError: When ``path`` is not a file (raised at once).
        DataFormatError: While iterating, naming the file and record of the first bad record.

    """
    return read_json_examples(path, "WebQSP file", _example, container_key="Questions")


def _example(record: Mapping[str, Any], path: Path, where: Where) -> KBQAExample:
    if "Parses" in record:
        return _official(record, path, where)
    if "SExpr" in record:
        return _sexpr_variant(record, path, where)
    if "answer" in record:
        return _answer_name_variant(record, path, where)
    raise DataFormatError(path, where, "not a WebQSP question: expected 'Parses', 'SExpr' or 'answer'")


def _meta(**extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"dataset": DATASET, "semantics": SEMANTICS}
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta


def _answer(obj: Any, path: Path, where: Where) -> Answer:
    ans = require_object(obj, path, where)
    kind = get_field(ans, "AnswerType", str, path, where)
    check_choice("AnswerType", kind, ("Entity", "Value"), error=partial(DataFormatError, path, where))
    arg = get_field(ans, "AnswerArgument", (str, int, float), path, where)
    if kind == "Entity":
        return Answer(id=str(arg), name=str(ans.get("EntityName") or ""), kind="entity")
    return Answer(id=str(arg), name=str(arg), kind="literal")


def _parse(obj: Any, index: int, qid: str, path: Path, where: Where) -> dict[str, Any]:
    parse = require_object(obj, path, where)
    answers = [_answer(a, path, where) for a in get_field(parse, "Answers", list, path, where, default=[])]
    mid = get_field(parse, "TopicEntityMid", str, path, where, required=False)
    name = get_field(parse, "TopicEntityName", str, path, where, required=False, default="")
    return {
        "parse_id": str(parse.get("ParseId") or f"{qid}.P{index}"),
        "s_expression": null_to_none(get_field(parse, "SExpr", str, path, where, required=False)),
        "sparql": get_field(parse, "Sparql", str, path, where, required=False),
        "answers": [asdict(a) for a in dedupe_answers(answers)],
        "topic_entity": {mid: name} if mid else {},
        "inferential_chain": parse.get("InferentialChain"),
    }


def _official(record: Mapping[str, Any], path: Path, where: Where) -> KBQAExample:
    qid = str(get_field(record, "QuestionId", (str, int), path, where))
    question = get_field(record, "RawQuestion", str, path, where, required=False)
    if question is None:
        question = get_field(record, "ProcessedQuestion", str, path, where, required=False)
    if question is None:
        raise DataFormatError(path, where, "missing required field 'RawQuestion'")
    parses = [
        _parse(p, i, qid, path, f"{where}, parse {i}")
        for i, p in enumerate(get_field(record, "Parses", list, path, where))
    ]
    first = parses[0] if parses else None
    return KBQAExample(
        qid=qid,
        question=question,
        answers=[Answer(**a) for a in first["answers"]] if first else [],
        topic_entities=dict(first["topic_entity"]) if first else {},
        s_expression=first["s_expression"] if first else None,
        sparql=first["sparql"] if first else None,
        meta=_meta(parses=parses, processed_question=record.get("ProcessedQuestion")),
    )


def _sexpr_variant(record: Mapping[str, Any], path: Path, where: Where) -> KBQAExample:
    qid = str(get_field(record, "QuestionId", (str, int), path, where))
    question = get_field(record, "question", str, path, where)
    sexpr = null_to_none(get_field(record, "SExpr", str, path, where, required=False))
    with_names = null_to_none(get_field(record, "SExpr_w_name", str, path, where, required=False))
    mid2name = get_field(record, "mid2name", dict, path, where, required=False, default={})
    mid = get_field(record, "TopicEntityMid", str, path, where, required=False)
    topics = {mid: str(mid2name.get(mid) or "")} if mid else {}
    return KBQAExample(
        qid=qid,
        question=question,
        topic_entities=topics,
        s_expression=sexpr,
        meta=_meta(
            entity_labels={str(k): str(v) for k, v in mid2name.items()},
            s_expression_with_names=with_names,
        ),
    )


def _answer_name_variant(record: Mapping[str, Any], path: Path, where: Where) -> KBQAExample:
    qid = str(get_field(record, "QuestionId", (str, int), path, where))
    question = get_field(record, "RawQuestion", str, path, where, required=False)
    if question is None:
        question = get_field(record, "question", str, path, where)
    names = get_field(record, "answer", list, path, where)
    if not all(n is None or isinstance(n, str) for n in names):
        raise DataFormatError(path, where, "'answer' must be a list of answer names (strings or null)")
    unnamed = sum(1 for n in names if not (n and n.strip()))
    topics = get_field(record, "topic_entity", dict, path, where, required=False, default={})
    return KBQAExample(
        qid=qid,
        question=question,
        answers=dedupe_answers([Answer(id=n, name=n, kind="entity") for n in names if n and n.strip()]),
        topic_entities={str(k): str(v) for k, v in topics.items()},
        meta=_meta(answers_by_name=True, unnamed_answers=unnamed or None),
    )
