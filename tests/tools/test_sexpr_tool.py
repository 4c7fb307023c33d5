"""`kbqa sexpr to-sparql` / `kbqa sexpr run`: semantics names, aliases, ties, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import build_parser, main
from kbqa_lit.kb.lf.semantics import SEMANTICS_NAMES
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql

EXPR = "(JOIN (R location.country.official_language) (JOIN location.country.national_anthem m.0a))"
ARGMAX = "(ARGMAX (JOIN (R a.b.c) m.0a) a.b.size)"


def test_semantics_alias_and_default_for_expr(capsys):
    assert main(["sexpr", "to-sparql", "--semantics", "cwq", EXPR]) == 0
    assert capsys.readouterr().out.strip() == sexpr_to_sparql(EXPR, semantics="exclude-source")
    assert main(["sexpr", "to-sparql", "--semantics", "grailqa", "--ties", "first", ARGMAX]) == 0
    assert capsys.readouterr().out.rstrip().endswith("LIMIT 1")
    assert main(["sexpr", "to-sparql", "--semantics", "grailqa", ARGMAX]) == 0
    assert "LIMIT 1" not in capsys.readouterr().out


def test_unknown_semantics_is_one_line_on_stderr_and_exit_2(capsys):
    assert main(["sexpr", "to-sparql", "--semantics", "freebase", EXPR]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "--semantics must be one of" in lines[0] and "pathquestion" in lines[0]
    assert "got 'freebase'" in lines[0]


def test_help_lists_every_accepted_name():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["sexpr"]
    to_sparql = next(a for a in sub._actions if a.dest == "sexpr_command").choices["to-sparql"]
    text = " ".join(to_sparql.format_help().split())
    for name in SEMANTICS_NAMES:
        assert name in text


def test_batch_lines_take_the_default_an_alias_or_report_an_unknown_name(tmp_path: Path, capsys):
    batch = tmp_path / "in.jsonl"
    rows = [
        {"qid": "a", "s_expression": EXPR},
        {"qid": "b", "s_expression": EXPR, "semantics": "webqsp"},
        {"qid": "c", "s_expression": EXPR, "meta": {"semantics": "nope"}},
    ]
    batch.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["sexpr", "to-sparql", "--batch", str(batch), "--semantics", "cwq"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out[0]["sparql"] == sexpr_to_sparql(EXPR, semantics="exclude-source")
    assert out[1]["sparql"] == sexpr_to_sparql(EXPR, semantics="exclude-topic")
    assert out[2]["error"] == "line 3: unknown semantics 'nope'"


def test_ontology_folder_must_exist(tmp_path: Path, capsys):
    assert main(["sexpr", "to-sparql", "--ontology", str(tmp_path / "none"), EXPR]) == 2
    assert "no such ontology folder" in capsys.readouterr().err


@pytest.mark.parametrize("ties", ["first", "all"])
def test_run_on_a_store_with_ties(tmp_path: Path, capsys, ties: str):
    import pyoxigraph as ox

    ns = "http://rdf.freebase.com/ns/"
    store_dir = tmp_path / "store"
    store = ox.Store(str(store_dir))
    five = '"5"^^<http://www.w3.org/2001/XMLSchema#integer>'
    nt = "".join(f"<{ns}m.0a> <{ns}a.b.c> <{ns}{e}> .\n<{ns}{e}> <{ns}a.b.size> {five} .\n" for e in ("m.1", "m.2"))
    store.load(nt.encode(), ox.RdfFormat.N_TRIPLES)
    store.flush()
    del store
    assert main(["sexpr", "run", "--store", str(store_dir), "--ties", ties, ARGMAX]) == 0
    answers = json.loads(capsys.readouterr().out)["answers"]
    assert len(answers) == (1 if ties == "first" else 2)
