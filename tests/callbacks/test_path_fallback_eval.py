"""ExecutionGuidedEval(extensions=[path_fallback]): an untrained generator's empty beams give way to the KB's paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.schema import write_jsonl
from tests.helpers.toy import born_in, born_in_kb
from tests.helpers.untrained_eval import untrained_test


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("path_fallback")
    train, test = born_in(8), born_in(6, offset=1, prefix="t")
    (root / "kb.nt").write_text(born_in_kb(train + test), encoding="utf-8")
    write_jsonl(train, root / "train.jsonl")
    write_jsonl(train[:2], root / "dev.jsonl")
    write_jsonl(test, root / "test.jsonl")
    return root


def _test(root: Path, **settings) -> ExecutionGuidedEval:
    return untrained_test(root, **settings)


def test_the_path_fallback_answers_where_no_beam_executes(root: Path) -> None:
    plain = _test(root)
    assert "path_fallback_rate" not in plain.last_metrics
    assert not any(r["path_fallback"] or r["path_override"] for r in plain.last_rows)
    assert {(r["form"], tuple(r["extensions"])) for r in plain.last_rows} == {("paper", ())}
    with_paths = _test(root, extensions=["path_fallback"], path_max_hops=1)
    rows = with_paths.last_rows
    used = [r for r in rows if r["path_fallback"]]
    assert {(r["form"], tuple(r["extensions"])) for r in rows} == {("extended", ("path_fallback",))}
    assert used, [r["beams"] for r in rows]  # an untrained generator's beams come back empty
    for r in used:  # the toy KB has one relation: the linked person's birthplace
        assert r["executable"] and r["chosen_beam"] is None
        assert r["chosen_sexpr"] == f"(JOIN (R people.person.place_of_birth) {next(iter(r['linked']))})"
    m = with_paths.last_metrics
    assert m["path_fallback_rate"] == pytest.approx(len(used) / len(rows))
    assert m["path_override_rate"] == 0.0
    assert m["f1"] > plain.last_metrics["f1"] and m["executable"] > plain.last_metrics["executable"]
