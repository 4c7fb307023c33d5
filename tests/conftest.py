"""Shared fixtures: the real data in ../shared/data and the gold S-expressions in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.data.synthetic import build_world
from tests.helpers.shared_data import shared_path


def load_gold_sexprs() -> list[tuple[str, str, dict[str, str]]]:
    """Every gold S-expression of GrailQA, WebQSP and CWQ as (source, sexpr, {entity id: label})."""
    out: list[tuple[str, str, dict[str, str]]] = []
    for line in shared_path("grailqa", "grailqa_dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        labels = {
            n["id"]: n.get("friendly_name", "")
            for n in r.get("graph_query", {}).get("nodes", [])
            if n.get("node_type") == "entity"
        }
        out.append(("grailqa", r["s_expression"], labels))
    for r in json.loads(shared_path("webqsp", "WebQSP_train_subset_2897_sexpr.json").read_text()):
        if r["SExpr"] != "null":
            out.append(("webqsp", r["SExpr"], dict(r.get("mid2name") or {})))
    for r in json.loads(shared_path("cwq", "cwq_test_part.json").read_text()):
        if r.get("SExpr") and r["SExpr"] != "null":
            out.append(("cwq", r["SExpr"], dict(r.get("topic_entity") or {})))
    return out


@pytest.fixture(scope="session")
def gold_sexprs() -> list[tuple[str, str, dict[str, str]]]:
    """Session-wide list of (source, gold S-expression, labels)."""
    return load_gold_sexprs()


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small synthetic world (seed 0), built once per session (decomposition tests)."""
    out = tmp_path_factory.mktemp("decompose_world")
    build_world(out, seed=0, size="small")
    return out


@pytest.fixture(scope="session")
def world_test(world_dir: Path) -> list[KBQAExample]:
    """The synthetic world's test examples."""
    return list(read_jsonl(world_dir / "test.jsonl"))
