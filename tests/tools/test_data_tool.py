"""`kbqa data convert` / `kbqa data synth`, run in-process through kbqa_lit.cli.main."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.schema import read_jsonl
from tests.helpers.shared_data import shared_path as data_path


def run(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    out = json.loads(captured.out) if code == 0 else None
    return code, out, captured.err


def test_convert_pathquestion(tmp_path, capsys):
    src = data_path("pathquestion", "PQ-2H.txt")
    out = tmp_path / "sub" / "pq.jsonl"
    code, summary, _ = run(
        capsys, "data", "convert", "--format", "pathquestion", "--input", str(src), "--out", str(out)
    )
    assert code == 0
    assert summary == {"format": "pathquestion", "input": str(src), "out": str(out), "examples": 1908}
    rows = list(read_jsonl(out))
    assert len(rows) == 1908 and rows[0].qid == "pq-PQ-2H-0"
    assert rows[0].meta["semantics"] == "plain"
    assert not list(out.parent.glob("*.tmp"))


def test_convert_metaqa_dev(tmp_path, capsys):
    src = data_path("metaqa")
    out = tmp_path / "mq.jsonl"
    code, summary, _ = run(
        capsys,
        "data",
        "convert",
        "--format",
        "metaqa",
        "--input",
        str(src),
        "--split",
        "dev",
        "--out",
        str(out),
    )
    assert code == 0 and summary["examples"] == 39138
    with out.open(encoding="utf-8") as fh:
        first = json.loads(fh.readline())
    assert first["qid"] == "metaqa-1hop-dev-0"
    assert first["s_expression"].startswith("(JOIN metaqa.movie.starred_actors m.mq_temuera_morrison_")
    assert first["meta"]["kbcheck"] == "exact"


@pytest.mark.parametrize(
    ("fmt", "parts", "count"),
    [
        ("webqsp", ("webqsp", "WebQSP_test_1639_answer_names.json"), 1639),
        ("cwq", ("cwq", "cwq_test_part.json"), 1765),
        ("grailqa", ("grailqa", "grailqa_dev.jsonl"), 3745),
    ],
)
def test_convert_freebase_sets(tmp_path, capsys, fmt, parts, count):
    out = tmp_path / f"{fmt}.jsonl"
    code, summary, _ = run(
        capsys, "data", "convert", "--format", fmt, "--input", str(data_path(*parts)), "--out", str(out)
    )
    assert code == 0 and summary["examples"] == count
    assert sum(1 for _ in read_jsonl(out)) == count


def test_convert_synthetic_roundtrip(tmp_path, capsys):
    src = tmp_path / "world"
    src.mkdir()
    (src / "test.jsonl").write_text(
        json.dumps({"qid": "a", "question": "q", "answers": [{"id": "m.x", "name": "X", "kind": "entity"}]}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "copy.jsonl"
    code, summary, _ = run(
        capsys,
        "data",
        "convert",
        "--format",
        "synthetic",
        "--input",
        str(src),
        "--split",
        "test",
        "--out",
        str(out),
    )
    assert code == 0 and summary["examples"] == 1
    (ex,) = read_jsonl(out)
    assert ex.meta == {"dataset": "synthetic", "semantics": "exclude-topic"}


def test_convert_bad_record_exits_2_and_keeps_old_output(tmp_path, capsys):
    src = tmp_path / "PQ-bad.txt"
    src.write_text("q ?\ta(a/)\ts#r#a#<end>#a\nbroken line without tabs\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n", encoding="utf-8")
    code, _, err = run(capsys, "data", "convert", "--format", "pathquestion", "--input", str(src), "--out", str(out))
    assert code == 2
    assert f"{src}:2:" in err and "Traceback" not in err
    assert out.read_text(encoding="utf-8") == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["PQ-bad.txt", "out.jsonl"]


def test_convert_missing_input_and_bad_format(tmp_path, capsys):
    code, _, err = run(
        capsys,
        "data",
        "convert",
        "--format",
        "cwq",
        "--input",
        str(tmp_path / "no.json"),
        "--out",
        str(tmp_path / "o.jsonl"),
    )
    assert code == 2 and "no such CWQ file" in err
    with pytest.raises(SystemExit) as info:
        main(["data", "convert", "--format", "nope", "--input", "x", "--out", "y"])
    assert info.value.code == 2
    capsys.readouterr()


def test_synth_prints_build_world_summary(tmp_path, capsys, monkeypatch):
    calls = []

    def fake_build_world(out_dir: Path, seed: int, size: str) -> dict:
        calls.append((out_dir, seed, size))
        return {"out": str(out_dir), "seed": seed, "size": size}

    fake = types.ModuleType("kbqa_lit.data.synthetic")
    fake.build_world = fake_build_world
    monkeypatch.setitem(sys.modules, "kbqa_lit.data.synthetic", fake)
    out = tmp_path / "w"
    code, summary, _ = run(capsys, "data", "synth", "--out", str(out), "--seed", "3", "--size", "medium")
    assert code == 0 and summary == {"out": str(out), "seed": 3, "size": "medium"}
    code, summary, _ = run(capsys, "data", "synth", "--out", str(out))
    assert code == 0 and summary["seed"] == 0 and summary["size"] == "small"
    assert calls == [(out, 3, "medium"), (out, 0, "small")]


def test_synth_package_without_build_world(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "kbqa_lit.data.synthetic", types.ModuleType("kbqa_lit.data.synthetic"))
    code, _, err = run(capsys, "data", "synth", "--out", str(tmp_path / "w"))
    assert code == 2 and "synthetic world is not available in this build" in err


def test_data_without_subcommand(capsys):
    code, _, err = run(capsys, "data")
    assert code == 2 and "convert|synth" in err


def test_synth_reports_missing_world_module(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "kbqa_lit.data.synthetic", None)  # import now fails
    code, _, err = run(capsys, "data", "synth", "--out", str(tmp_path / "w"))
    assert code == 2 and "synthetic world is not available in this build" in err


def test_synth_kb_writes_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "kb"
    code, summary, _ = run(capsys, "data", "synth-kb", "--triples", "5e3", "--out", str(out), "--questions", "10")
    assert code == 0
    assert summary["triples_requested"] == 5000 and summary["triples"] > 4000
    assert (out / "kb.nt").is_file() and (out / "questions.jsonl").is_file()


def test_synth_kb_rejects_a_bad_size(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["data", "synth-kb", "--triples", "lots", "--out", str(tmp_path)])
    assert "not a number of triples" in capsys.readouterr().err
