"""Reader of ComplexWebQuestions (Talmor and Berant 2018).

Records (a JSON list or JSON lines): ``ID``, ``question``, ``machine_question``,
``compositionality_type``, ``sparql``, ``topic_entity`` (``{mid: name}``), ``SExpr`` (``"null"``
→ ``None``) and the answers in one of three spellings:

- ``answers``: ``[{answer_id, answer, aliases}]`` (the original release); aliases go to
  ``meta["answer_aliases"]`` (``{answer_id: [alias, ...]}``);
- ``answer_mids``: ``[mid, ...]``, optionally with ``answer_name_tog`` (one name; it names the
  answer only when there is exactly one, and is kept in ``meta["answer_name"]``);
- ``answer``: a list of ids (strings) or of ``{answer_id, answer}`` objects, or one id.

An answer id that is a Freebase entity id (``m.*``/``g.*``) gives ``kind="entity"``; any other
value (a year, a number, a bare string) gives ``kind="literal"`` with id = name = the value.
Every example has ``meta["dataset"] = "cwq"`` and ``meta["semantics"] =
"exclude-source"`` (the answer differs from the node it is reached from).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.iri import is_entity_id

DATASET = "cwq"
SEMANTICS = "exclude-source"


def read_cwq(path: str | Path) -> Iterator[KBQAExample]:
    """Stream the questions of a ComplexWebQuestions file.

    Args:
        path: A CWQ JSON list or JSON-lines file.

    Returns:
        An iterator of examples, one per question, in file order.

    Raises:
        UserInputError: When ``path`` is not a file (raised at once).
        DataFormatError: While iterating, naming the file and record of the first bad record.

    """
    return read_json_examples(path, "CWQ file", _example)


def _make_answer(value: str, name: str | None) -> Answer:
    if is_entity_id(value):
        return Answer(id=value, name=name or "", kind="entity")
    return Answer(id=value, name=name or value, kind="literal")


def _answers(record: Mapping[str, Any], path: Path, where: Where) -> tuple[list[Answer], dict[str, Any]]:
    extra: dict[str, Any] = {}
    if record.get("answers") is not None:
        answers = []
        aliases: dict[str, list[str]] = {}
        for i, obj in enumerate(get_field(record, "answers", list, path, where)):
            at = f"{where}, answer {i}"
            ans = require_object(obj, path, at)
            aid = str(get_field(ans, "answer_id", (str, int, float), path, at))
            answers.append(_make_answer(aid, get_field(ans, "answer", str, path, at, required=False)))
            alias_list = get_field(ans, "aliases", list, path, at, required=False, default=[])
            if alias_list:
                aliases[aid] = [str(a) for a in alias_list]
        if aliases:
            extra["answer_aliases"] = aliases
        return answers, extra
    if record.get("answer_mids") is not None:
        mids = get_field(record, "answer_mids", list, path, where)
        if not all(isinstance(m, str) for m in mids):
            raise DataFormatError(path, where, "'answer_mids' must be a list of strings")
        name = get_field(record, "answer_name_tog", str, path, where, required=False)
        if name:
            extra["answer_name"] = name
        single = name if len(set(mids)) == 1 else None
        return [_make_answer(m, single) for m in mids], extra
    if record.get("answer") is not None:
        value = get_field(record, "answer", (list, str), path, where)
        answers = []
        for i, obj in enumerate([value] if isinstance(value, str) else value):
            if isinstance(obj, str):
                answers.append(_make_answer(obj, None))
            else:
                at = f"{where}, answer {i}"
                ans = require_object(obj, path, at)
                aid = str(get_field(ans, "answer_id", (str, int, float), path, at))
                answers.append(_make_answer(aid, get_field(ans, "answer", str, path, at, required=False)))
        return answers, extra
    raise DataFormatError(path, where, "missing required field 'answers' (or 'answer_mids' / 'answer')")


def _example(record: Mapping[str, Any], path: Path, where: Where) -> KBQAExample:
    qid = str(get_field(record, "ID", (str, int), path, where))
    question = get_field(record, "question", str, path, where)
    answers, extra = _answers(record, path, where)
    topics = get_field(record, "topic_entity", dict, path, where, required=False, default={})
    meta: dict[str, Any] = {"dataset": DATASET, "semantics": SEMANTICS}
    for src, dst in (
        ("machine_question", "machine_question"),
        ("compositionality_type", "compositionality_type"),
        ("webqsp_ID", "webqsp_id"),
        ("webqsp_question", "webqsp_question"),
    ):
        value = get_field(record, src, str, path, where, required=False)
        if value is not None:
            meta[dst] = value
    meta.update(extra)
    return KBQAExample(
        qid=qid,
        question=question,
        answers=dedupe_answers(answers),
        topic_entities={str(k): str(v) for k, v in topics.items()},
        s_expression=null_to_none(get_field(record, "SExpr", str, path, where, required=False)),
        sparql=get_field(record, "sparql", str, path, where, required=False),
        meta=meta,
    )
