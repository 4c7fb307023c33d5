"""No shipped few-shot case is a question of an evaluation split in ../shared/data (test-set leakage guard)."""

from __future__ import annotations

import json
import re

import pytest

from kbqa_lit.pipelines.coq.decomposition.few_shot import load_cases, shipped_cases_path
from tests.helpers.shared_data import shared_path


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _questions(rows: list[dict], *keys: str) -> set[str]:
    return {_norm(str(r[k])) for r in rows for k in keys if r.get(k)}


def _evaluation_questions(dataset: str) -> set[str]:
    if dataset == "webqsp":
        data = json.loads(shared_path("webqsp", "WebQSP_test_1639_answer_names.json").read_text())
        rows = data if isinstance(data, list) else data.get("Questions", [])
        return _questions(rows, "RawQuestion", "ProcessedQuestion", "question")
    if dataset == "cwq":
        return _questions(json.loads(shared_path("cwq", "cwq_test_part.json").read_text()), "question")
    lines = shared_path("grailqa", "grailqa_dev.jsonl").read_text().splitlines()
    return _questions([json.loads(line) for line in lines if line.strip()], "question")


@pytest.mark.parametrize("dataset", ["webqsp", "cwq", "grailqa"])
def test_shipped_cases_are_not_evaluation_questions(dataset: str) -> None:
    held_out = _evaluation_questions(dataset)
    assert len(held_out) > 100  # the file was read
    leaked = [c.question for c in load_cases(shipped_cases_path(dataset)) if _norm(c.question) in held_out]
    assert leaked == [], f"{dataset} few-shot cases taken from an evaluation split: {leaked}"
