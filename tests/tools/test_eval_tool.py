from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.tools.eval_tool import answer_key

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _annot() -> dict:
    return {"ParseQuality": "Complete", "QuestionQuality": "Good"}


# The official-format WebQSP gold of ../shared/checks/contract.sh (check_eval).
WEBQSP_GOLD = {
    "Version": "1.0",
    "Questions": [
        {
            "QuestionId": "Q1",
            "RawQuestion": "a",
            "Parses": [
                {
                    "ParseId": "Q1.P0",
                    "AnnotatorComment": _annot(),
                    "Sparql": "",
                    "Answers": [
                        {"AnswerType": "Entity", "AnswerArgument": "m.1", "EntityName": "x"},
                        {"AnswerType": "Entity", "AnswerArgument": "m.2", "EntityName": "y"},
                    ],
                },
                {
                    "ParseId": "Q1.P1",
                    "AnnotatorComment": _annot(),
                    "Sparql": "",
                    "Answers": [{"AnswerType": "Entity", "AnswerArgument": "m.3", "EntityName": "z"}],
                },
            ],
        },
        {
            "QuestionId": "Q2",
            "RawQuestion": "b",
            "Parses": [
                {
                    "ParseId": "Q2.P0",
                    "AnnotatorComment": _annot(),
                    "Sparql": "",
                    "Answers": [{"AnswerType": "Value", "AnswerArgument": "1990", "EntityName": None}],
                }
            ],
        },
    ],
}


