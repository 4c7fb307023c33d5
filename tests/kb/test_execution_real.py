"""Gold S-expressions executed through the store reproduce the gold answers on the real data."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from kbqa_lit.data.formats import read_metaqa, read_pathquestion
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.execute import run_sexpr
from kbqa_lit.kb.store.loaders import build_store
from tests.helpers.shared_data import SHARED_DATA, shared_path

CHECKS = SHARED_DATA.parent / "checks"


def _ids(values) -> set[str]:
    return {str(v) for v in values}


def test_grailqa_star_questions_execute_to_their_gold_answers(tmp_path):
    kb = shared_path("grailqa", "grailqa_dev_star_minikb_triples.tsv")
    if not (CHECKS / "grail_star_in.jsonl").is_file():
        pytest.skip("../shared/checks is not available")
    build_store(tmp_path / "grail", [kb], "tsv")
    store = OxigraphStore(tmp_path / "grail", workers=2)
    questions = [json.loads(line) for line in (CHECKS / "grail_star_in.jsonl").open()]
    gold = {str(g["qid"]): set(g["gold"]) for g in map(json.loads, (CHECKS / "grail_star_gold.jsonl").open())}
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda q: run_sexpr(store, q["s_expression"])[1], questions))
    wrong = [
        (q["qid"], r.error or sorted(r.answers)[:3])
        for q, r in zip(questions, results, strict=True)
        if not r.ok or _ids(r.answers) != gold[str(q["qid"])]
    ]
    assert len(questions) == 2095
    assert wrong == []


def test_grailqa_function_free_questions_agree_with_a_reference_evaluator(tmp_path):
    """Every function-free GrailQA dev question: store answers == a set-based evaluation over the TSV."""
    kb_path = shared_path("grailqa", "grailqa_dev_star_minikb_triples.tsv")
    fwd: dict[tuple[str, str], set[str]] = {}
    bwd: dict[tuple[str, str], set[str]] = {}
    types: dict[str, set[str]] = {}
    for line in kb_path.open(encoding="utf-8"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3 or not parts[2].startswith(("m.", "g.")) and parts[1] != "type.object.type":
            continue
        s, r, o = parts
        if r == "type.object.type":
            types.setdefault(o, set()).add(s)
        fwd.setdefault((s, r), set()).add(o)
        bwd.setdefault((o, r), set()).add(s)

    from kbqa_lit.kb.lf.sexpr import Atom, Call, parse_sexpr

    def ev(node, consts):
        if isinstance(node, Atom):
            if node.kind == "entity":
                consts.add(node.text)
                return {node.text}
            return set(types.get(node.text, set()))
        if node.op == "AND":
            out = ev(node.args[0], consts)
            for a in node.args[1:]:
                out &= ev(a, consts)
            return out
        rel, arg = node.args
        xs = ev(arg, consts)
        if isinstance(rel, Call):
            return set().union(*(fwd.get((x, rel.args[0].text), set()) for x in xs))
        return set().union(*(bwd.get((x, rel.text), set()) for x in xs))

    build_store(tmp_path / "grail", [kb_path], "tsv")
    store = OxigraphStore(tmp_path / "grail", workers=2)
    checked = 0
    for line in shared_path("grailqa", "grailqa_dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        text = r["s_expression"]
        if r["function"] != "none" or "^^" in text or '"' in text:
            continue
        consts: set[str] = set()
        expected = ev(parse_sexpr(text), consts) - consts
        _, result = run_sexpr(store, text)
        assert result.ok, (r["qid"], result.error)
        assert _ids(result.answers) == expected, r["qid"]
        checked += 1
    assert checked > 2500


def test_pathquestion_gold_paths_execute_to_their_answers(tmp_path):
    for questions, kb in (("PQ-2H.txt", "2H-kb.txt"), ("PQ-3H.txt", "3H-kb.txt")):
        build_store(tmp_path / kb, [shared_path("pathquestion", kb)], "pathquestion")
        store = OxigraphStore(tmp_path / kb)
        examples = list(read_pathquestion(shared_path("pathquestion", questions)))
        assert examples and all(ex.semantics == "plain" for ex in examples)
        wrong = []
        for ex in examples:
            _, result = run_sexpr(store, ex.s_expression, semantics=ex.semantics)
            if _ids(result.answers) != {a.id for a in ex.answers}:
                wrong.append((ex.qid, result.error))
        assert wrong == [], wrong[:3]


@pytest.mark.slow
def test_metaqa_exact_dev_questions_execute_to_their_answers(tmp_path):
    build_store(tmp_path / "mq", [shared_path("metaqa", "kb.txt")], "metaqa")
    store = OxigraphStore(tmp_path / "mq", workers=2)
    examples = [ex for ex in read_metaqa(shared_path("metaqa"), split="dev") if ex.meta.get("kbcheck") == "exact"]
    assert len(examples) == 9483 + 12467 + 8485
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda ex: run_sexpr(store, ex.s_expression, semantics="simple-path")[1], examples))
    wrong = [ex.qid for ex, r in zip(examples, results, strict=True) if _ids(r.answers) != {a.id for a in ex.answers}]
    assert wrong == []
