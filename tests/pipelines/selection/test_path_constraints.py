"""The path_constraints extension: class-restricted paths and two-entity joins in the KB-path search (real MiniLM)."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.selection.chain import build_extensions
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector
from kbqa_lit.pipelines.selection.forms import resolve_form
from kbqa_lit.pipelines.selection.path_constraints import Candidate, class_counts, join_candidates, restricted
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from tests.helpers.roster_kb import build_roster_store

R = "sports.sports_team_roster"
BORN = "(JOIN people.person.place_of_birth m.c1)"
JOINED = f"(JOIN (R {R}.from) (AND (JOIN {R}.player m.p1) (JOIN {R}.team m.t1)))"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    with open_store(build_roster_store(tmp_path_factory.mktemp("constraints"))) as store:
        yield store


def test_class_counts_and_the_classes_that_restrict(kb) -> None:
    total, counts = class_counts(kb, BORN)
    assert total == 3 and counts == {"people.person": 3, "sports.pro_athlete": 2, "film.actor": 1}
    extra, errors = restricted(kb, [Candidate(BORN, ("people.person.place_of_birth",))])
    # a class every answer has restricts nothing; the others each make a candidate, their words first
    assert [c.sexpr for c in extra] == [f"(AND film.actor {BORN})", f"(AND sports.pro_athlete {BORN})"]
    assert extra[0].schema == ("film.actor", "people.person.place_of_birth") and not errors
    assert class_counts(kb, f"(JOIN (R {R}.from) (JOIN {R}.player m.p1))") == (0, {})  # literal answers


def test_join_candidates_pair_the_linked_entities(kb) -> None:
    cands, errors = join_candidates(kb, ["m.p1", "m.t1", "m.c1"])
    sexprs = {c.sexpr for c in cands}
    assert JOINED in sexprs and not errors
    assert all(c.entities == 2 for c in cands)
    assert join_candidates(kb, ["m.p1"]) == ([], [])  # one entity: nothing to join


def test_the_search_ranks_a_class_restriction(kb) -> None:
    question, linked = "Name the actors born in Rome.", {"m.c1": "Rome"}
    plain, _, _ = PathFallback(max_candidates=3).rank(kb, question, linked)
    assert not any(s.startswith("(AND") for s in plain)  # before: only chains, the best answers all three people
    ranked, scores, errors = PathFallback(max_candidates=3, constraints=True).rank(kb, question, linked)
    assert ranked[0] == f"(AND film.actor {BORN})" and scores[0] >= scores[-1] and not errors


def test_the_search_puts_forms_of_both_entities_first(kb) -> None:
    question, linked = "When did Ida Crane join the Herons?", {"m.p1": "Ida Crane", "m.t1": "Herons"}
    plain, _, _ = PathFallback(max_candidates=3).rank(kb, question, linked)
    assert JOINED not in plain  # before: chains from one of them (every roster of Ida, or of the Herons)
    ranked, _, _ = PathFallback(max_candidates=3, constraints=True).rank(kb, question, linked)
    assert ranked[0] == JOINED
    with ExecutionGuidedSelector(kb) as selector:
        paths, _ = build_extensions(path_fallback=True, answer_type=False, path_constraints=True)
        assert paths is not None and paths.constraints
        sel = paths.select(selector, [], question=question, linked=linked, semantics="exclude-topic", label_to_ids={})
    assert sel.path_fallback and sel.answers == ["2001"]


def test_keqing_extended_switches_it_on_and_every_system_offers_it() -> None:
    assert resolve_form("keqing", "extended").on("path_constraints")
    assert resolve_form("keqing", "extended").tag() == "extended"
    assert not resolve_form("keqing", "paper").on("path_constraints")
    for system in ("coq", "fc", "tfs"):  # offered, not in their extended preset (not measured to help them)
        assert not resolve_form(system, "extended").on("path_constraints")
        listed = resolve_form(system, None, ["path_fallback", "path_constraints"])
        assert listed.tag() == "paper+path_fallback+path_constraints"
    with pytest.raises(UserInputError, match="does not offer"):
        resolve_form("keqing", None, ["fill_composition"])
