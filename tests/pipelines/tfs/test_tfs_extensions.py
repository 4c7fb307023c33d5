"""TFS-KBQA with the named extensions: the KB-path step before S3 and the answer-type check on S1/S2 answers.

A real Oxigraph store, the real MiniLM (offline), stand-in generators with fixed responses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.pipelines.selection.chain import ChainSettings
from kbqa_lit.pipelines.selection.forms import resolve_form
from kbqa_lit.pipelines.tfs.fallback import TFSFallbackPipeline
from tests.helpers.triples_store import build_triples_store
from tests.pipelines.tfs.test_tfs_fallback import BIRTH, member

BORN, COUNTRY = "Where was Alan Turing born?", "Which country was Alan Turing born in?"
TRIPLES = [
    ("m.alan", "people.person.place_of_birth", "m.paris"),
    ("m.paris", "location.location.containedby", "m.france"),
    ("m.paris", "type.object.type", "location.citytown"),
    ("m.france", "type.object.type", "location.country"),
    ("m.alan", "type.object.type", "people.person"),
]
NAMES = {"m.alan": "Alan Turing", "m.paris": "Paris", "m.france": "France"}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphStore]:
    path = build_triples_store(tmp_path_factory.mktemp("tfs_ext_kb"), TRIPLES, NAMES)
    store = OxigraphStore(path, isolation="thread")
    yield store
    store.close()


def _examples() -> list[KBQAExample]:
    alan = {"m.alan": "Alan Turing"}
    return [
        KBQAExample("born", BORN, [Answer("m.paris", "Paris")], topic_entities=alan),
        KBQAExample("country", COUNTRY, [Answer("m.france", "France")], topic_entities=alan),
    ]


def _run(kb: OxigraphStore, extensions: list[str], responses: dict) -> dict:
    form = resolve_form("tfs", None, extensions)
    paths, types = ChainSettings().build(form)
    m, _ = member("tiny", responses)
    pipe = TFSFallbackPipeline([m], kb, linking="dataset-given", paths=paths, types=types, form=form, s1_beams=1)
    try:
        report = pipe.run(_examples())
    finally:
        pipe.close()
    return {r.qid: r for r in report.rows} | {"metrics": report.metrics}


def test_the_path_step_answers_before_s3_what_no_logical_form_answered(kb) -> None:
    silent = {("s3", BORN): ["Rome"], ("s3", COUNTRY): [""]}
    paper = _run(kb, [], silent)
    assert paper["born"].strategy == "s3" and paper["born"].answers == ["Rome"]
    assert (paper["born"].form, paper["born"].extensions) == ("paper", [])
    assert "share/paths" not in paper["metrics"]
    ext = _run(kb, ["path_fallback"], silent)
    born = ext["born"]
    assert born.strategy == "paths" and born.member == "kb" and born.executable
    assert born.answers == ["m.paris"] and "people.person.place_of_birth" in born.sexpr
    assert [a.strategy for a in born.attempts] == ["s1", "s2", "paths"]  # before S3, which is not asked
    assert (born.form, born.extensions) == ("extended", ["path_fallback"])
    assert ext["metrics"]["share/paths"] > 0


def test_the_answer_type_check_replaces_a_city_with_the_country_asked_for(kb) -> None:
    responses = {("s1", COUNTRY): [BIRTH.format("Alan Turing")]}  # executes to Paris, a city
    paper = _run(kb, [], responses)
    assert paper["country"].strategy == "s1" and paper["country"].answers == ["m.paris"]
    typed = _run(kb, ["answer_type"], responses)["country"]
    assert typed.strategy == "s1" and typed.answers == ["m.france"]
    assert "location.location.containedby" in typed.sexpr
    assert typed.f1 == 1.0 and typed.extensions == ["answer_type"]


def test_the_pipeline_config_takes_the_form_and_rejects_what_tfs_does_not_offer(tmp_path: Path) -> None:
    from kbqa_lit.pipelines.tfs.config import load_pipeline_config

    base = {"kb": {"store": str(tmp_path / "kb")}, "members": [{"name": "m", "adapters": {"s1": "a"}}]}
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({**base, "form": "extended", "answer_chain": {"override_margin": 0.3}}))
    config = load_pipeline_config(path)
    assert config.form == "extended" and config.answer_chain.override_margin == 0.3
    assert resolve_form("tfs", config.form, config.extensions).extensions == ("path_fallback", "answer_type")
    with pytest.raises(UserInputError, match="tfs does not offer the extensions \\['fill_composition'\\]"):
        resolve_form("tfs", None, ["fill_composition"])


def test_the_path_step_reads_the_entities_the_generated_mentions_link_to(kb) -> None:
    """Predicted linking, no entity of the example's own: the mention of a failed S1 beam links the seed."""
    ex = KBQAExample("born", BORN, [Answer("m.paris", "Paris")])
    failed = "( join ( reverse [ people , person , nationality ] ) [ Alan Turing ] )"  # executes to nothing
    m, _ = member("tiny", {("s1", BORN): [failed]})
    form = resolve_form("tfs", None, ["path_fallback"])
    paths, _ = ChainSettings().build(form)
    pipe = TFSFallbackPipeline([m], kb, surface_index={"Alan Turing": ["m.alan"]}, paths=paths, form=form, s1_beams=1)
    try:
        row = pipe.run([ex]).rows[0]
    finally:
        pipe.close()
    assert row.strategy == "paths" and row.answers == ["m.paris"] and "m.alan" in row.sexpr
