"""The Freebase-shaped scale KB: determinism, Freebase shape, hubs, and gold answers on a real store."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic.fb_kb import write_scale_kb
from kbqa_lit.data.synthetic.fb_layout import layout_for
from kbqa_lit.data.synthetic.fb_names import mid
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.iri import NS, XSD
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.execute import run_sexpr

_NT = re.compile(r'^<([^>]*)> <([^>]*)> (<[^>]*>|"(?:[^"\\]|\\.)*"(?:@en|\^\^<[^>]*>)) \.$')


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("fbscale") / "kb"
    return out, write_scale_kb(out, triples=20_000, seed=0, questions=60)


def test_same_seed_same_bytes_and_size_close_to_asked(kb, tmp_path):
    out, summary = kb
    again = write_scale_kb(tmp_path / "again", triples=20_000, seed=0, questions=60)
    for name in ("kb.nt", "questions.jsonl"):
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    assert again["triples"] == summary["triples"]
    assert 0.9 * 20_000 <= summary["triples"] <= 1.1 * 20_000
    other = write_scale_kb(tmp_path / "other", triples=20_000, seed=1, questions=0)
    assert (tmp_path / "other" / "kb.nt").read_bytes() != (out / "kb.nt").read_bytes()
    assert other["questions"] == 6  # the hub questions only
    assert json.loads((out / "summary.json").read_text())["triples"] == summary["triples"]


def test_freebase_shape(kb):
    out, summary = kb
    subjects_named: set[str] = set()
    typed: Counter[str] = Counter()
    datatypes: set[str] = set()
    cvt_classes = {"film.performance", "education.education", "people.marriage"}
    cvts: set[str] = set()
    for line in (out / "kb.nt").read_text(encoding="utf-8").splitlines():
        m = _NT.match(line)
        assert m, line
        s, p, o = m.group(1)[len(NS) :], m.group(2)[len(NS) :], m.group(3)
        if p == "type.object.name":
            subjects_named.add(s)
        elif p == "type.object.type":
            typed[s] += 1
            if o[len(NS) + 1 : -1] in cvt_classes:
                cvts.add(s)
        if "^^<" in o:
            datatypes.add(o.split("^^<")[1][:-1])
    entities = {s for s in typed if s.startswith("m.0")}
    assert len(entities) == summary["entities"] + summary["cvt_nodes"]
    assert cvts and not (cvts & subjects_named)  # mediators have no name
    assert entities - cvts <= subjects_named  # every other entity has one
    assert all(typed[e] >= 2 for e in entities - cvts)  # its class and common.topic at least
    assert {XSD + t for t in ("integer", "float", "date", "gYear", "gYearMonth", "dateTime", "boolean")} <= datatypes
    text = (out / "kb.nt").read_text(encoding="utf-8")
    for schema in ("type.type", "type.property", "type.property.schema", "freebase.type_hints.included_types"):
        assert f"<{NS}{schema}>" in text
    degrees = [d for _, d in summary["top_degrees"]]
    assert degrees[0] >= 30 * summary["triples"] / summary["entities"]  # a heavy head: 30x the mean
    assert summary["hubs_1e4"] == 0  # at 2*10^4 triples; at 10^6 there are hubs of degree >= 10^4


def test_gold_sexpressions_execute_to_the_answers(kb, tmp_path):
    out, _ = kb
    store = OxigraphStore.build(tmp_path / "store", [out / "kb.nt"], "nt", timeout=60)
    try:
        rows = list(read_jsonl(out / "questions.jsonl"))
        assert len(rows) >= 30 and {r.meta["template"] for r in rows} >= {"nationality", "actors", "count_nationals"}
        for row in rows:
            _, result = run_sexpr(store, row.s_expression, semantics=row.meta["semantics"])
            assert result.ok, (row.qid, result.error)
            assert sorted(result.answers) == sorted(a.id for a in row.answers), row.qid
    finally:
        store.close()


def test_bad_sizes_are_user_errors(tmp_path):
    with pytest.raises(UserInputError, match="--triples"):
        write_scale_kb(tmp_path, triples=10)
    with pytest.raises(UserInputError, match="--questions"):
        write_scale_kb(tmp_path, triples=10_000, questions=-1)


def test_mids_are_unique_and_freebase_like():
    ids = [mid(i, 0) for i in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"m\.0[0-9bcdfghjklmnpqrstvwxyz_]{6}", i) for i in ids[:100])
    lay = layout_for(10**6)
    assert lay.kind_of(lay.index("person", 5)) == ("person", 5)