def _write_preds(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _eval(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code = main(["eval", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1  # exactly one JSON object
    return json.loads(out)


def _eval_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["eval", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    return err


@pytest.fixture
def webqsp_gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(WEBQSP_GOLD))
    return path


def test_contract_case_webqsp_best_parse_and_missing(
    tmp_path: Path, webqsp_gold: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": "Q1", "answers": ["m.1"]}])
    per_q = tmp_path / "per_q.jsonl"
    got = _eval(
        capsys,
        "--format",
        "webqsp",
        "--gold",
        str(webqsp_gold),
        "--pred",
        str(pred),
        "--per-question",
        str(per_q),
    )
    # Q1: best parse P0 gives P=1, R=0.5, F1=2/3; Q2 missing -> 0; mean F1 = 1/3
    assert abs(got["f1"] - 1 / 3) < 1e-12 and got["missing"] == 1
    assert got["n"] == 2 and got["unknown"] == 0
    assert got["precision"] == 0.5 and got["recall"] == 0.25
    assert got["hit1"] == 0.5 and got["hit1_any"] == 0.5 and got["accuracy"] == 0.0
    assert "em" not in got and "executable" not in got
    rows = [json.loads(line) for line in per_q.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["Q1", "Q2"]
    assert rows[0]["parse_id"] == "Q1.P0" and rows[0]["f1"] == pytest.approx(2 / 3)
    assert rows[1]["missing"] is True and rows[1]["parse_id"] is None and rows[1]["f1"] == 0.0


def test_best_parse_other_parse_and_literal_spellings(
    tmp_path: Path, webqsp_gold: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    per_q = tmp_path / "per_q.jsonl"
    for literal in ["1990", f'"1990"^^{XSD}gYear', f"1990^^{XSD}gYear", '"1990"', 1990, {"id": "1990"}]:
        pred = _write_preds(
            tmp_path / "p.jsonl",
            [
                {"qid": "Q1", "answers": [{"id": "m.3", "name": "z"}, "m.3"]},
                {"qid": "Q2", "answers": [literal]},
            ],
        )
        got = _eval(
            capsys,
            "--format",
            "webqsp",
            "--gold",
            str(webqsp_gold),
            "--pred",
            str(pred),
            "--per-question",
            str(per_q),
        )
        assert got["f1"] == 1.0 and got["accuracy"] == 1.0 and got["missing"] == 0, literal
    assert json.loads(per_q.read_text().splitlines()[0])["parse_id"] == "Q1.P1"


def test_unknown_qids_are_counted_not_scored(
    tmp_path: Path, webqsp_gold: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pred = _write_preds(
        tmp_path / "p.jsonl",
        [
            {"qid": "Q1", "answers": ["m.1", "m.2"]},
            {"qid": "Q9", "answers": ["m.1"]},
            {"qid": 7, "answers": []},
        ],
    )
    got = _eval(capsys, "--format", "webqsp", "--gold", str(webqsp_gold), "--pred", str(pred))
    assert got["unknown"] == 2 and got["n"] == 2 and got["missing"] == 1 and got["f1"] == 0.5


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", "not valid JSON"),
        ('["a list"]', "JSON object"),
        ('{"answers": []}', "qid"),
        ('{"qid": "Q1"}', "'answers' must be a list"),
        ('{"qid": "Q1", "answers": "m.1"}', "'answers' must be a list"),
        ('{"qid": "Q1", "answers": [true]}', "an answer must be"),
        ('{"qid": "Q1", "answers": [{"name": "x"}]}', "an answer must be"),
        ('{"qid": "Q1", "answers": [], "executable": "yes"}', "executable"),
        ('{"qid": "Q1", "answers": [], "s_expression": 3}', "s_expression"),
        ('{"qid": "Q2", "answers": []}', "duplicate prediction"),
    ],
)
def test_bad_prediction_line_names_file_and_line(
    tmp_path: Path, webqsp_gold: Path, capsys: pytest.CaptureFixture[str], line: str, reason: str
) -> None:
    pred = _write_preds(tmp_path / "p.jsonl", ['{"qid": "Q2", "answers": ["1990"]}', "", line])
    err = _eval_error(capsys, "--format", "webqsp", "--gold", str(webqsp_gold), "--pred", str(pred))
    assert f"{pred}:3" in err and reason in err and "Traceback" not in err


def test_missing_files_exit_2(tmp_path: Path, webqsp_gold: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pred = _write_preds(tmp_path / "p.jsonl", [])
    assert "no such" in _eval_error(capsys, "--gold", str(tmp_path / "nope.jsonl"), "--pred", str(pred))
    assert "no such" in _eval_error(
        capsys, "--format", "webqsp", "--gold", str(webqsp_gold), "--pred", str(tmp_path / "nope")
    )
    args = ["--format", "webqsp", "--gold", str(webqsp_gold), "--pred", str(pred)]
    err = _eval_error(capsys, *args, "--reverse-properties", str(tmp_path / "nope"))
    assert "no such" in err


def _jsonl_gold(path: Path) -> Path:
    rows = [
        {
            "qid": "a",
            "question": "q a",
            "answers": [{"id": "m.1", "name": "x", "kind": "entity"}],
            "s_expression": "(AND t.t.t (JOIN (R r.r.fwd) m.9))",
        },
        {"qid": "b", "question": "q b", "answers": [], "s_expression": "(COUNT (JOIN r.r.fwd m.8))"},
        {
            "qid": "c",
            "question": "q c",
            "answers": [{"id": "m.7"}],
            "meta": {
                "parses": [
                    {"parse_id": "c0", "s_expression": None, "answers": [{"id": "m.5"}, {"id": "m.6"}]},
                    {"parse_id": "c1", "s_expression": "(JOIN r.r.x m.1)", "answers": [{"id": "m.7"}]},
                ]
            },
        },
        {"qid": "d", "question": "q d", "answers": [{"id": "2009-06-30", "kind": "literal"}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_gold_em_executable_and_parses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _jsonl_gold(tmp_path / "gold.jsonl")
    rev = tmp_path / "reverse_properties"
    rev.write_text("r.r.fwd\tr.r.bwd\n")
    pred = _write_preds(
        tmp_path / "p.jsonl",
        [
            # AND reordered and (R r.r.fwd) written as its reverse property
            {
                "qid": "a",
                "answers": ["m.1"],
                "s_expression": "(AND (JOIN r.r.bwd m.9) t.t.t)",
                "executable": True,
            },
            {"qid": "b", "answers": [], "s_expression": "(COUNT (JOIN", "executable": False},  # unparsable
            {"qid": "c", "answers": ["m.7"], "s_expression": "(JOIN r.r.x m.1)"},
            {"qid": "d", "answers": [f'"2009-06-30"^^{XSD}date'], "executable": True},
        ],
    )
    per_q = tmp_path / "per_q.jsonl"
    args = ["--gold", str(gold), "--pred", str(pred), "--per-question", str(per_q)]
    got = _eval(capsys, *args, "--reverse-properties", str(rev))
    assert got["f1"] == 1.0 and got["accuracy"] == 1.0 and got["n"] == 4 and got["missing"] == 0
    assert got["em"] == pytest.approx(2 / 3)  # a (graph-equal), c (second parse); b unparsable; d has no gold LF
    assert got["executable"] == 0.5
    rows = {r["qid"]: r for r in map(json.loads, per_q.read_text().splitlines())}
    assert rows["c"]["parse_id"] == "c1" and rows["a"]["em"] == 1.0 and "em" not in rows["d"]
    assert rows["a"]["executable"] is True and rows["c"]["executable"] is False
    # without the ontology, the reverse-written relation no longer matches
    assert _eval(capsys, *args)["em"] == pytest.approx(1 / 3)


def test_em_only_when_predictions_carry_logical_forms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _jsonl_gold(tmp_path / "gold.jsonl")
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": "a", "answers": ["m.1"]}])
    got = _eval(capsys, "--gold", str(gold), "--pred", str(pred))
    assert "em" not in got and "executable" not in got
    assert got["missing"] == 3 and got["f1"] == 0.25  # b has an empty gold but no prediction: 0


def test_bad_gold_sexpr_names_the_question(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"qid": "z", "question": "?", "answers": [], "s_expression": "(JOIN"}) + "\n")
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": "z", "answers": [], "s_expression": "(JOIN r.r.r m.1)"}])
    err = _eval_error(capsys, "--gold", str(gold), "--pred", str(pred))
    assert str(gold) in err and "z" in err and "S-expression" in err


def test_ranked_hit1(tmp_path: Path, webqsp_gold: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": "Q1", "answers": ["m.9", "m.1", "m.2", "m.8"]}])
    args = ["--format", "webqsp", "--gold", str(webqsp_gold), "--pred", str(pred)]
    assert _eval(capsys, *args)["hit1"] == 0.25  # (2/4 + 0) / 2
    assert _eval(capsys, *args, "--ranked")["hit1"] == 0.0
    assert _eval(capsys, *args)["hit1_any"] == 0.5


def test_cwq_and_grailqa_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cwq = tmp_path / "cwq.json"
    cwq.write_text(
        json.dumps(
            [
                {"ID": "c1", "question": "?", "answer_mids": ["m.1", "m.2"], "SExpr": "(JOIN r.r.r m.0)"},
                {"ID": "c2", "question": "?", "answer_mids": ["1961"], "SExpr": "null"},
            ]
        )
    )
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": "c1", "answers": ["m.1"]}, {"qid": "c2", "answers": ["1961"]}])
    got = _eval(capsys, "--format", "cwq", "--gold", str(cwq), "--pred", str(pred))
    assert got["f1"] == pytest.approx((2 / 3 + 1) / 2)
    grail = tmp_path / "grail.jsonl"
    grail.write_text(
        json.dumps(
            {
                "qid": 1,
                "question": "?",
                "s_expression": "(JOIN r.r.r m.0)",
                "answer": [{"answer_type": "Value", "answer_argument": f"9^^{XSD}integer"}],
            }
        )
        + "\n"
    )
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": 1, "answers": [f"9^^{XSD}integer"], "s_expression": None}])
    got = _eval(capsys, "--format", "grailqa", "--gold", str(grail), "--pred", str(pred))
    assert got["f1"] == 1.0 and "em" not in got  # null logical forms: EM is not measured


def test_real_grailqa_dev_gold_as_prediction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = DATA / "grailqa" / "grailqa_dev.jsonl"
    rev = DATA / "ontology" / "reverse_properties"
    if not gold.exists() or not rev.exists():
        pytest.skip(f"real data not available: {gold}")
    rows = []
    for line in gold.open():
        r = json.loads(line)
        rows.append(
            {
                "qid": r["qid"],
                "answers": [a["answer_argument"] for a in r["answer"]],
                "s_expression": r["s_expression"],
            }
        )
    pred = _write_preds(tmp_path / "p.jsonl", rows)
    got = _eval(
        capsys,
        "--format",
        "grailqa",
        "--gold",
        str(gold),
        "--pred",
        str(pred),
        "--reverse-properties",
        str(rev),
    )
    assert got["n"] == len(rows) and got["missing"] == 0 and got["unknown"] == 0
    assert got["f1"] == 1.0 and got["hit1"] == 1.0 and got["em"] == 1.0


def test_answer_key() -> None:
    assert answer_key("m.0abc") == "m.0abc"
    assert answer_key("<http://rdf.freebase.com/ns/m.0abc>") == "m.0abc"
    assert answer_key("http://rdf.freebase.com/ns/m.0abc") == "m.0abc"
    assert answer_key("ns:m.0abc") == "m.0abc"
    assert answer_key('"Paris"@en') == "Paris"
    assert answer_key(f'"1.8"^^{XSD}float') == "1.8"
    assert answer_key(f"1998^^{XSD}gYear") == "1998"
    assert answer_key(" Young Forrest ") == "Young Forrest"


def test_group_by_meta_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"qid": "1", "question": "q", "answers": ["m.a"], "meta": {"hops": 1}},
        {"qid": "2", "question": "q", "answers": ["m.b"], "meta": {"hops": 1}},
        {"qid": "3", "question": "q", "answers": ["m.c", "m.d"], "meta": {"hops": 2}},
        {"qid": "4", "question": "q", "answers": ["m.e"]},
    ]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = _write_preds(
        tmp_path / "p.jsonl",
        [{"qid": "1", "answers": ["m.a"]}, {"qid": "2", "answers": ["m.x"]}, {"qid": "3", "answers": ["m.c"]}],
    )
    got = _eval(capsys, "--gold", str(gold), "--pred", str(pred), "--group-by", "hops")
    by = got["by"]["hops"]
    assert list(by) == ["1", "2", "null"]
    assert by["1"]["n"] == 2 and by["1"]["f1"] == 0.5 and by["1"]["hit1"] == 0.5
    assert by["2"]["n"] == 1 and by["2"]["f1"] == pytest.approx(2 / 3) and by["2"]["hit1"] == 1.0
    assert by["null"]["n"] == 1 and by["null"]["f1"] == 0.0  # no prediction: scored 0
    assert got["f1"] == pytest.approx((1 + 0 + 2 / 3 + 0) / 4)
    assert "by" not in _eval(capsys, "--gold", str(gold), "--pred", str(pred))


def test_table_prints_all_questions_then_each_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"qid": q, "question": q, "answers": [{"id": "m.1"}], "meta": {"kind": kind}}
        for q, kind in (("a", "iid"), ("b", "iid"), ("c", "zero-shot"))
    ]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = _write_preds(tmp_path / "p.jsonl", [{"qid": "a", "answers": ["m.1"]}, {"qid": "c", "answers": ["m.2"]}])
    assert main(["eval", "--gold", str(gold), "--pred", str(pred), "--group-by", "kind", "--table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["n", "f1", "hit1", "hit1_any"]
    assert lines[1].split() == ["all", "3", "0.333", "0.333", "0.333"]
    assert lines[2].split() == ["kind=iid", "2", "0.500", "0.500", "0.500"]
    assert lines[3].split() == ["kind=zero-shot", "1", "0.000", "0.000", "0.000"]
