"""Reader of GrailQA (Gu et al. 2021).

Records (JSON lines or a JSON list): ``qid``, ``question``, ``s_expression``, ``answer``
(``[{answer_type, answer_argument, entity_name}]``), ``function``, ``num_node``, ``num_edge``,
``graph_query`` (``{"nodes": [...], "edges": [...]}``) and, in some files, ``level``,
``domains``, ``sparql_query``. The test split has no ``s_expression`` and no ``answer``; both are
optional here.

- ``answer_type`` ``Entity`` → ``kind="entity"`` (id = mid, name = ``entity_name``); ``Value`` →
  ``kind="literal"`` with id = name = the lexical value, any ``^^datatype`` suffix dropped.
- Topic entities are the ``graph_query`` nodes whose ``node_type`` is ``entity``
  (``{id: friendly_name}``).
- ``meta`` keeps ``function``, ``level``, ``domains``, ``num_node``, ``num_edge`` (when present),
  plus ``dataset = "grailqa"`` and ``semantics = "distinct-nodes"`` (all query nodes pairwise
  distinct); ``sparql_query`` becomes the example's ``sparql``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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

DATASET = "grailqa"
SEMANTICS = "distinct-nodes"
_META_FIELDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("function", str),
    ("level", str),
    ("domains", list),
    ("num_node", int),
    ("num_edge", int),
)


def read_grailqa(path: str | Path) -> Iterator[KBQAExample]:
    """Stream the questions of a GrailQA file.

    Args:
        path: A GrailQA JSON-lines file or JSON list.

    Returns:
        An iterator of examples, one per question, in file order.

    Raises:
        UserInputError: When ``path`` is not a file (raised at once).
        DataFormatError: While iterating, naming the file and line (or record) of the first bad
            record.

    """
    return read_json_examples(path, "GrailQA file", _example)


def literal_value(argument: str) -> str:
    """Return the lexical value of a GrailQA literal (``"9^^http://...#integer"`` → ``"9"``)."""
    return argument.split("^^", 1)[0].strip('"') if "^^" in argument else argument


def _answer(obj: Any, path: Path, where: Where) -> Answer:
    ans = require_object(obj, path, where)
    kind = get_field(ans, "answer_type", str, path, where)
    check_choice("answer_type", kind, ("Entity", "Value"), error=partial(DataFormatError, path, where))
    arg = str(get_field(ans, "answer_argument", (str, int, float), path, where))
    if kind == "Entity":
        return Answer(id=arg, name=str(ans.get("entity_name") or ""), kind="entity")
    value = literal_value(arg)
    return Answer(id=value, name=value, kind="literal")


def _topic_entities(graph: Mapping[str, Any], path: Path, where: Where) -> dict[str, str]:
    topics: dict[str, str] = {}
    for i, obj in enumerate(get_field(graph, "nodes", list, path, where, required=False, default=[])):
        node = require_object(obj, path, f"{where}, graph_query node {i}")
        if node.get("node_type") == "entity":
            nid = get_field(node, "id", str, path, f"{where}, graph_query node {i}")
            topics[nid] = str(node.get("friendly_name") or "")
    return topics


def _example(record: Mapping[str, Any], path: Path, where: Where) -> KBQAExample:
    qid = str(get_field(record, "qid", (str, int), path, where))
    question = get_field(record, "question", str, path, where)
    answers = [
        _answer(a, path, f"{where}, answer {i}")
        for i, a in enumerate(get_field(record, "answer", list, path, where, required=False, default=[]))
    ]
    graph = get_field(record, "graph_query", dict, path, where, required=False, default={})
    meta: dict[str, Any] = {"dataset": DATASET, "semantics": SEMANTICS}
    for key, types in _META_FIELDS:
        value = get_field(record, key, types, path, where, required=False)
        if value is not None:
            meta[key] = value
    return KBQAExample(
        qid=qid,
        question=question,
        answers=dedupe_answers(answers),
        topic_entities=_topic_entities(graph, path, where),
        s_expression=null_to_none(get_field(record, "s_expression", str, path, where, required=False)),
        sparql=get_field(record, "sparql_query", str, path, where, required=False),
        meta=meta,
    )
