"""Readers on small hand-written files: the official WebQSP layout, other layouts, bad records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.data.formats import (
    read_cwq,
    read_grailqa,
    read_metaqa,
    read_pathquestion,
    read_synthetic,
    read_webqsp,
)
from kbqa_lit.data.schema import Answer
from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.iri import entity_id_for_name

OFFICIAL = {
    "Version": "1.0",
    "Questions": [
        {
            "QuestionId": "WebQTest-0",
            "RawQuestion": "what does jamaican people speak?",
            "ProcessedQuestion": "what does jamaican people speak",
            "Parses": [
                {
                    "ParseId": "WebQTest-0.P0",
                    "AnnotatorComment": {"ParseQuality": "Complete", "QuestionQuality": "Good"},
                    "Sparql": "PREFIX ns: <http://rdf.freebase.com/ns/> SELECT DISTINCT ?x WHERE { }",
                    "TopicEntityMid": "m.03_r3",
                    "TopicEntityName": "Jamaica",
                    "InferentialChain": ["location.country.languages_spoken"],
                    "Constraints": [],
                    "Answers": [
                        {
                            "AnswerType": "Entity",
                            "AnswerArgument": "m.01428y",
                            "EntityName": "Jamaican English",
                        },
                        {
                            "AnswerType": "Entity",
                            "AnswerArgument": "m.04ygk0",
                            "EntityName": "Jamaican Creole",
                        },
                    ],
                    "SExpr": "(JOIN (R location.country.languages_spoken) m.03_r3)",
                },
                {
                    "ParseId": "WebQTest-0.P1",
                    "Sparql": "SELECT ?x WHERE { }",
                    "TopicEntityMid": "m.03_r3",
                    "TopicEntityName": "Jamaica",
                    "Answers": [{"AnswerType": "Value", "AnswerArgument": "1962", "EntityName": None}],
                },
            ],
        },
        {"QuestionId": "WebQTest-1", "RawQuestion": "no parse?", "Parses": []},
    ],
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_webqsp_official_keeps_every_parse(tmp_path):
    path = write(tmp_path, "WebQSP.test.json", json.dumps(OFFICIAL, indent=2))
    first, second = list(read_webqsp(path))
    assert first.qid == "WebQTest-0"
    assert first.question == "what does jamaican people speak?"
    assert first.answers == [
        Answer(id="m.01428y", name="Jamaican English", kind="entity"),
        Answer(id="m.04ygk0", name="Jamaican Creole", kind="entity"),
    ]
    assert first.topic_entities == {"m.03_r3": "Jamaica"}
    assert first.s_expression == "(JOIN (R location.country.languages_spoken) m.03_r3)"
    assert first.sparql.startswith("PREFIX ns:")
    assert first.meta["dataset"] == "webqsp" and first.meta["semantics"] == "exclude-topic"
    parses = first.meta["parses"]
    assert [p["parse_id"] for p in parses] == ["WebQTest-0.P0", "WebQTest-0.P1"]
    assert parses[1]["answers"] == [{"id": "1962", "name": "1962", "kind": "literal"}]
    assert parses[1]["s_expression"] is None
    assert parses[0]["topic_entity"] == {"m.03_r3": "Jamaica"}
    assert {"parse_id", "s_expression", "sparql", "answers", "topic_entity"} <= set(parses[0])
    assert json.loads(json.dumps(first.to_dict()))["meta"]["parses"] == parses
    assert second.answers == [] and second.meta["parses"] == [] and second.s_expression is None


def test_webqsp_official_as_list_and_json_lines(tmp_path):
    records = OFFICIAL["Questions"]
    as_list = list(read_webqsp(write(tmp_path, "a.json", json.dumps(records))))
    as_lines = list(read_webqsp(write(tmp_path, "b.jsonl", "\n".join(json.dumps(r) for r in records))))
    one_line = list(read_webqsp(write(tmp_path, "c.json", json.dumps(OFFICIAL))))
    assert [e.to_dict() for e in as_list] == [e.to_dict() for e in as_lines] == [e.to_dict() for e in one_line]


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"RawQuestion": "q", "Parses": []}, "missing required field 'QuestionId'"),
        ({"QuestionId": "Q", "Parses": []}, "missing required field 'RawQuestion'"),
        ({"QuestionId": "Q", "RawQuestion": "q", "Parses": {}}, "field 'Parses' must be a list"),
        (
            {"QuestionId": "Q", "RawQuestion": "q", "Parses": [{"Answers": [{"AnswerType": "Entity"}]}]},
            "missing required field 'AnswerArgument'",
        ),
        (
            {
                "QuestionId": "Q",
                "RawQuestion": "q",
                "Parses": [{"Answers": [{"AnswerType": "Thing", "AnswerArgument": "x"}]}],
            },
            "AnswerType must be one of Entity, Value; got 'Thing'",
        ),
        ({"QuestionId": "Q", "RawQuestion": "q"}, "expected 'Parses', 'SExpr' or 'answer'"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
def test_webqsp_bad_record_names_file_and_record(tmp_path, record, reason):
    good = OFFICIAL["Questions"][0]
    path = write(tmp_path, "bad.json", json.dumps({"Questions": [good, good, record]}))
    with pytest.raises(DataFormatError, match=reason) as info:
        list(read_webqsp(path))
    assert info.value.path == str(path)
    assert str(info.value.where).startswith("record 2")
    assert str(path) in str(info.value)


def test_unparsable_json_names_the_line(tmp_path):
    path = write(tmp_path, "broken.json", '{"Questions": [\n  {"QuestionId": "Q",\n  oops}\n]}\n')
    with pytest.raises(DataFormatError) as info:
        list(read_webqsp(path))
    assert info.value.where == 3 and "not valid JSON" in info.value.reason


def test_cwq_original_answers_and_errors(tmp_path):
    record = {
        "ID": "WebQTrn-1_abc",
        "question": "q?",
        "machine_question": "mq",
        "compositionality_type": "composition",
        "sparql": "SELECT ?x WHERE { }",
        "answers": [
            {"answer_id": "m.0abc", "answer": "Abc", "aliases": ["ABC", "A.B.C."]},
            {"answer_id": "1990", "answer": "1990", "aliases": []},
        ],
        "topic_entity": {"m.0t": "T"},
    }
    (ex,) = read_cwq(write(tmp_path, "cwq.json", json.dumps([record])))
    assert ex.answers == [Answer("m.0abc", "Abc", "entity"), Answer("1990", "1990", "literal")]
    assert ex.meta["answer_aliases"] == {"m.0abc": ["ABC", "A.B.C."]}
    assert ex.s_expression is None and ex.meta["semantics"] == "exclude-source"
    no_answers = {k: v for k, v in record.items() if k != "answers"}
    path = write(tmp_path, "cwq_bad.jsonl", json.dumps(record) + "\n" + json.dumps(no_answers) + "\n")
    with pytest.raises(DataFormatError, match=r"cwq_bad.jsonl:2: missing required field 'answers'"):
        list(read_cwq(path))
    path = write(tmp_path, "cwq_bad2.json", json.dumps([record, {**record, "question": 7}]))
    with pytest.raises(DataFormatError, match=r"record 1: field 'question' must be a string, got int"):
        list(read_cwq(path))


def test_grailqa_literal_and_bad_lines(tmp_path):
    record = {
        "qid": 7,
        "question": "how many?",
        "s_expression": "(COUNT (JOIN a.b.c m.0x))",
        "answer": [{"answer_type": "Value", "answer_argument": "1.5^^http://www.w3.org/2001/XMLSchema#float"}],
        "function": "count",
        "num_node": 2,
        "num_edge": 1,
        "graph_query": {"nodes": [{"nid": 1, "node_type": "entity", "id": "m.0x", "friendly_name": "X"}]},
    }
    (ex,) = read_grailqa(write(tmp_path, "g.json", json.dumps([record])))
    assert ex.qid == "7" and ex.answers == [Answer("1.5", "1.5", "literal")]
    assert ex.topic_entities == {"m.0x": "X"} and ex.meta["function"] == "count"
    text = json.dumps(record) + "\n\n" + "{not json\n"
    with pytest.raises(DataFormatError, match=r"g.jsonl:3: not valid JSON"):
        list(read_grailqa(write(tmp_path, "g.jsonl", text)))
    bad = {**record, "num_node": "two"}
    with pytest.raises(DataFormatError, match=r"g2.jsonl:2: field 'num_node' must be an integer"):
        list(read_grailqa(write(tmp_path, "g2.jsonl", json.dumps(record) + "\n" + json.dumps(bad) + "\n")))
    with pytest.raises(DataFormatError, match=r"g3.jsonl:1, answer 0: missing required field 'answer_type'"):
        list(read_grailqa(write(tmp_path, "g3.jsonl", json.dumps({**record, "answer": [{"x": 1}]}))))


def _metaqa_dir(tmp_path: Path, qa: str, qtype: str, kbcheck: str | None = None) -> Path:
    hop = tmp_path / "mq" / "2-hop"
    hop.mkdir(parents=True)
    (hop / "qa_dev.txt").write_text(qa, encoding="utf-8")
    (hop / "qa_dev_qtype.txt").write_text(qtype, encoding="utf-8")
    if kbcheck is not None:
        (hop / "qa_dev_kbcheck.txt").write_text(kbcheck, encoding="utf-8")
    return tmp_path / "mq"


def test_metaqa_small_dir_and_errors(tmp_path):
    root = _metaqa_dir(
        tmp_path,
        "who directed films starring [A B]\tD1|D2\nwhat genre is [M]'s director's films\tG\n",
        "actor_to_movie_to_director\nmovie_to_director_to_movie\n",
        "exact\nkb_superset\n",
    )
    examples = list(read_metaqa(root, hops=(2,)))
    assert [e.qid for e in examples] == ["metaqa-2hop-dev-0", "metaqa-2hop-dev-1"]
    assert [e.meta["kbcheck"] for e in examples] == ["exact", "extra"]
    a = entity_id_for_name("A B", "metaqa")
    assert examples[0].s_expression == (f"(JOIN (R metaqa.movie.directed_by) (JOIN metaqa.movie.starred_actors {a}))")

    bad_line = _metaqa_dir(tmp_path / "b1", "no brackets here\tX\n", "actor_to_movie_to_director\n")
    with pytest.raises(DataFormatError, match=r"qa_dev.txt:1: expected exactly one \[topic entity\]"):
        list(read_metaqa(bad_line, hops=(2,)))
    no_tab = _metaqa_dir(tmp_path / "b2", "ok [A]\tX\nmissing tab [B]\n", "a_to_movie\nb\n")
    with pytest.raises(DataFormatError, match=r"qa_dev_qtype.txt:1: .*cannot step from 'a'"):
        list(read_metaqa(no_tab, hops=(2,)))
    no_tab = _metaqa_dir(tmp_path / "b3", "ok [A]\tX\nmissing tab [B]\n", "actor_to_movie_to_actor\n" * 2)
    with pytest.raises(DataFormatError, match=r"qa_dev.txt:2: expected 'question<TAB>answers'"):
        list(read_metaqa(no_tab, hops=(2,)))
    short = _metaqa_dir(tmp_path / "b4", "a [A]\tX\nb [B]\tY\n", "actor_to_movie_to_actor\n")
    with pytest.raises(DataFormatError, match=r"qa_dev_qtype.txt:2: ends before qa_dev.txt"):
        list(read_metaqa(short, hops=(2,)))
    wrong_hops = _metaqa_dir(tmp_path / "b5", "a [A]\tX\n", "actor_to_movie\n")
    with pytest.raises(DataFormatError, match=r"has 1 hops, not 2"):
        list(read_metaqa(wrong_hops, hops=(2,)))


def test_metaqa_lone_file_without_qtype(tmp_path):
    path = write(tmp_path, "qa_train.txt", "what did [X] write\tY|Z\n")
    (ex,) = read_metaqa(path)
    assert ex.qid == "metaqa-train-0" and ex.s_expression is None
    assert ex.meta["split"] == "train" and ex.meta["hops"] is None and "kbcheck" not in ex.meta


def test_pathquestion_longer_paths_and_errors(tmp_path):
    line = "q ?\tc_d(c_d/e/)\ta_b#r1#x#r2#y#r3#c_d#<end>#c_d\n"
    (ex,) = read_pathquestion(write(tmp_path, "PQL-3H.txt", line))
    assert ex.qid == "pq-PQL-3H-0" and ex.meta["hops"] == 3
    assert ex.s_expression.count("(JOIN (R pathquestion.relation.") == 3
    assert [a.name for a in ex.answers] == ["c d", "e"]
    (ex,) = read_pathquestion(write(tmp_path, "noalt.txt", "q ?\tc_d\ta_b#r1#c_d\n"))
    assert [a.id for a in ex.answers] == [entity_id_for_name("c_d", "pathquestion")]
    for i, (text, reason) in enumerate(
        [
            ("q ?\tx(x/)\n", "expected 'question<TAB>answer"),
            ("q ?\tx(x/)\ta#r1\n", "malformed path"),
            ("q ?\t(/)\ta#r1#x\n", "empty answer field"),
            ("q ?\tx(x/\ta#r1#x\n", "malformed answer field"),
        ]
    ):
        path = write(tmp_path, f"bad{i}.txt", line + text)
        with pytest.raises(DataFormatError, match=reason) as info:
            list(read_pathquestion(path))
        assert info.value.where == 2 and info.value.path == str(path)


def test_synthetic_bad_line(tmp_path):
    write(tmp_path, "dev.jsonl", '{"qid": "a", "question": "q"}\n{"qid": "b"}\n')
    with pytest.raises(DataFormatError, match=r"dev.jsonl:2: missing field 'question'"):
        list(read_synthetic(tmp_path))
