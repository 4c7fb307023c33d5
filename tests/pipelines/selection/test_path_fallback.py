"""PathFallback: the KB's relation paths ranked by the real all-MiniLM-L6-v2, as fallback and as override."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import SExprError, UserInputError
from kbqa_lit.kb.index.paths import RelationPath
from kbqa_lit.kb.lf.chains import Hop, chain_from_sexpr
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector
from kbqa_lit.pipelines.selection.path_fallback import (
    PathFallback,
    path_words,
    question_without_mentions,
)
from tests.helpers.music_kb import build_music_store

ALBUM = {"m.a1": "Paper Fever"}
BORN = "In which city was the performer of Paper Fever born?"


@pytest.fixture(scope="module")
def selector(tmp_path_factory: pytest.TempPathFactory):
    with open_store(build_music_store(tmp_path_factory.mktemp("fallback"))) as kb:
        with ExecutionGuidedSelector(kb) as sel:
            yield sel


@pytest.fixture(scope="module")
def paths() -> PathFallback:
    return PathFallback(max_candidates=3)


def _select(paths: PathFallback, selector, beams, question=BORN, linked=ALBUM, text=None):
    return paths.select(
        selector, beams, question=question, linked=linked, semantics="exclude-topic", label_to_ids={}, answer_text=text
    )


def test_words_mentions_and_chains() -> None:
    path = RelationPath("m.a1", (Hop("music.album.artist", True), Hop("people.person.place_of_birth", True)), "x")
    assert path_words(path) == "album artist person place of birth"
    assert question_without_mentions(BORN, ["paper fever"]) == "In which city was the performer of born?"
    # the override reads a chosen beam's chain with the shared kb.chains.chain_from_sexpr
    assert chain_from_sexpr("(JOIN (R people.person.place_of_birth) (JOIN music.album.artist m.a1))") == (
        "m.a1",
        (Hop("music.album.artist", False), Hop("people.person.place_of_birth", True)),
    )
    for not_chain in ("(COUNT (JOIN (R r.s.t) m.a1))", "(AND film.actor (JOIN (R r.s.t) m.a1))"):
        assert chain_from_sexpr(not_chain) is None, not_chain
    for not_an_expression in ("(JOIN (R r.s.t)", "m.a1"):
        with pytest.raises(SExprError):
            chain_from_sexpr(not_an_expression)
    with pytest.raises(UserInputError, match="max_hops"):
        PathFallback(max_hops=3)
    with pytest.raises(UserInputError, match="max_candidates"):
        PathFallback(max_candidates=0)
    with pytest.raises(UserInputError, match="override_margin"):
        PathFallback(override_margin=-0.1)


def test_the_question_picks_its_path_among_the_kbs(paths: PathFallback, selector) -> None:
    ranked, scores, errors = paths.rank(selector.kb, BORN, ALBUM)
    assert ranked[0] == "(JOIN (R people.person.place_of_birth) (JOIN (R music.album.artist) m.a1))", ranked
    assert scores == sorted(scores, reverse=True) and len(ranked) == 3 and not errors
    country = {"m.k1": "Zedland"}
    ranked, _, _ = paths.rank(selector.kb, "What is the official language of Zedland?", country)
    assert ranked[0] == "(JOIN (R location.country.official_language) m.k1)"
    counted, _, _ = paths.rank(selector.kb, "How many languages are official in Zedland?", country, ["( count x )"])
    assert all(s.startswith("(COUNT ") for s in counted)
    assert paths.rank(selector.kb, BORN, {}) == ([], [], [])


def test_no_beam_executes_then_the_best_path_answers(paths: PathFallback, selector) -> None:
    empty = ["(JOIN (R people.person.place_of_birth) m.a1)"]  # an album has no birthplace
    sel = _select(paths, selector, empty)
    assert sel.path_fallback and sel.executable and not sel.fallback and not sel.path_override
    assert sel.answers == ["m.c1"] and sel.chosen_beam is None and sel.beams_tried == 1
    assert sel.chosen_sexpr == "(JOIN (R people.person.place_of_birth) (JOIN (R music.album.artist) m.a1))"
    assert sel.errors[0].startswith("beam 0: ")
    # nothing linked: no path, so the answer text (as without the fallback)
    sel = _select(paths, selector, empty, linked={}, text="Rome")
    assert sel.fallback and not sel.path_fallback and not sel.executable


def test_an_executable_chain_is_overridden_only_beyond_the_margin(selector) -> None:
    nationality = ["(JOIN (R people.person.nationality) (JOIN (R music.album.artist) m.a1))"]
    kept = _select(PathFallback(), selector, nationality)  # no margin: an executable beam stands
    assert kept.answers == ["m.k1"] and kept.chosen_beam == 0 and not kept.path_override
    wide = _select(PathFallback(override_margin=1.5), selector, nationality)
    assert wide.answers == ["m.k1"] and not wide.path_override
    narrow = _select(PathFallback(override_margin=0.05), selector, nationality)
    assert narrow.path_override and not narrow.path_fallback and narrow.answers == ["m.c1"]
    assert narrow.chosen_beam is None and "overrides beam 0" in narrow.errors[-1]
    # a beam that is not a plain chain is never overridden
    counted = ["(COUNT (JOIN (R music.album.artist) m.a1))"]
    assert not _select(PathFallback(override_margin=0.0), selector, counted).path_override
