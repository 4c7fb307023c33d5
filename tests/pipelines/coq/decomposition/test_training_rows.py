"""The trained decomposer's rows: the prompt `kbqa decompose` sends, the gold decomposition it learns to write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.coq.decomposition.config import load_job
from kbqa_lit.pipelines.coq.decomposition.decompose import linked_slots
from kbqa_lit.pipelines.coq.decomposition.parser import parse_decomposition
from kbqa_lit.pipelines.coq.decomposition.training_rows import relation_phrase, training_rows

TRAINED = Path(__file__).resolve().parents[4] / "configs" / "coq" / "decompose" / "trained.yaml"


def _example(**kw) -> KBQAExample:
    fields = {
        "qid": "q1",
        "question": "Which directors has Amos Garrick worked with?",
        "topic_entities": {"m.amos": "Amos Garrick"},
        "decomposition": "[SUBQ] what films has Amos Garrick appeared in? [ANS] Broken Lighthouse "
        "[SUBQ] who directed Broken Lighthouse? [ANS] Silas Quill",
        "s_expression": "(JOIN (R film.film.directed_by) (JOIN film.film.actor m.amos))",
    }
    return KBQAExample(**{**fields, **kw})


def test_relation_phrases() -> None:
    assert relation_phrase("people.person.place_of_birth") == "place of birth"
    assert relation_phrase("film.film.directed_by") == "directed by"


def test_rows_are_the_inference_prompt_and_the_masked_placeholder_decomposition() -> None:
    job = load_job(TRAINED, with_backend=False)
    assert (job.variant, job.mask_entities, job.prompt.cases) == ("placeholders", True, [])
    rows, skipped = training_rows(
        [_example(), _example(qid="q2", decomposition=None)], job.prompt, "placeholders", True
    )
    assert skipped == 1 and len(rows) == 1
    assert rows[0]["prompt"] == job.prompt.render("Which directors has [E0] worked with?")
    assert rows[0]["prompt"] == 'Decompose the question "Which directors has [E0] worked with?" step by step:\n'
    response = rows[0]["response"]
    assert response.startswith("[SUBQ] what films has [E0] appeared in? [ANS] #1 [SUBQ] who directed #1? [ANS] #2")
    assert "Broken Lighthouse" not in response and "Silas Quill" not in response  # answers the model cannot know
    parsed = parse_decomposition(response)
    assert parsed.ok and parsed.entities == ["[E0]"] and set(parsed.relations) == {"directed by", "actor"}
    plain, _ = training_rows([_example()], job.prompt, "full", False)
    assert "Amos Garrick" in plain[0]["prompt"] and "[ANS] Broken Lighthouse" in plain[0]["response"]


def test_inference_masks_the_linked_entities_never_the_gold() -> None:
    assert linked_slots(_example()) == []  # gold topic entities only: nothing linked, nothing masked
    linked = _example(meta={"entity_candidates": {"m.other": "Amos Garrick", "m.x": "Nowhere"}})
    assert linked_slots(linked)[0] == ("[E0]", "Amos Garrick")


def test_no_rows_without_decompositions_or_with_variant_none(tmp_path: Path, capsys) -> None:
    job = load_job(TRAINED, with_backend=False)
    with pytest.raises(UserInputError, match="other than 'none'"):
        training_rows([_example()], job.prompt, "none")
    empty = tmp_path / "empty.jsonl"
    write_jsonl([_example(decomposition=None)], empty)
    code = main(
        [
            "decompose",
            "--config",
            str(TRAINED),
            "--input",
            str(empty),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--training-rows",
        ]
    )
    assert code == 2 and "no example has a gold decomposition" in capsys.readouterr().err


def test_the_command_writes_the_rows(tmp_path: Path, capsys) -> None:
    data = tmp_path / "train.jsonl"
    write_jsonl([_example(), _example(qid="q2")], data)
    out = tmp_path / "rows.jsonl"
    assert (
        main(["decompose", "--config", str(TRAINED), "--input", str(data), "--out", str(out), "--training-rows"]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["skipped"], summary["mask_entities"]) == (2, 0, True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [set(r) for r in rows] == [{"prompt", "response"}] * 2
