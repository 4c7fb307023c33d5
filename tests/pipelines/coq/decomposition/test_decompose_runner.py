from __future__ import annotations

import json
import re

import pytest

from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.llm.backends import DecompositionBackend, DecompositionBackendError, GenerationOutcome
from kbqa_lit.llm.response_cache import DecompositionCache
from kbqa_lit.pipelines.coq.decomposition.decompose import decompose_file, partial_path
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt

HEADER = re.compile(r'Decompose the question "(.*)" step by step:\s*$')


class ScriptedBackend(DecompositionBackend):
    """Answers each prompt with the gold decomposition of its question (a real implementation of
    the interface with a scripted 'model'); raises after ``fail_after`` prompts, fails some prompts."""

    kind = "scripted"

    def __init__(self, gold: dict[str, str], fail_after: int | None = None, fail_questions=()) -> None:
        self.gold = gold
        self.fail_after = fail_after
        self.fail_questions = set(fail_questions)
        self.prompts: list[str] = []

    @property
    def model_name(self) -> str:
        return "gold-oracle"

    def generation_settings(self):
        return {"v": 1}

    def generate_outcomes(self, prompts):
        out = []
        for p in prompts:
            if self.fail_after is not None and len(self.prompts) >= self.fail_after:
                raise DecompositionBackendError("server went away")
            self.prompts.append(p)
            q = HEADER.search(p).group(1)
            if q in self.fail_questions:
                out.append(GenerationOutcome(None, "HTTP 503 from http://x/v1"))
            else:
                out.append(GenerationOutcome(f"Sure!\n{self.gold[q]} [SCHEMA] {q.split()[-1]} [SEP] r.a.b\nDone."))
        return out


@pytest.fixture()
def small_input(tmp_path, world_test):
    rows = world_test[:12]
    path = tmp_path / "in.jsonl"
    write_jsonl(rows, path)
    gold = {" ".join(ex.question.split()): ex.decomposition for ex in rows}
    return path, rows, gold


def _rows(path):
    return list(read_jsonl(path))


def test_backend_run_writes_contract_fields_in_input_order(tmp_path, small_input):
    path, rows, gold = small_input
    out = tmp_path / "out.jsonl"
    backend = ScriptedBackend(gold, fail_questions=[rows[3].question])
    s = decompose_file(
        path, out, backend=backend, prompt=DecompositionPrompt("synthetic"), batch_size=5, progress=False
    )
    assert (s.n, s.ok, s.failed, s.gold, s.none, s.generated, s.cached, s.resumed) == (12, 11, 1, 0, 0, 12, 0, 0)
    got = _rows(out)
    assert [ex.qid for ex in got] == [ex.qid for ex in rows]
    for ex, src in zip(got, rows, strict=True):
        if ex.qid == rows[3].qid:
            assert ex.decomposition is None and ex.meta["decomposition_status"] == "failed"
            assert "HTTP 503" in ex.meta["decomposition_error"]
            continue
        assert ex.decomposition == src.decomposition
        assert ex.meta["decomposition_status"] == "ok"
        assert ex.meta["decomposition_schema"]["relations"] == ["r.a.b"]
        assert ex.meta["template"] == src.meta["template"]  # the rest of the row is kept
    assert not partial_path(out).exists()


def test_cache_makes_a_second_run_free_and_failures_are_retried(tmp_path, small_input):
    path, rows, gold = small_input
    cache = DecompositionCache(tmp_path / "cache.sqlite")
    first = ScriptedBackend(gold, fail_questions=[rows[0].question])
    decompose_file(path, tmp_path / "a.jsonl", backend=first, cache=cache, batch_size=4, progress=False)
    again = ScriptedBackend(gold)
    s = decompose_file(path, tmp_path / "b.jsonl", backend=again, cache=cache, batch_size=4, progress=False)
    assert len(again.prompts) == 1 and HEADER.search(again.prompts[0]).group(1) == rows[0].question
    assert (s.cached, s.generated, s.ok, s.failed) == (11, 1, 12, 0)
    # placeholders reuse the same model outputs
    third = ScriptedBackend(gold)
    s3 = decompose_file(path, tmp_path / "c.jsonl", backend=third, cache=cache, variant="placeholders", progress=False)
    assert third.prompts == [] and s3.cached == 12
    assert all("[ANS] #" in ex.decomposition for ex in _rows(tmp_path / "c.jsonl"))
    # another prompt (other cases) is another key
    fourth = ScriptedBackend(gold)
    decompose_file(
        path, tmp_path / "d.jsonl", backend=fourth, cache=cache, prompt=DecompositionPrompt("cwq"), progress=False
    )
    assert len(fourth.prompts) == 12
    cache.close()


