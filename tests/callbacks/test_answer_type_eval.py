"""ExecutionGuidedEval with the answer_type extension: "which country" answered with a city gives way to the country."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.data.schema import Answer, write_jsonl
from tests.helpers.toy import CITIES, born_in, born_in_kb
from tests.helpers.untrained_eval import untrained_test

NS = "http://rdf.freebase.com/ns/"
COUNTRY = ("m.k0", "Zedland")


def _typed_kb(examples) -> str:
    """The toy KB plus classes and every city in one country."""
    lines = [born_in_kb(examples)]
    kid, name = COUNTRY
    lines.append(f'<{NS}{kid}> <{NS}type.object.name> "{name}"@en .\n')
    lines.append(f"<{NS}{kid}> <{NS}type.object.type> <{NS}location.country> .\n")
    for cid, _ in CITIES:
        lines.append(f"<{NS}{cid}> <{NS}type.object.type> <{NS}location.city> .\n")
        lines.append(f"<{NS}{cid}> <{NS}location.location.containedby> <{NS}{kid}> .\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("answer_type")
    train, born = born_in(8), born_in(6, offset=1, prefix="t")
    test = [
        dataclasses.replace(
            ex,
            question=f"Which country was {name} born in?",
            answers=[Answer(*COUNTRY)],
            s_expression=f"(JOIN (R location.location.containedby) {ex.s_expression})",
        )
        for ex in born
        for name in ex.topic_entities.values()
    ]
    (root / "kb.nt").write_text(_typed_kb(train + born), encoding="utf-8")  # births, not the countries
    write_jsonl(train, root / "train.jsonl")
    write_jsonl(train[:2], root / "dev.jsonl")
    write_jsonl(test, root / "test.jsonl")
    return root


def _test(root: Path, *extensions: str, **settings) -> ExecutionGuidedEval:
    return untrained_test(root, extensions=["path_fallback", *extensions], **settings)


def test_the_answer_type_check_replaces_a_city_with_the_country(root: Path) -> None:
    plain = _test(root)
    assert "answer_type_rate" not in plain.last_metrics
    assert all(r["answer_type"] is False and r["answers"] != [COUNTRY[0]] for r in plain.last_rows)
    answered = [r["qid"] for r in plain.last_rows if r["path_fallback"]]  # the birthplace: a city
    assert len(answered) >= 3, [r["linked"] for r in plain.last_rows]
    typed = _test(root, "answer_type")
    rows = {r["qid"]: r for r in typed.last_rows}
    for qid in answered:
        assert rows[qid]["answer_type"] and rows[qid]["answers"] == [COUNTRY[0]], rows[qid]["chosen_sexpr"]
        assert "location.location.containedby" in rows[qid]["chosen_sexpr"]
    m = typed.last_metrics
    assert m["answer_type_rate"] == pytest.approx(sum(r["answer_type"] for r in rows.values()) / len(rows))
    assert m["f1"] >= len(answered) / len(rows) > plain.last_metrics["f1"] == 0.0
