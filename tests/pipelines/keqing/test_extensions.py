"""Keqing's whole-question candidates: the JOIN chain of a linear decomposition's kept chains."""

from __future__ import annotations

from kbqa_lit.data.keqing.decomposition import SubQuestion
from kbqa_lit.kb.lf.chains import Hop
from kbqa_lit.pipelines.keqing.execution import StepLog
from kbqa_lit.pipelines.keqing.extensions import chain_candidates

DIRECTED, BORN = Hop("film.film.directed_by", True), Hop("people.person.place_of_birth", True)


def _step(qid: int, seeds: tuple[str, ...], chains: list, entity_seeds: list[str]) -> StepLog:
    dep = (-1,) if qid == 0 else (qid - 1,)
    return StepLog(SubQuestion(f"q{qid} [mask]", qid, dep, seeds), seeds=entity_seeds, chains=chains)


def test_a_linear_decomposition_becomes_join_chains_per_seed_and_chain() -> None:
    first = _step(0, ("Heat",), [(DIRECTED,)], ["m.heat", "m.heat2"])
    second = _step(1, ("<ANSWER>-0",), [(BORN,), (Hop("people.person.nationality", True),)], ["m.mann"])
    out = chain_candidates([first, second])
    assert out[0] == "(JOIN (R people.person.place_of_birth) (JOIN (R film.film.directed_by) m.heat))"
    assert out[1] == "(JOIN (R people.person.place_of_birth) (JOIN (R film.film.directed_by) m.heat2))"
    assert len(out) == 4 and "(JOIN (R people.person.nationality) (JOIN (R film.film.directed_by) m.heat))" in out
    assert chain_candidates([first, second], limit=1) == out[:1]


def test_a_branching_or_unseeded_decomposition_has_no_candidate() -> None:
    first = _step(0, ("Heat",), [(DIRECTED,)], ["m.heat"])
    other_entity = _step(1, ("Ronin",), [(BORN,)], ["m.ronin"])  # a second entity: not one chain
    assert chain_candidates([first, other_entity]) == []
    assert chain_candidates([]) == []
    assert chain_candidates([_step(0, ("Heat",), [], ["m.heat"])]) == []  # no chain kept
