"""End-to-end figures of CoQ's refinement and pattern stage: gold items the retriever missed count as missed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.pipelines.coq.stage_figures import figure_metrics, schema_stage_figures

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"

# gold relations: film.film.directed_by, people.person.nationality; gold entity: m.0film
TWO_HOPS = "(JOIN (R people.person.nationality) (JOIN (R film.film.directed_by) m.0film))"


def _examples() -> list[KBQAExample]:
    hit = KBQAExample(
        qid="q1",
        question="what is the nationality of the director of Film?",
        s_expression=TWO_HOPS,
        meta={
            # the retriever missed people.person.nationality; the classifier kept one gold, one wrong
            "relation_candidates": [["film.film.directed_by", 0.9], ["film.film.genre", 0.5]],
            "refined_relations": [["film.film.directed_by", 0.8], ["film.film.genre", 0.6]],
            "entity_candidates": {"m.0film": "Film", "m.0other": "Other"},
            "refined_entities": [["m.0film", 0.9]],
            "patterns": [
                {"relation": "film.film.genre", "entity": "m.0film", "label": "Film", "score": 1.2},
                {"relation": "film.film.directed_by", "entity": "m.0film", "label": "Film", "score": 1.1},
            ],
        },
    )
    miss = KBQAExample(
        qid="q2",
        question="who directed Other?",
        s_expression="(JOIN (R film.film.directed_by) m.0other)",
        meta={
            "relation_candidates": [["film.film.genre", 0.7]],
            "refined_relations": [["film.film.genre", 0.7]],
            "entity_candidates": {"m.0other": "Other"},
            "refined_entities": [],
            "patterns": [],
        },
    )
    no_gold = KBQAExample(qid="q3", question="?", meta={"patterns": [{"relation": "r.r.r", "entity": "m.0x"}]})
    return [hit, miss, no_gold]


def test_figures_count_the_gold_items_the_retriever_missed() -> None:
    figures = schema_stage_figures(_examples())
    assert figures["questions"] == 3 and figures["questions_with_gold"] == 2
    assert figures["patterns_per_question"] == 1.0  # (2 + 0 + 1) / 3
    assert figures["with_gold_pattern"] == 0.5  # q1's (directed_by, m.0film) is gold; q2 has no pattern
    # relations: gold {directed_by, nationality} + {directed_by}; refined {directed_by, genre} + {genre}
    # tp 1, fp 2, fn 2 (nationality was never retrieved, q2's directed_by was not kept)
    assert figures["relations"] == {"gold": 3, "retrieved": 0.3333, "precision": 0.3333, "recall": 0.3333, "f1": 0.3333}
    # entities: gold {m.0film} + {m.0other}; refined {m.0film} + {}: tp 1, fp 0, fn 1
    assert figures["entities"] == {"gold": 2, "retrieved": 1.0, "precision": 1.0, "recall": 0.5, "f1": 0.6667}


def test_figures_as_logger_metrics() -> None:
    metrics = figure_metrics(schema_stage_figures(_examples()))
    assert metrics["predict/rel_recall_e2e"] == 0.3333 and metrics["predict/ent_f1_e2e"] == 0.6667
    assert metrics["predict/patterns_per_question"] == 1.0 and metrics["predict/with_gold_pattern"] == 0.5
    assert len(metrics) == 10
    no_candidates = figure_metrics(schema_stage_figures([KBQAExample(qid="q", question="?", s_expression=TWO_HOPS)]))
    assert "predict/rel_retrieved_e2e" not in no_candidates and no_candidates["predict/rel_recall_e2e"] == 0.0


def test_benchmark_script_prints_the_figures_of_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "patterns.jsonl"
    write_jsonl(_examples(), path)
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    sys.modules.pop("coq_stage_figures", None)
    import coq_stage_figures

    assert coq_stage_figures.main([str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"file": str(path), **schema_stage_figures(_examples())}
    assert coq_stage_figures.main([str(tmp_path / "none.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
