"""``kbqa kb build`` and ``kbqa kb query``, in-process through ``kbqa_lit.cli.main`` and once as a script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.kb.lf.iri import entity_id_for_name, relation_id_for

NS = "http://rdf.freebase.com/ns/"
KB = "Up|directed_by|Pete Docter\nUp|release_year|2009\nCars|directed_by|John Lasseter\n"
UP = entity_id_for_name("Up", "metaqa")
DIRECTED_BY = relation_id_for("directed_by", "metaqa")
QUERY = f"SELECT ?n WHERE {{ <{NS}{UP}> <{NS}{DIRECTED_BY}> ?d . ?d <{NS}type.object.name> ?n }}"


@pytest.fixture
def kb_file(tmp_path: Path) -> Path:
    path = tmp_path / "kb.txt"
    path.write_text(KB, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_build_then_query(tmp_path: Path, kb_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "store")
    code, out, _ = run(capsys, "kb", "build", "--format", "metaqa", "--store", store, str(kb_file))
    stats = json.loads(out)
    assert code == 0 and stats["store"] == store and stats["triples"] == 3 + 5 and stats["seconds"] >= 0
    code, out, _ = run(capsys, "kb", "query", "--store", store, "--timeout", "5", QUERY)
    reply = json.loads(out)
    assert code == 0 and reply["ok"] and reply["answers"] == ["Pete Docter"] and reply["error"] is None
    query_file = tmp_path / "q.rq"
    query_file.write_text(QUERY, encoding="utf-8")
    code, out, _ = run(capsys, "kb", "query", "--store", store, f"@{query_file}")
    assert code == 0 and json.loads(out)["answers"] == ["Pete Docter"]


def test_failed_query_exits_1(tmp_path: Path, kb_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "store")
    run(capsys, "kb", "build", "--format", "metaqa", "--store", store, str(kb_file))
    code, out, _ = run(capsys, "kb", "query", "--store", store, "SELECT ?x WHERE { ?x ns:a.b ?y }")
    reply = json.loads(out)
    assert code == 1 and not reply["ok"] and "syntax" in reply["error"].lower()
    code, out, _ = run(capsys, "kb", "query", "--store", store, "CLEAR ALL")
    assert code == 1 and "read-only" in json.loads(out)["error"]


def test_user_errors_exit_2_without_traceback(
    tmp_path: Path, kb_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    code, out, err = run(capsys, "kb", "build", "--format", "metaqa", "--store", store, str(tmp_path / "nope.txt"))
    assert code == 2 and out == "" and "no such file" in err and "Traceback" not in err
    code, _, err = run(capsys, "kb", "query", "--store", str(tmp_path / "missing"), "ASK {}")
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    code, _, err = run(capsys, "kb", "query", "--store", str(tmp_path), "@" + str(tmp_path / "none.rq"))
    assert code == 2 and "no such file" in err
    run(capsys, "kb", "build", "--format", "metaqa", "--store", store, str(kb_file))
    code, _, err = run(capsys, "kb", "build", "--format", "metaqa", "--store", store, str(kb_file))
    assert code == 2 and "--overwrite" in err
    code, out, _ = run(capsys, "kb", "build", "--format", "metaqa", "--store", store, "--overwrite", str(kb_file))
    assert code == 0 and json.loads(out)["triples"] == 8
    bad = tmp_path / "bad.txt"
    bad.write_text("Up|directed_by\n", encoding="utf-8")
    code, _, err = run(capsys, "kb", "build", "--format", "metaqa", "--store", str(tmp_path / "s2"), str(bad))
    assert code == 2 and f"{bad}:1" in err and "Traceback" not in err


def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["kb", "build", "--format", "csv", "--store", "x", "f.txt"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["kb", "query", "--store", "x", "--timeout", "-1", "ASK {}"])
    assert "must be > 0" in capsys.readouterr().err


def test_console_script(tmp_path: Path, kb_file: Path) -> None:
    script = shutil.which("kbqa", path=str(Path(sys.executable).parent)) or shutil.which("kbqa")
    if script is None:
        pytest.skip("the kbqa console script is not installed (pip install -e .)")
    store = str(tmp_path / "store")
    build = subprocess.run(
        [script, "kb", "build", "--format", "metaqa", "--store", store, str(kb_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert build.returncode == 0, build.stderr
    query = subprocess.run([script, "kb", "query", "--store", store, QUERY], capture_output=True, text=True, timeout=60)
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)["answers"] == ["Pete Docter"]


def test_a_second_build_of_the_same_store_stops_at_once(
    tmp_path: Path, kb_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the build lock (as a running `kbqa kb build` does): this build refuses, writes nothing."""
    from kbqa_lit.kb.store.loaders import build_lock_path

    store = tmp_path / "store"
    hold = "import sys, time; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
    hold += "print('held', flush=True); time.sleep(60)"
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(build_lock_path(store))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = run(capsys, "kb", "build", "--format", "metaqa", "--store", str(store), str(kb_file))
        assert code == 2 and "another build of" in err and "is running" in err
        assert not store.exists()
    finally:
        holder.kill()
        holder.wait()
    code, out, err = run(capsys, "kb", "build", "--format", "metaqa", "--store", str(store), str(kb_file))
    assert code == 0, err
    assert json.loads(out)["triples"] == 3 + 5


def test_entity_index_command_builds_once_in_either_form(
    tmp_path: Path, kb_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KBQA_ENTITY_INDEX", raising=False)
    store = str(tmp_path / "store")
    run(capsys, "kb", "build", "--format", "metaqa", "--store", store, str(kb_file))
    code, out, _ = run(capsys, "kb", "entity-index", "--store", store)
    memory = json.loads(out)
    assert code == 0 and memory["backend"] == "memory" and memory["entities"] == 5
    assert memory["path"] == f"{store}.entities.json" and Path(memory["path"]).is_file()
    code, out, _ = run(capsys, "kb", "entity-index", "--store", store, "--backend", "disk")
    disk = json.loads(out)
    assert code == 0 and disk["backend"] == "disk" and disk["entities"] == 5 and disk["file_mb"] >= 0
    assert disk["path"] == f"{store}.entities.sqlite" and Path(disk["path"]).is_file()
    built = Path(disk["path"]).stat().st_mtime_ns
    code, out, _ = run(capsys, "kb", "entity-index", "--store", store)  # auto: the fresh file beside the store
    assert json.loads(out)["backend"] == "disk" and Path(disk["path"]).stat().st_mtime_ns == built
    code, _, err = run(capsys, "kb", "entity-index", "--store", str(tmp_path / "nope"))
    assert code == 2 and "no knowledge-base store" in err
