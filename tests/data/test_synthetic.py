"""The synthetic world: determinism, gold answers on the store, coverage, splits, decompositions."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.data.synthetic import SIZES, build_world
from kbqa_lit.data.synthetic.catalog import ALL_TEMPLATES
from kbqa_lit.data.synthetic.splits import TrainCoverage, generalization_level
from kbqa_lit.data.synthetic.templates import FUNCTIONS
from kbqa_lit.data.synthetic.world_schema import CLASS_BY_ID, RELATION_BY_ID
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.iri import NS, XSD, is_entity_id
from kbqa_lit.kb.lf.sexpr import parse_sexpr, schema_items
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.execute import run_sexpr
from kbqa_lit.kb.store.loaders import build_store

FILES = ("kb.nt", "schema.json", "train.jsonl", "dev.jsonl", "test.jsonl")
SPLITS = ("train", "dev", "test")
_NT = re.compile(r'^<([^>]*)> <([^>]*)> (<[^>]*>|"(?:[^"\\]|\\.)*"(?:@en|\^\^<[^>]*>)) \.$')


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("synth") / "seed0"
    return out, build_world(out, seed=0, size="small")


@pytest.fixture(scope="module")
def examples(world: tuple[Path, dict]) -> dict[str, list[KBQAExample]]:
    out, _ = world
    return {split: list(read_jsonl(out / f"{split}.jsonl")) for split in SPLITS}


@pytest.fixture(scope="module")
def triples(world: tuple[Path, dict]) -> list[tuple[str, str, str]]:
    rows = []
    for line in (world[0] / "kb.nt").read_text(encoding="utf-8").splitlines():
        m = _NT.match(line)
        assert m, f"not an N-Triples line: {line}"
        rows.append((m.group(1), m.group(2), m.group(3)))
    return rows


def test_summary_and_files(world: tuple[Path, dict], examples: dict[str, list[KBQAExample]]) -> None:
    out, summary = world
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert summary["out"] == str(out) and summary["seed"] == 0 and summary["size"] == "small"
    assert summary["triples"] == len((out / "kb.nt").read_text().splitlines())
    assert summary["entities"] > 500 and summary["cvt_nodes"] > 200
    spec = SIZES["small"]
    assert summary["questions"] == {
        "train": spec.train,
        "dev": spec.dev,
        "test": sum((spec.test_iid, spec.test_compositional, spec.test_zero_shot)),
    }
    assert {k: len(v) for k, v in examples.items()} == summary["questions"]
    assert summary["seconds"] < 30


def test_same_seed_gives_identical_files_and_other_seed_differs(world: tuple[Path, dict], tmp_path: Path) -> None:
    out, _ = world
    build_world(tmp_path / "again", seed=0, size="small")
    for name in FILES:
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    build_world(tmp_path / "other", seed=1, size="small")
    for name in ("kb.nt", "train.jsonl", "test.jsonl"):
        assert (out / name).read_bytes() != (tmp_path / "other" / name).read_bytes(), name
    # rebuilding into the same folder overwrites it with the same bytes and leaves nothing else
    build_world(tmp_path / "again", seed=0, size="small")
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == sorted(FILES)


def test_every_gold_sexpr_executes_to_its_answers(
    world: tuple[Path, dict], examples: dict[str, list[KBQAExample]], tmp_path: Path
) -> None:
    build_store(tmp_path / "store", [world[0] / "kb.nt"], "nt")
    store = OxigraphStore(tmp_path / "store", isolation="thread")
    try:
        for split, rows in examples.items():
            for ex in rows:
                assert ex.s_expression is not None
                parse_sexpr(ex.s_expression)
                _, result = run_sexpr(store, ex.s_expression, semantics=ex.semantics)
                assert result.ok, (ex.qid, result.error)
                assert sorted(result.answers) == sorted(a.id for a in ex.answers), (
                    split,
                    ex.qid,
                    ex.s_expression,
                )
    finally:
        store.close()


def test_examples_are_well_formed(examples: dict[str, list[KBQAExample]], triples: list) -> None:
    names: dict[str, str] = {}
    for s, p, o in triples:
        if p == NS + "type.object.name":
            names[s[len(NS) :]] = json.loads(o[: o.rindex('"') + 1])
    qids = set()
    for split, rows in examples.items():
        for ex in rows:
            assert ex.qid not in qids
            qids.add(ex.qid)
            assert ex.question[0].isupper() and ex.question[-1] in "?."
            assert 1 <= len(ex.answers) <= 20
            for a in ex.answers:
                if a.kind == "entity":
                    assert is_entity_id(a.id) and names[a.id] == a.name
                else:
                    assert a.id == a.name and a.id
            assert ex.topic_entities and all(names[e] == n for e, n in ex.topic_entities.items())
            assert set(schema_items(ex.s_expression).entities) == set(ex.topic_entities)
            meta = ex.meta
            assert meta["dataset"] == "synthetic" and meta["semantics"] == "exclude-topic"
            assert meta["split"] == split and meta["function"] in FUNCTIONS and meta["hops"] in (1, 2, 3)
            assert ("generalization" in meta) == (split == "test")
    assert len({ex.s_expression for rows in examples.values() for ex in rows}) == len(qids)


def test_coverage_of_functions_hops_and_literals(examples: dict[str, list[KBQAExample]]) -> None:
    rows = [ex for split in SPLITS for ex in examples[split]]
    train = examples["train"]
    assert {ex.meta["function"] for ex in train} == set(FUNCTIONS)
    assert {ex.meta["hops"] for ex in train} == {1, 2, 3}
    assert {ex.meta["template"] for ex in rows} == {t.id for t in ALL_TEMPLATES}
    sexprs = " ".join(ex.s_expression or "" for ex in train)
    for needle in (
        "(COUNT ",
        "(ARGMAX ",
        "(ARGMIN ",
        "(gt ",
        "(ge ",
        "(lt ",
        "(TC ",
        " NOW)",
        "(AND film.actor ",
    ):
        assert needle in sexprs, needle
    for dtype in ("gYear", "date", "float", "integer"):
        assert f"^^{XSD}{dtype}" in sexprs, dtype
    cvt_rels = {r.id for r in RELATION_BY_ID.values() if CLASS_BY_ID[r.domain].cvt}
    used = {rel for ex in train for rel in schema_items(ex.s_expression).relations}
    assert {r.split(".")[1] for r in used & cvt_rels} == {"performance", "sports_team_roster", "education"}
    kinds = {a.kind for ex in rows for a in ex.answers}
    assert kinds == {"entity", "literal"}
    two_topics = [ex for ex in train if len(ex.topic_entities) == 2]
    assert len(two_topics) >= 20


def test_kb_ids_names_cvts_literals_and_ambiguity(triples: list) -> None:
    types: dict[str, set[str]] = defaultdict(set)
    names: dict[str, str] = {}
    aliases = 0
    datatypes = set()
    for s, p, o in triples:
        assert s.startswith(NS) and p.startswith(NS)
        assert is_entity_id(s[len(NS) :]), s
        rel = p[len(NS) :]
        if rel == "type.object.type":
            types[s].add(o[1 + len(NS) : -1])
        elif rel == "type.object.name":
            assert o.endswith("@en")
            names[s] = json.loads(o[:-3])
        elif rel == "common.topic.alias":
            aliases += 1
        else:
            assert rel in RELATION_BY_ID, rel
            if "^^" in o:
                datatypes.add(o.rsplit("#", 1)[1].rstrip(">"))
    assert datatypes == {"gYear", "date", "float", "integer"}
    assert aliases > 50
    cvts = [e for e, ts in types.items() if any(CLASS_BY_ID[t].cvt for t in ts)]
    assert len(cvts) > 200 and not any(e in names for e in cvts)
    assert all(e in names for e, ts in types.items() if not any(CLASS_BY_ID[t].cvt for t in ts))
    by_name: dict[str, list[str]] = defaultdict(list)
    for e, n in names.items():
        by_name[n].append(e)
    shared = [es for es in by_name.values() if len(es) > 1]
    assert any(all("people.person" in types[e] for e in es) for es in shared), "no namesakes"
    assert any({"film.film", "location.city"} <= set().union(*(types[e] for e in es)) for es in shared), (
        "no film sharing a city's name"
    )


def test_schema_json(world: tuple[Path, dict], triples: list) -> None:
    doc = json.loads((world[0] / "schema.json").read_text())
    rels = {r["id"]: r for r in doc["relations"]}
    classes = {c["id"]: c for c in doc["classes"]}
    used = {p[len(NS) :] for _, p, _ in triples} - {
        "type.object.type",
        "type.object.name",
        "common.topic.alias",
    }
    assert used == set(rels)
    assert {c for c, v in classes.items() if v["cvt"]} == {
        "film.performance",
        "sports.sports_team_roster",
        "education.education",
    }
    for r in rels.values():
        assert r["domain"] in classes and (r["range"] in classes or r["literal"])
        assert r["description"] and (r["datatype"] is not None) == r["literal"]
    for a, b in doc["reverse_properties"].items():
        assert doc["reverse_properties"][b] == a and a in rels and b in rels
    assert 4 <= len(doc["domains"]) <= 6


def test_split_generalization_levels(examples: dict[str, list[KBQAExample]]) -> None:
    train = examples["train"]
    train_sets = [frozenset(schema_items(ex.s_expression).relations) for ex in train]
    train_items = set().union(*train_sets) | {c for ex in train for c in schema_items(ex.s_expression).classes}
    coverage = TrainCoverage(train_sets, [frozenset(schema_items(ex.s_expression).classes) for ex in train])
    assert generalization_level(train[:50], ["film.film.directed_by", "not.a.relation"]) == "zero-shot"
    for ex in examples["dev"]:
        items = schema_items(ex.s_expression)
        assert any(frozenset(items.relations) <= s for s in train_sets), ex.qid
    levels = defaultdict(int)
    for ex in examples["test"]:
        items = schema_items(ex.s_expression)
        rels = frozenset(items.relations)
        level = ex.meta["generalization"]
        levels[level] += 1
        assert level == coverage.level(rels, frozenset(items.classes))
        unseen = (rels | set(items.classes)) - train_items
        covered = any(rels <= s for s in train_sets)
        if level == "zero-shot":
            assert unseen
        elif level == "compositional":
            assert not unseen and not covered
        else:
            assert covered
    assert levels["iid"] > 50 and levels["compositional"] >= 10 and levels["zero-shot"] >= 5
    train_templates = {ex.meta["template"] for ex in train}
    assert not train_templates & {ex.meta["template"] for ex in examples["test"] if ex.meta["generalization"] != "iid"}


def test_decompositions(examples: dict[str, list[KBQAExample]]) -> None:
    pattern = re.compile(r"\[SUBQ\] (.+?) \[ANS\] (.+?)(?= \[SUBQ\] |$)")
    for rows in examples.values():
        for ex in rows:
            text = ex.decomposition or ""
            assert text.startswith("[SUBQ] ")
            steps = pattern.findall(text)
            assert len(steps) == text.count("[SUBQ]") == text.count("[ANS]") >= 1
            assert " ".join(f"[SUBQ] {q} [ANS] {a}" for q, a in steps) == text
            assert steps[-1][1] == " | ".join(a.name for a in ex.answers), ex.qid
            if ex.meta["hops"] > 1:
                assert len(steps) >= ex.meta["hops"]
            if ex.meta["function"] != "none":  # the set, then the count / superlative / constraint
                assert len(steps) >= 2


def test_outputs_do_not_reference_shared_data(world: tuple[Path, dict]) -> None:
    for path in world[0].iterdir():
        text = path.read_text(encoding="utf-8")
        assert "/work/shared" not in text and "shared/data" not in text, path


def test_unknown_size_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError):
        build_world(tmp_path / "x", size="huge")
