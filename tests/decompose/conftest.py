"""Fixtures of the decomposition tests: the synthetic world (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.data.synthetic import build_world


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("decompose_world")
    build_world(out, seed=0, size="small")
    return out


@pytest.fixture(scope="session")
def world_test(world_dir) -> list[KBQAExample]:
    return list(read_jsonl(world_dir / "test.jsonl"))
