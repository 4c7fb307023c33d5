"""MetaQA: the derived S-expressions, walked over kb.txt with simple paths, give the gold answers.

A pure-Python check (dict-of-sets over kb.txt, ids minted with kbqa_lit.kb.lf.iri) that needs no
store: for every `exact` dev line, the relation path read back from the S-expression reproduces
exactly the gold answer ids, with no node repeated along the path (topic included).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from kbqa_lit.data.formats import read_metaqa
from kbqa_lit.data.formats.metaqa import qtype_to_sexpr
from kbqa_lit.kb.lf.iri import entity_id_for_name, relation_id_for

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
METAQA = DATA / "metaqa"
needs_metaqa = pytest.mark.skipif(not (METAQA / "kb.txt").is_file(), reason=f"MetaQA data not found at {METAQA}")

_STEP_RE = re.compile(r"^\(JOIN (\(R (?P<fwd>\S+)\)|(?P<bwd>\S+)) (?P<inner>.+)\)$")


def sexpr_path(sexpr: str) -> tuple[str, list[tuple[str, bool]]]:
    """Read `(JOIN (R r2) (JOIN r1 m.x))` back into ("m.x", [(r1, False), (r2, True)])."""
    steps: list[tuple[str, bool]] = []
    while sexpr.startswith("("):
        m = _STEP_RE.match(sexpr)
        assert m, sexpr
        steps.append((m["fwd"], True) if m["fwd"] else (m["bwd"], False))
        sexpr = m["inner"]
    return sexpr, steps[::-1]


@lru_cache(maxsize=1)
def kb_graph() -> dict[tuple[str, bool], dict[str, set[str]]]:
    """(relation id, forward) -> node id -> neighbour ids, over minted ids."""
    ids: dict[str, str] = {}

    def mint(name: str) -> str:
        if name not in ids:
            ids[name] = entity_id_for_name(name, "metaqa")
        return ids[name]

    graph: dict[tuple[str, bool], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    with (METAQA / "kb.txt").open(encoding="utf-8") as fh:
        for line in fh:
            head, rel, tail = line.rstrip("\n").split("|")
            rid, h, t = relation_id_for(rel, "metaqa"), mint(head), mint(tail)
            graph[(rid, True)][h].add(t)
            graph[(rid, False)][t].add(h)
    return graph


def simple_path_answers(topic: str, steps: list[tuple[str, bool]]) -> set[str]:
    """End nodes of the paths topic -r1-> n1 ... -rk-> nk with no node repeated."""
    graph = kb_graph()
    answers: set[str] = set()
    frontier: list[tuple[str, frozenset[str]]] = [(topic, frozenset([topic]))]
    for i, step in enumerate(steps):
        nbrs = graph.get(step, {})
        last = i == len(steps) - 1
        nxt: list[tuple[str, frozenset[str]]] = []
        for node, seen in frontier:
            reach = nbrs.get(node, set()) - seen
            if last:
                answers |= reach
            else:
                nxt.extend((n, seen | {n}) for n in reach)
        frontier = nxt
    return answers


def test_qtype_to_sexpr_examples():
    d = entity_id_for_name("Joel Zwick", "metaqa")
    assert qtype_to_sexpr("director_to_movie_to_language", d) == (
        f"(JOIN (R metaqa.movie.in_language) (JOIN metaqa.movie.directed_by {d}))"
    )
    assert qtype_to_sexpr("tag_to_movie", "m.x") == "(JOIN metaqa.movie.has_tags m.x)"
    assert qtype_to_sexpr("movie_to_tags", "m.x") == "(JOIN (R metaqa.movie.has_tags) m.x)"
    assert sexpr_path(qtype_to_sexpr("movie_to_actor_to_movie", "m.x")) == (
        "m.x",
        [("metaqa.movie.starred_actors", True), ("metaqa.movie.starred_actors", False)],
    )
    with pytest.raises(ValueError):
        qtype_to_sexpr("actor_to_director", "m.x")
    with pytest.raises(ValueError):
        qtype_to_sexpr("movie_to_budget", "m.x")


def test_qtype_tokens_match_kb_relations():
    """Every relation a qtype can name exists in kb.txt (and nothing in kb.txt is unreachable)."""
    from kbqa_lit.data.formats.metaqa import QTYPE_RELATIONS

    if not (METAQA / "kb.txt").is_file():
        pytest.skip(f"MetaQA data not found at {METAQA}")
    with (METAQA / "kb.txt").open(encoding="utf-8") as fh:
        kb_rels = {line.split("|")[1] for line in fh}
    assert set(QTYPE_RELATIONS.values()) == kb_rels


@needs_metaqa
def test_exact_lines_follow_simple_paths_over_kb():
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    bad = []
    for ex in read_metaqa(METAQA, split="dev"):
        if ex.meta["kbcheck"] != "exact":
            continue
        topic, steps = sexpr_path(ex.s_expression)
        assert topic in ex.topic_entities
        assert len(steps) == ex.meta["hops"]
        got = simple_path_answers(topic, steps)
        c = counts[ex.meta["hops"]]
        c[0] += 1
        if got == {a.id for a in ex.answers}:
            c[1] += 1
        elif len(bad) < 5:
            bad.append((ex.qid, ex.question, ex.s_expression))
    assert dict(counts) == {1: [9483, 9483], 2: [12467, 12467], 3: [8485, 8485]}, bad