def test_interrupted_run_resumes_without_recomputing(tmp_path, small_input):
    path, rows, gold = small_input
    out = tmp_path / "out.jsonl"
    cache = DecompositionCache(tmp_path / "cache.sqlite")
    dying = ScriptedBackend(gold, fail_after=8)
    with pytest.raises(DecompositionBackendError, match="server went away"):
        decompose_file(path, out, backend=dying, cache=cache, batch_size=4, progress=False)
    assert not out.exists()
    part = partial_path(out)
    assert len(part.read_text().splitlines()) == 8  # two whole batches were flushed
    rerun = ScriptedBackend(gold)
    s = decompose_file(path, out, backend=rerun, cache=cache, batch_size=4, progress=False)
    assert len(rerun.prompts) == 4  # only the last batch
    assert (s.resumed, s.generated, s.cached, s.n, s.ok) == (8, 4, 0, 12, 12)
    assert [ex.qid for ex in _rows(out)] == [ex.qid for ex in rows]
    assert not part.exists()
    cache.close()


def test_resume_without_cache_and_a_torn_last_line(tmp_path, small_input):
    path, rows, gold = small_input
    out = tmp_path / "out.jsonl"
    with pytest.raises(DecompositionBackendError):
        decompose_file(path, out, backend=ScriptedBackend(gold, fail_after=5), batch_size=5, progress=False)
    part = partial_path(out)
    with part.open("a") as fh:  # a crash in the middle of writing a row
        fh.write('{"qid": "' + rows[5].qid + '", "quest')
    rerun = ScriptedBackend(gold)
    s = decompose_file(path, out, backend=rerun, batch_size=5, progress=False)
    assert s.resumed == 5 and len(rerun.prompts) == 7 and s.n == 12


def test_partial_of_another_variant_is_refused(tmp_path, small_input):
    path, _, gold = small_input
    out = tmp_path / "out.jsonl"
    with pytest.raises(DecompositionBackendError):
        decompose_file(path, out, backend=ScriptedBackend(gold, fail_after=2), batch_size=2, progress=False)
    with pytest.raises(UserInputError, match="holds rows of variant 'full', not 'placeholders'"):
        decompose_file(path, out, backend=ScriptedBackend(gold), variant="placeholders", progress=False)
    partial_path(out).write_text('{"qid": 1}\n' + "not json\n")
    with pytest.raises(DataFormatError, match="out.jsonl.partial:1"):
        decompose_file(path, out, backend=ScriptedBackend(gold), progress=False)


def test_gold_and_none_need_no_backend(tmp_path, world_dir, world_test):
    gold_out, none_out = tmp_path / "gold.jsonl", tmp_path / "none.jsonl"
    s = decompose_file(world_dir / "test.jsonl", gold_out, source="gold", variant="placeholders", progress=False)
    assert (s.n, s.gold, s.ok, s.failed) == (len(world_test), len(world_test), 0, 0)
    got = _rows(gold_out)
    assert (
        got[1].decomposition
        == "[SUBQ] who directed Golden Compass? [ANS] #1 [SUBQ] what is the nationality of #1? [ANS] #2"
    )
    assert got[1].meta["decomposition_schema"] == {"entities": ["Golden Compass"], "relations": []}
    s = decompose_file(world_dir / "test.jsonl", none_out, variant="none", limit=7, progress=True)
    assert (s.n, s.none) == (7, 7)
    assert all(ex.decomposition is None and ex.meta["decomposition_status"] == "none" for ex in _rows(none_out))


def test_input_errors(tmp_path, small_input):
    path, _, gold = small_input
    with pytest.raises(UserInputError, match="needs a backend"):
        decompose_file(path, tmp_path / "o.jsonl", progress=False)
    with pytest.raises(UserInputError, match="no such input file"):
        decompose_file(tmp_path / "missing.jsonl", tmp_path / "o.jsonl", source="gold", progress=False)
    dup = tmp_path / "dup.jsonl"
    line = path.read_text().splitlines()[0]
    dup.write_text(line + "\n" + line + "\n")
    with pytest.raises(DataFormatError, match="duplicate question id"):
        decompose_file(dup, tmp_path / "o.jsonl", source="gold", progress=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "no qid"}) + "\n")
    with pytest.raises(DataFormatError, match="bad.jsonl:1"):
        decompose_file(bad, tmp_path / "o.jsonl", source="gold", progress=False)
    with pytest.raises(UserInputError, match="batch_size"):
        decompose_file(path, tmp_path / "o.jsonl", source="gold", batch_size=0, progress=False)
