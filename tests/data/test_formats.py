"""Dataset readers on the real files in ../shared/data: counts, fields, ids, gold-answer checks."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

import pytest

from kbqa_lit.data.formats import (
    READERS,
    read_cwq,
    read_dataset,
    read_grailqa,
    read_metaqa,
    read_pathquestion,
    read_synthetic,
    read_webqsp,
)
from kbqa_lit.data.schema import SEMANTICS, Answer
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.iri import entity_id_for_name, is_entity_id
from tests.helpers.shared_data import SHARED_CHECKS
from tests.helpers.shared_data import shared_path as data_file

CHECKS = SHARED_CHECKS


def _check_common(examples, dataset: str, semantics: str) -> None:
    assert len({ex.qid for ex in examples}) == len(examples), "qids must be unique"
    for ex in examples:
        assert ex.meta["dataset"] == dataset
        assert ex.meta["semantics"] == semantics and semantics in SEMANTICS
        assert ex.question
        assert all(isinstance(a, Answer) and a.kind in ("entity", "literal") and a.id for a in ex.answers)


def test_readers_registry():
    assert set(READERS) == {"webqsp", "cwq", "grailqa", "metaqa", "pathquestion", "synthetic"}
    with pytest.raises(UserInputError, match="dataset format must be one of"):
        read_dataset("freebase", "x")


@pytest.mark.parametrize("fmt", ["webqsp", "cwq", "grailqa", "metaqa", "pathquestion", "synthetic"])
def test_missing_path_is_a_user_error_at_call_time(fmt, tmp_path):
    with pytest.raises(UserInputError):
        READERS[fmt](tmp_path / "nope")


def test_webqsp_answer_name_variant():
    examples = list(read_webqsp(data_file("webqsp", "WebQSP_test_1639_answer_names.json")))
    _check_common(examples, "webqsp", "exclude-topic")
    assert len(examples) == 1639
    first = examples[0]
    assert first.qid == "WebQTest-1198"
    assert first.topic_entities == {"m.078w2": "Samuel Taylor Coleridge"}
    assert first.answers[0] == Answer(id="Giambattista Vico", name="Giambattista Vico", kind="entity")
    assert all(ex.meta["answers_by_name"] is True for ex in examples)
    assert all(a.id == a.name for ex in examples for a in ex.answers)
    # 58 questions list 77 unnamed (null or "") answers; they are dropped and counted
    assert sum(ex.meta.get("unnamed_answers", 0) for ex in examples) == 77
    assert sum(1 for ex in examples if "unnamed_answers" in ex.meta) == 58
    # 13,633 distinct named answers per question (editions of a book share a name)
    assert sum(len(ex.answers) for ex in examples) == 13633
    assert all(ex.s_expression is None and "parses" not in ex.meta for ex in examples)


def test_webqsp_sexpr_variant():
    examples = list(read_webqsp(data_file("webqsp", "WebQSP_train_subset_2897_sexpr.json")))
    _check_common(examples, "webqsp", "exclude-topic")
    assert len(examples) == 2897
    assert sum(ex.s_expression is None for ex in examples) == 118  # "null" in the file
    first = examples[0]
    assert first.qid == "WebQTrn-0"
    assert first.s_expression.startswith("(AND (JOIN people.person.gender m.05zppz)")
    assert first.topic_entities == {"m.06w2sn5": "Justin Bieber"}
    assert first.meta["entity_labels"]["m.05zppz"] == "Male" and first.entity_labels()["m.05zppz"] == "Male"
    assert "Justin Bieber" in first.meta["s_expression_with_names"]
    assert all(ex.answers == [] for ex in examples)


def test_cwq_test_part():
    examples = list(read_cwq(data_file("cwq", "cwq_test_part.json")))
    _check_common(examples, "cwq", "exclude-source")
    assert len(examples) == 1765
    assert sum(ex.s_expression is None for ex in examples) == 55
    assert sum(len(ex.answers) for ex in examples) == 3455
    kinds = Counter(a.kind for ex in examples for a in ex.answers)
    assert kinds == {"entity": 3451, "literal": 4}  # two questions answer "financier", "steel"
    assert all(is_entity_id(a.id) for ex in examples for a in ex.answers if a.kind == "entity")
    first = examples[0]
    assert first.qid == "WebQTrn-60_ea64bd8530c79e21438a71faed039caf"
    assert first.answers == [Answer(id="m.0hzlz", name="South Africa", kind="entity")]
    assert first.meta["compositionality_type"] == "conjunction"
    assert first.topic_entities["m.01_w8_"] == "Die Stem van Suid-Afrika"
    assert "FILTER (?x != ns:m.05zjd)" in first.sparql
    assert Counter(ex.meta["compositionality_type"] for ex in examples)["conjunction"] > 0


def test_grailqa_dev():
    examples = list(read_grailqa(data_file("grailqa", "grailqa_dev.jsonl")))
    _check_common(examples, "grailqa", "distinct-nodes")
    assert len(examples) == 3745
    assert sum(len(ex.answers) for ex in examples) == 29502
    assert Counter(a.kind for ex in examples for a in ex.answers) == {"entity": 29242, "literal": 260}
    assert sum(len(ex.topic_entities) for ex in examples) == 3297
    assert sum(1 for ex in examples if "level" in ex.meta) == 500
    assert sum(1 for ex in examples if ex.sparql) == 500
    assert Counter(ex.meta["function"] for ex in examples)["count"] == 260
    first = examples[0]
    assert first.qid == "3205555003000"
    assert first.topic_entities == {"m.0gvb8gp": "Microsiemens"}
    assert first.answers[0] == Answer(id="m.03nsh", name="Hertz", kind="entity")
    assert first.meta["num_node"] == 3 and first.meta["num_edge"] == 2
    assert first.meta["level"] == "zero-shot" and first.meta["domains"] == ["measurement_unit"]
    assert all("^^" not in a.id for ex in examples for a in ex.answers)


def test_grailqa_star_gold_ids_match():
    """The contract's gold answer ids for the star questions are the reader's answer ids."""
    gold_path = CHECKS / "grail_star_gold.jsonl"
    if not gold_path.is_file():
        pytest.skip(f"contract checks not found: {gold_path}")
    by_qid = {ex.qid: ex for ex in read_grailqa(data_file("grailqa", "grailqa_dev.jsonl"))}
    gold = [json.loads(line) for line in gold_path.open(encoding="utf-8")]
    assert len(gold) == 2095
    assert all({a.id for a in by_qid[str(g["qid"])].answers} == set(map(str, g["gold"])) for g in gold)


def test_metaqa_counts_and_fields():
    root = data_file("metaqa")
    counts = Counter()
    kbcheck = Counter()
    for ex in read_metaqa(root, split="dev"):
        counts[ex.meta["hops"]] += 1
        kbcheck[ex.meta["kbcheck"]] += 1
    assert counts == {1: 9992, 2: 14872, 3: 14274}
    assert kbcheck == {"exact": 30435, "missing": 8171, "extra": 518, "other": 14}


def test_metaqa_example_and_subsets(tmp_path):
    root = data_file("metaqa")
    first = next(read_metaqa(root, split="dev", hops=(2,)))
    assert first.qid == "metaqa-2hop-dev-0"
    director = entity_id_for_name("Joel Zwick", "metaqa")
    assert first.topic_entities == {director: "Joel Zwick"}
    assert first.s_expression == f"(JOIN (R metaqa.movie.in_language) (JOIN metaqa.movie.directed_by {director}))"
    assert first.answers == [Answer(id=entity_id_for_name("Greek", "metaqa"), name="Greek", kind="entity")]
    assert first.meta == {
        "dataset": "metaqa",
        "semantics": "simple-path",
        "split": "dev",
        "hops": 2,
        "qtype": "director_to_movie_to_language",
        "kbcheck": "exact",
    }
    # a single file: qtype and kbcheck found beside it, hops from the N-hop folder
    single = list(read_metaqa(root / "3-hop" / "qa_dev.txt"))
    assert len(single) == 14274
    assert single[1].qid == "metaqa-3hop-dev-1"
    assert single[1].meta["qtype"] == "movie_to_director_to_movie_to_actor"
    with pytest.raises(UserInputError, match="qa_test.txt"):
        read_metaqa(root, split="test")


def test_metaqa_names_match_contract_gold():
    gold_path = CHECKS / "metaqa_dev_exact_gold.jsonl"
    if not gold_path.is_file():
        pytest.skip(f"contract checks not found: {gold_path}")
    gold: dict[str, list[set[str]]] = defaultdict(list)
    for line in gold_path.open(encoding="utf-8"):
        g = json.loads(line)
        gold[g["question"]].append(set(g["gold"]))
    matched = ok = 0
    for ex in read_metaqa(data_file("metaqa"), split="dev"):
        gs = gold.get(ex.question)
        if gs and len(gs) == 1:
            matched += 1
            ok += {a.name for a in ex.answers} == gs[0]
    assert matched >= 0.95 * sum(len(v) for v in gold.values() if len(v) == 1)
    assert ok == matched


@pytest.mark.parametrize(("name", "count", "hops"), [("PQ-2H.txt", 1908, 2), ("PQ-3H.txt", 5198, 3)])
def test_pathquestion_counts_and_kb_paths(name, count, hops):
    path = data_file("pathquestion", name)
    examples = list(read_pathquestion(path))
    _check_common(examples, "pathquestion", "plain")
    assert len(examples) == count
    assert {ex.meta["hops"] for ex in examples} == {hops}
    assert examples[0].qid == f"pq-{path.stem}-0"
    # following the gold relation path over the small KB (plain paths) gives the answers
    kb: dict[tuple[str, str], set[str]] = defaultdict(set)
    for line in data_file("pathquestion", f"{hops}H-kb.txt").open(encoding="utf-8"):
        s, r, o = line.rstrip("\n").split("\t")
        kb[(entity_id_for_name(s, "pathquestion"), f"pathquestion.relation.{r}")].add(
            entity_id_for_name(o, "pathquestion")
        )
    step = re.compile(r"^\(JOIN \(R (\S+)\) (.+)\)$")
    for ex in examples:
        rels, expr = [], ex.s_expression
        while m := step.match(expr):
            rels.append(m[1])
            expr = m[2]
        assert expr in ex.topic_entities and len(rels) == hops
        nodes = {expr}
        for rel in reversed(rels):
            nodes = {o for n in nodes for o in kb[(n, rel)]}
        assert nodes == {a.id for a in ex.answers}, ex.qid


def test_pathquestion_example_and_contract_names():
    ex = next(read_pathquestion(data_file("pathquestion", "PQ-2H.txt")))
    subj = entity_id_for_name("frederica_of_mecklenburg-strelitz", "pathquestion")
    assert ex.s_expression == (
        "(JOIN (R pathquestion.relation.nationality) (JOIN (R pathquestion.relation.spouse) " + subj + "))"
    )
    assert ex.topic_entities == {subj: "frederica of mecklenburg-strelitz"}
    assert ex.answers == [
        Answer(id=entity_id_for_name("united_kingdom", "pathquestion"), name="united kingdom", kind="entity")
    ]
    gold_path = CHECKS / "pq_gold.jsonl"
    if not gold_path.is_file():
        pytest.skip(f"contract checks not found: {gold_path}")

    def key(q: str) -> str:
        return re.sub(r"[\[\]\s_]+", " ", q).strip().lower()

    gold: dict[str, list[set[str]]] = defaultdict(list)
    for line in gold_path.open(encoding="utf-8"):
        g = json.loads(line)
        gold[key(g["question"])].append({x.strip().lower().replace("_", " ") for x in g["gold"]})
    matched = ok = 0
    for name in ("PQ-2H.txt", "PQ-3H.txt"):
        for e in read_pathquestion(data_file("pathquestion", name)):
            gs = gold.get(key(e.question))
            if gs and len(gs) == 1:
                matched += 1
                ok += {a.name.lower().replace("_", " ") for a in e.answers} == gs[0]
    assert matched > 0.95 * sum(len(v) for v in gold.values() if len(v) == 1)
    assert ok == matched


def test_synthetic_reader_file_and_dir(tmp_path):
    rows = [
        {"qid": "s1", "question": "q?", "answers": [{"id": "m.a", "name": "A", "kind": "entity"}]},
        {"qid": "s2", "question": "r?", "answers": ["m.b"], "meta": {"semantics": "plain", "dataset": "x"}},
    ]
    (tmp_path / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    by_file = list(read_synthetic(tmp_path / "test.jsonl"))
    by_dir = list(read_synthetic(tmp_path, split="test"))
    assert [e.to_dict() for e in by_file] == [e.to_dict() for e in by_dir]
    assert by_file[0].meta == {"dataset": "synthetic", "semantics": "exclude-topic"}
    assert by_file[1].meta == {"dataset": "x", "semantics": "plain"}
    with pytest.raises(UserInputError, match="dev.jsonl"):
        read_synthetic(tmp_path)
