"""StoreSpec: builds a missing embedded store once from its files, then opens it; endpoints are opened as they are."""

from __future__ import annotations

from pathlib import Path

from kbqa_lit.kb.store import EndpointStore, OxigraphStore, StoreSpec

NS = "http://rdf.freebase.com/ns/"


def test_a_missing_store_is_built_from_its_files_then_opened(tmp_path: Path) -> None:
    nt = tmp_path / "kb.nt"
    nt.write_text(f'<{NS}m.a> <{NS}type.object.name> "Alpha"@en .\n')
    spec = StoreSpec(str(tmp_path / "store"), [str(nt)], timeout=7.0, workers=1)
    with spec.open() as kb:
        assert isinstance(kb, OxigraphStore)
        result = kb.execute(f"SELECT ?x WHERE {{ ?x <{NS}type.object.name> ?n }}")
        assert result.ok and result.answers == ["m.a"]
    nt.write_text("")  # the folder holds a store now: the files are not read again
    with StoreSpec(str(tmp_path / "store"), [str(nt)]).open() as kb:
        assert kb.execute(f"ASK {{ <{NS}m.a> ?p ?o }}").answers == ["true"]


def test_an_endpoint_is_opened_without_building_and_keeps_its_default_timeout(tmp_path: Path) -> None:
    spec = StoreSpec("http://127.0.0.1:9/sparql", [str(tmp_path / "never-read.nt")])
    store = spec.open()  # nothing is contacted until a query
    default = EndpointStore("http://127.0.0.1:9/sparql")
    try:
        assert isinstance(store, EndpointStore) and store.timeout == default.timeout
    finally:
        store.close()
        default.close()
