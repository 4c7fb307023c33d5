"""The typed ``kbqa lora pipeline`` config: the shipped file parses, bad files name the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.tfs.config import TFSPipelineConfig, load_pipeline_config

SHIPPED = Path(__file__).resolve().parents[3] / "configs" / "tfs" / "pipeline.yaml"


def test_shipped_config_parses_into_typed_fields() -> None:
    cfg = load_pipeline_config(SHIPPED)
    assert isinstance(cfg, TFSPipelineConfig)
    assert [m.name for m in cfg.members] == ["tiny"]
    assert set(cfg.members[0].adapters) == {"s1", "s2_items", "s2_lf", "s3"}
    assert cfg.strategies == ["s1", "s2", "s3"] and cfg.order == "strategy"
    assert cfg.decoding.s1_beams == 5 and cfg.decoding.max_new_tokens == 96
    assert cfg.kb.store.endswith("store") and cfg.kb.timeout == 10.0


def test_defaults_fill_what_a_small_config_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("kb: {store: http://127.0.0.1:1/sparql}\nmembers: [{name: m, adapters: {s3: a}}]\n")
    cfg = load_pipeline_config(path)
    assert cfg.data.split == "test" and cfg.linking.linkers == ["kb"] and cfg.decoding.batch_size == 8
    assert cfg.linking.kb_match == "exact" and cfg.linking.results_file is None and cfg.linking.mode == "predicted"
    assert cfg.members[0].s2_lf_input is None and cfg.members[0].schema_form is None  # as the adapter records


@pytest.mark.parametrize(("old", "linkers"), [("kb", ["kb"]), ("null", [])])
def test_the_old_surface_index_reads_as_linkers(tmp_path: Path, old: str, linkers: list[str]) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"kb: {{store: s}}\nmembers: [{{name: m, adapters: {{s3: a}}}}]\nlinking: {{surface_index: {old}}}\n"
    )
    assert load_pipeline_config(path).linking.linkers == linkers


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}, torch_dtyp: bfloat16}]\n", "torch_dtyp"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}}]\norder: random\n", "order"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}}]\nstrategies: [s4]\n", "strategies"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}}]\ndecoding: {s1_beams: many}\n", "s1_beams"),
        ("members: [{name: m, adapters: {s1: a}}]\n", "kb"),
        ("kb: {store: s}\nmembers: []\n", "members"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}}]\nlinking: {linkers: [elq]}\n", "linkers"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}}]\nlinking: {linkers: [kb, file]}\n", "results_file"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a}, s2_lf_input: both}]\n", "s2_lf_input"),
        ("kb: {store: s}\nmembers: [{name: m, adapters: {s1: a, s4: b}}]\n", "unknown tasks ['s4']"),
        ("- just\n- a list\n", "mapping"),
    ],
)
def test_bad_config_is_a_user_error_naming_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserInputError) as info:
        load_pipeline_config(path)
    assert str(path) in str(info.value) and needle in str(info.value)


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no such config"):
        load_pipeline_config(tmp_path / "nope.yaml")
