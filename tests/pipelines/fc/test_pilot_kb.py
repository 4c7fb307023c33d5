"""FC-KBQA's pilot study with the paper's candidates: the 1-hop forms a real (Oxigraph) KB has around the entity."""

from __future__ import annotations

import pytest

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.iri import NAME_RELATION, TYPE_RELATION, iri
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.fc.pilot import coarse_training_groups, pilot_questions, top1_accuracy
from kbqa_lit.pipelines.fc.pilot_kb import answer_equivalent, kb_candidate_forms, kb_forms

LANG = "location.country.official_language"
NAT = "people.person.nationality"
TRIPLES = [
    ("m.e1", TYPE_RELATION, "location.country"),
    ("m.e1", LANG, "m.l1"),
    ("m.l1", TYPE_RELATION, "language.human_language"),
    ("m.p1", NAT, "m.e1"),
    ("m.p1", TYPE_RELATION, "people.person"),
    ("m.p1", TYPE_RELATION, "music.artist"),
    ("m.p2", NAT, "m.e1"),
    ("m.p2", TYPE_RELATION, "people.person"),
    ("m.f1", "film.film.directed_by", "m.p1"),  # not at m.e1: never a candidate of its questions
]
GOLD = f"(JOIN (R {LANG}) m.e1)"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """A small Oxigraph store: a country, its language, two citizens (one also a music artist), a film."""
    root = tmp_path_factory.mktemp("pilot_kb")
    lines = [f"<{iri(s)}> <{iri(p)}> <{iri(o)}> ." for s, p, o in TRIPLES]
    lines += [f'<{iri(e)}> <{iri(NAME_RELATION)}> "{e}" .' for e in ("m.e1", "m.l1", "m.p1", "m.p2", "m.f1")]
    (root / "kb.nt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_store(root / "kb", [root / "kb.nt"], "nt")
    return open_store(root / "kb")


def test_the_candidates_are_the_kbs_forms_at_the_entity_in_both_directions_with_answer_classes(store) -> None:
    assert kb_forms(store, "m.e1") == sorted(
        [
            GOLD,
            f"(AND language.human_language {GOLD})",
            f"(JOIN {NAT} m.e1)",
            f"(AND people.person (JOIN {NAT} m.e1))",
            f"(AND music.artist (JOIN {NAT} m.e1))",
        ]
    )
    forms = kb_candidate_forms(store, GOLD, n=100, key="q1")
    # not the gold's structure with other components swapped in: other directions, classes the gold lacks,
    # and no relation the entity does not have (film.film.directed_by)
    assert set(forms) == set(kb_forms(store, "m.e1"))
    assert not any("directed_by" in f for f in forms)


def test_n_keeps_the_gold_and_a_counted_gold_gets_counted_candidates(store) -> None:
    forms = kb_candidate_forms(store, GOLD, n=2, key="q1")
    assert len(forms) == 2 and GOLD in forms
    counted = kb_candidate_forms(store, f"(COUNT (JOIN {NAT} m.e1))", key="q2")
    assert len(counted) == 5 and all(f.startswith("(COUNT ") for f in counted)


def test_a_gold_the_kb_lacks_is_still_a_candidate(store) -> None:
    gold = "(JOIN (R film.film.directed_by) m.e1)"
    forms = kb_candidate_forms(store, gold, key="q3")
    assert gold in forms and len(forms) == 6
    assert answer_equivalent(store, gold, forms) == {gold}


def test_candidates_with_the_golds_answers_count_as_right(store) -> None:
    forms = kb_candidate_forms(store, f"(JOIN {NAT} m.e1)", key="q4")
    assert answer_equivalent(store, f"(JOIN {NAT} m.e1)", forms) == {
        f"(JOIN {NAT} m.e1)",
        f"(AND people.person (JOIN {NAT} m.e1))",
    }  # (AND music.artist ...) answers m.p1 only
    counted = kb_candidate_forms(store, f"(COUNT (JOIN {NAT} m.e1))", key="q5")
    assert answer_equivalent(store, f"(COUNT (JOIN {NAT} m.e1))", counted) == {
        f"(COUNT (JOIN {NAT} m.e1))",
        f"(COUNT (AND people.person (JOIN {NAT} m.e1)))",
    }


def test_pilot_questions_from_the_kb_score_answer_equivalent_forms_right_and_skip_two_entity_golds(store) -> None:
    examples = [
        KBQAExample(qid="a", question="citizens of e1?", s_expression=f"(JOIN {NAT} m.e1)"),
        KBQAExample(qid="b", question="two entities", s_expression=f"(AND (JOIN {NAT} m.e1) (JOIN {NAT} m.e2))"),
    ]
    (q,) = pilot_questions(examples, [], [], store=store)
    assert q.qid == "a" and len(q.candidates) == 5 and len(q.correct) == 2
    prefer = f"(AND people.person (JOIN {NAT} m.e1))"
    assert top1_accuracy([q], lambda q: [float(c == prefer) for c in q.candidates])["all"] == 1.0
    wrong = f"(AND music.artist (JOIN {NAT} m.e1))"
    assert top1_accuracy([q], lambda q: [float(c == wrong) for c in q.candidates])["all"] == 0.0
    # the coarse ranker's negatives never include a right form
    ((_, texts),) = coarse_training_groups([q], negatives=10)
    assert len(texts) == 1 + 3


def test_a_gold_with_two_relations_is_refused(store) -> None:
    with pytest.raises(UserInputError, match="1-hop gold"):
        kb_candidate_forms(store, f"(JOIN (R {LANG}) (JOIN {NAT} m.p1))")
