"""TFS mention linkers: KB names (exact, fuzzy), a precomputed results file, their merge in the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.pipelines.selection.execution_guided import KBNameLookup
from kbqa_lit.pipelines.tfs.config import LinkingConfig, build_linkers
from kbqa_lit.pipelines.tfs.fallback import TFSFallbackPipeline
from kbqa_lit.pipelines.tfs.linkers import (
    IndexLinker,
    NameLinker,
    ResultsFileLinker,
    merge_links,
    read_linking_results,
)
from tests.pipelines.tfs.test_tfs_fallback import BIRTH, Q1, kb, member  # noqa: F401  (kb: the store fixture)

NS = "http://rdf.freebase.com/ns/"


def _ex(qid: str = "q1", topics: dict | None = None) -> KBQAExample:
    return KBQAExample(
        qid,
        Q1,
        [Answer("m.london", "London")],
        topic_entities=topics or {},
        s_expression="(JOIN (R people.person.place_of_birth) m.ada)",
    )


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    path = tmp_path / "elq.jsonl"
    rows = [
        {"qid": "q1", "mentions": {"Lady Lovelace": [["m.ada2", 0.2], [f"{NS}m.ada", 0.9]]}},
        {"id": "q2", "entities": [{"mention": "alan turing", "id": "m.alan", "score": 0.8, "label": "Alan Turing"}]},
        {"question_id": "q1", "mentions": {"London": ["m.london"]}},  # a second record of q1 is merged
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return path


def test_results_file_forms_read_alike(results: Path, tmp_path: Path) -> None:
    found = read_linking_results(results)
    assert found["q1"]["Lady Lovelace"] == [("m.ada", 0.9, None), ("m.ada2", 0.2, None)]  # IRI cut, best first
    assert found["q1"]["London"] == [("m.london", 1.0, None)]
    assert found["q2"] == {"alan turing": [("m.alan", 0.8, "Alan Turing")]}
    as_list = tmp_path / "list.json"
    as_list.write_text(json.dumps([json.loads(line) for line in results.read_text().split("\n") if line]))
    as_map = tmp_path / "map.json"
    as_map.write_text(json.dumps({"q1": {"Lady Lovelace": [{"id": "m.ada", "score": 0.9}, ["m.ada2", 0.2]]}}))
    assert read_linking_results(as_list) == found
    assert read_linking_results(as_map)["q1"]["Lady Lovelace"] == found["q1"]["Lady Lovelace"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"qid": "q1", "mentions": {}}\n{"qid": "q2", "mentions": ', "line 2: not valid JSON"),
        ('{"qid": "q1", "mentions": {"a": [["m.a", "high"]]}}', "line 1 (question q1): a score must be a number"),
        ('\n{"mentions": {"a": ["m.a"]}}', "line 2: no question id"),
        ('{"qid": "q1", "links": []}', "line 1: question q1: no 'mentions' or 'entities'"),
        ('{"qid": "q1", "entities": [{"id": "m.a"}]}', "line 1 (question q1): an 'entities' item is"),
        ('{"qid": "q1", "mentions": {"a": ["m. a"]}}', "an entity id must be a non-empty string without spaces"),
        ('["not a record"]', "record 0: expected a JSON object"),
    ],
)
def test_a_malformed_results_file_names_file_and_line(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserInputError) as info:
        read_linking_results(path)
    assert str(info.value).startswith(f"{path}: ") and needle in str(info.value)
    with pytest.raises(UserInputError, match="no such linking results file: .*nope.jsonl"):
        ResultsFileLinker(tmp_path / "nope.jsonl")


def test_file_linker_matches_generated_mentions(results: Path) -> None:
    linker = ResultsFileLinker(results)
    ex = _ex()
    # exact, case/space-insensitive and fuzzy matches of the file's mentions; an unmatched mention links nothing
    assert linker.link(ex, ["Lady Lovelace"]) == {"Lady Lovelace": [("m.ada", 0.9), ("m.ada2", 0.2)]}
    assert set(linker.link(ex, ["lady  lovelace", "Lady Lovelase", "Paris"])) == {"lady  lovelace", "Lady Lovelase"}
    assert linker.link(_ex("q2"), ["Alan Turing"]) == {"Alan Turing": [("m.alan", 0.8)]}  # by the candidate's label
    assert linker.link(_ex("q9"), ["Lady Lovelace"]) == {}  # a question the file does not cover


def test_merge_keeps_linker_order_and_top_k() -> None:
    kb_links = {"Ada": [("m.1", 1.0), ("m.2", 1.0), ("m.3", 1.0)]}
    file_links = {"Ada": [("m.9", 0.9), ("m.1", 0.5)], "Bob": [("m.b", 0.3)]}
    assert merge_links([kb_links, file_links], top_k=2) == {"Ada": ["m.1", "m.2", "m.9"], "Bob": ["m.b"]}
    assert merge_links([file_links, kb_links], top_k=2) == {"Ada": ["m.9", "m.1", "m.2"], "Bob": ["m.b"]}


def test_kb_linkers_exact_and_fuzzy(kb) -> None:  # noqa: F811
    ex = _ex()
    exact = NameLinker(KBNameLookup(kb))
    found = exact.link(ex, ["Ada Lovelace", "ada lovelace", "Nobody"])
    assert list(found) == ["Ada Lovelace"]  # exact names only
    assert set(found["Ada Lovelace"]) == {("m.ada", 1.0), ("m.ada2", 1.0)}
    fuzzy = IndexLinker(EntityIndex.for_store(kb))
    found = fuzzy.link(ex, ["ada lovelace", "Ada Lovelase", "Nobody"])
    assert {e for e, _ in found["ada lovelace"]} == {"m.ada", "m.ada2"}
    assert {e for e, _ in found["Ada Lovelase"]} == {"m.ada", "m.ada2"} and "Nobody" not in found


def test_pipeline_merges_linkers_and_each_is_an_ablation_switch(kb, results: Path) -> None:  # noqa: F811
    """S1 writes a mention only the file knows: the file linker answers, the KB linker alone does not."""
    mention_lf = BIRTH.format("Lady Lovelace")
    m, _ = member("tiny", {("s1", Q1): [mention_lf]}, tasks=("s1",))
    runs = {}
    for name, linkers in {
        "kb": [LinkingConfig(linkers=["kb"])],
        "file": [LinkingConfig(linkers=["file"], results_file=str(results))],
        "kb+file": [LinkingConfig(linkers=["kb", "file"], results_file=str(results))],
        "none": [LinkingConfig(linkers=[], results_file=str(results))],
    }.items():
        pipe = TFSFallbackPipeline([m], kb, linkers=build_linkers(linkers[0], kb))
        runs[name] = pipe.run([_ex(topics={"m.ada": "Lady Lovelace"})]).rows[0]
        pipe.close()
    # the file's best candidate m.ada executes (m.ada2, the namesake, has no birthplace)
    assert runs["file"].answers == runs["kb+file"].answers == ["m.london"]
    assert runs["file"].sexpr == "(JOIN (R people.person.place_of_birth) m.ada)"
    # no gold reaches the prediction: the gold topic entity is named like the mention, yet without a
    # linker that knows the mention nothing links (linking mode: predicted)
    assert runs["kb"].answers == runs["none"].answers == [] and runs["none"].strategy is None
    oracle = TFSFallbackPipeline([m], kb, linking="gold", linkers=[])
    assert oracle.run([_ex(topics={"m.ada": "Lady Lovelace"})]).rows[0].answers == ["m.london"]  # the oracle only
    oracle.close()


def test_build_linkers_reports_a_bad_file(tmp_path: Path, kb) -> None:  # noqa: F811
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "q1", "mentions": {"a": ["m.a"]}}\n{oops}\n')
    with pytest.raises(UserInputError, match=f"{bad}: line 2: not valid JSON"):
        build_linkers(LinkingConfig(linkers=["kb", "file"], results_file=str(bad)), kb)
    assert [type(x).__name__ for x in build_linkers(LinkingConfig(linkers=["kb"], kb_match="fuzzy"), kb)] == [
        "IndexLinker"
    ]
