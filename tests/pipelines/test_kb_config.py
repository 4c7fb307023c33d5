"""The shared ``kb:`` section: one shape for TFS-KBQA's, Keqing's and FC-KBQA's run configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.kb_config import KBConfig
from kbqa_lit.pipelines.keqing.config import KeqingConfig
from kbqa_lit.pipelines.tfs.config import TFSPipelineConfig

NT = "<http://rdf.freebase.com/ns/m.a> <http://rdf.freebase.com/ns/r.b.c> <http://rdf.freebase.com/ns/m.b> .\n"


def test_tfs_and_keqing_configs_share_the_section() -> None:
    fields = {f for f in KBConfig.__dataclass_fields__}
    assert KeqingConfig.__dataclass_fields__["kb"].type in ("KBConfig", KBConfig)
    assert TFSPipelineConfig.__dataclass_fields__["kb"].type in ("KBConfig", KBConfig)
    assert fields == {"store", "build_from", "format", "timeout", "semantics"}


def test_a_missing_store_is_built_from_one_path_or_a_list_then_opened(tmp_path: Path) -> None:
    (tmp_path / "kb.nt").write_text(NT, encoding="utf-8")
    for name, build_from in (("one", str(tmp_path / "kb.nt")), ("list", [str(tmp_path / "kb.nt")])):
        kb = KBConfig(str(tmp_path / name), build_from, timeout=5)
        assert kb.files() == [str(tmp_path / "kb.nt")] and kb.spec().timeout == 5.0
        store = kb.open()
        try:
            assert store.execute("SELECT ?o WHERE { ?s ?p ?o }").ok
        finally:
            store.close()


def test_an_untyped_section_is_checked() -> None:
    assert KBConfig.from_mapping({"store": "kb", "build_from": None, "format": "nt"}).files() == []
    with pytest.raises(UserInputError, match="the config needs kb.store"):
        KBConfig.from_mapping({"store": None, "build_from": []})
    with pytest.raises(UserInputError, match=r"unknown kb keys \['path'\]"):
        KBConfig.from_mapping({"store": "kb", "path": "x"})
