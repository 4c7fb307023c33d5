from __future__ import annotations

import pytest

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.coq.decomposition.parser import Decomposition, parse_decomposition
from kbqa_lit.pipelines.coq.decomposition.variants import (
    apply_variant,
    check_variant,
    gold_decomposition,
    render_variant,
    write_fields,
)

TEXT = "[SUBQ] who directed X? [ANS] Bob [SUBQ] where was Bob born? [ANS] Paris [SCHEMA] X [SEP] film.film.directed_by"


def _ex(**kw) -> KBQAExample:
    return KBQAExample(qid="q1", question="Where was the director of X born?", **kw)


def test_full_writes_the_contract_fields():
    ex = write_fields(
        _ex(meta={"decomposition_error": "stale"}), parse_decomposition(TEXT), variant="full", status="ok"
    )
    assert ex.decomposition == "[SUBQ] who directed X? [ANS] Bob [SUBQ] where was Bob born? [ANS] Paris"
    assert ex.meta["decomposition_schema"] == {"entities": ["X"], "relations": ["film.film.directed_by"]}
    assert ex.meta["decomposition_status"] == "ok" and ex.meta["decomposition_variant"] == "full"
    assert "decomposition_error" not in ex.meta


def test_placeholders_variant():
    ex = write_fields(_ex(), parse_decomposition(TEXT), variant="placeholders", status="ok")
    assert ex.decomposition == "[SUBQ] who directed X? [ANS] #1 [SUBQ] where was #1 born? [ANS] #2"
    assert apply_variant(parse_decomposition(TEXT), "full").render() == TEXT.split(" [SCHEMA]")[0]


def test_no_answers_variant_drops_every_answer():
    """ "w/o intermediate answers": sub-questions only, distinct from placeholders (no [ANS] at all)."""
    ex = write_fields(_ex(), parse_decomposition(TEXT), variant="no_answers", status="ok")
    assert ex.decomposition == "[SUBQ] who directed X? [SUBQ] where was #1 born?"
    assert "[ANS]" not in ex.decomposition and "Bob" not in ex.decomposition and "Paris" not in ex.decomposition
    assert ex.meta["decomposition_variant"] == "no_answers"
    assert ex.meta["decomposition_schema"] == {"entities": ["X"], "relations": ["film.film.directed_by"]}
    assert render_variant(parse_decomposition(TEXT), "no_answers") == ex.decomposition
    assert render_variant(parse_decomposition(TEXT), "placeholders") != ex.decomposition
    # downstream: the sub-chains are the sub-questions, and the text parses back
    from kbqa_lit.pipelines.coq.patterns import sub_chains

    assert sub_chains(ex.decomposition) == ["[SUBQ] who directed X?", "[SUBQ] where was #1 born?"]
    assert parse_decomposition(ex.decomposition).steps == [("who directed X?", "#1"), ("where was #1 born?", "#2")]


def test_none_variant_and_failure_fall_back_to_no_decomposition():
    ex = write_fields(_ex(decomposition="[SUBQ] old [ANS] old"), parse_decomposition(TEXT), variant="none", status="ok")
    assert ex.decomposition is None and ex.meta["decomposition_status"] == "none"
    assert "decomposition_schema" not in ex.meta
    bad = write_fields(
        _ex(decomposition="[SUBQ] old [ANS] old"), Decomposition.failure("no step"), variant="full", status="ok"
    )
    assert bad.decomposition is None
    assert bad.meta["decomposition_status"] == "failed" and bad.meta["decomposition_error"] == "no step"


def test_gold_decomposition():
    ex = _ex(
        decomposition="[SUBQ] who directed X? [ANS] Bob [SUBQ] where was Bob born? [ANS] Paris",
        topic_entities={"m.x": "X"},
        s_expression="(JOIN (R people.person.place_of_birth) (JOIN (R film.film.directed_by) m.x))",
    )
    d = gold_decomposition(ex)
    assert d.ok and d.entities == ["X"] and d.relations == []
    oracle = gold_decomposition(ex, with_relations=True)
    assert oracle.relations == ["people.person.place_of_birth", "film.film.directed_by"]
    assert not gold_decomposition(_ex()).ok
    assert "bad gold decomposition" in gold_decomposition(_ex(decomposition="nothing here")).error


def test_unknown_variant_or_source():
    with pytest.raises(UserInputError, match="decomposition variant must be one of .*; got 'partial'"):
        check_variant("partial")
    with pytest.raises(UserInputError, match="decomposition source must be one of .*; got 'oracle'"):
        check_variant("full", "oracle")
