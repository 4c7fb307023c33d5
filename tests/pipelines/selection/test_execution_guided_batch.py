"""Execution-guided selection with batched execution: every ``chunks`` schedule chooses alike."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.pipelines.selection.execution_guided import DEFAULT_CHUNKS, ExecutionGuidedSelector, KBNameLookup
from tests.pipelines.selection.test_execution_guided import (
    BROKEN,
    COUNT_ONE,
    COUNT_ZERO,
    DIRECTORS_OF_ALPHA,
    EMPTY,
    FILMS_OF_DEE_ONE,
    LABEL_TO_IDS,
    NATIONALITY,
    UNMAPPABLE,
    _hops,
    norm,
)
from tests.pipelines.selection.test_execution_guided import dense_store_dir as dense_store_dir  # the fixtures
from tests.pipelines.selection.test_execution_guided import store_dir as store_dir

SCHEDULES = [DEFAULT_CHUNKS, (1, 4, 16), (2,), (1000,)]


def test_every_chunk_schedule_chooses_like_one_beam_at_a_time(store_dir: Path) -> None:
    pool = [
        norm(DIRECTORS_OF_ALPHA),
        norm(FILMS_OF_DEE_ONE),
        norm(NATIONALITY),
        norm(COUNT_ONE),
        norm(COUNT_ZERO),
        norm(EMPTY),
        norm(EMPTY).replace("[ Alpha ]", "[Alpha]"),
        "( join ( reverse [ film , film , country ] ) [ Beta ] )",  # empty
        UNMAPPABLE,
        BROKEN,
        "( join ( reverse [ film , film , directed by ] ) [ Alpah ] )",  # fuzzy → DIRECTORS
    ]
    rng = random.Random(11)
    lists = [[rng.choice(pool) for _ in range(rng.randint(0, 10))] for _ in range(150)]
    texts = [rng.choice([None, "Dee One", "Nobody | Usland"]) for _ in lists]
    results = {}
    with OxigraphStore(store_dir, timeout=10.0, cache_size=0) as s:
        names = KBNameLookup(s)
        for chunks in SCHEDULES:
            selector = ExecutionGuidedSelector(s, chunks=chunks)
            results[chunks] = [
                selector.select(
                    b, semantics="exclude-topic", label_to_ids=LABEL_TO_IDS, answer_text=t, name_to_ids=names
                )
                for b, t in zip(lists, texts, strict=True)
            ]
            assert isinstance(selector.execute_seconds, float)  # durations: benchmarks/bench_execute_many.py
    for chunks in SCHEDULES[1:]:
        assert results[chunks] == results[(1,)], chunks  # answers, chosen beam, errors, beams_tried
    assert sum(r.executable for r in results[(1,)]) > 40


def test_a_timeout_inside_a_chunk_leaves_the_other_beams(dense_store_dir: Path) -> None:
    beams = [normalize_sexpr(_hops(n), {"m.n0": "Node Zero"}) for n in (6, 1)]
    with OxigraphStore(dense_store_dir, timeout=0.5) as s:
        selector = ExecutionGuidedSelector(s, chunks=(1000,))  # both beams in one execute_many
        sel = selector.select(beams, semantics="simple-path", label_to_ids={"Node Zero": ["m.n0"]})
    assert sel.chosen_beam == 1 and len(sel.answers) == 30 and "timeout" in sel.errors[0]


def test_chunks_must_be_positive(store_dir: Path) -> None:
    with OxigraphStore(store_dir) as s:
        for bad in ((), (0,), (2, -1)):
            with pytest.raises(ValueError, match="chunks"):
                ExecutionGuidedSelector(s, chunks=bad)
