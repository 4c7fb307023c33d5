"""build_extensions: the optional steps of the answer chain, made the same way for every caller.

The chain itself runs in the callback tests (tests/callbacks/test_path_fallback_eval.py,
test_answer_type_eval.py) and FC-KBQA's composition tests, on real stores.
"""

from __future__ import annotations

from kbqa_lit.pipelines.selection.chain import build_extensions


def test_the_type_check_shares_the_fallbacks_path_ranking() -> None:
    paths, types = build_extensions(
        path_fallback=True, answer_type=True, encoder="enc", max_hops=1, override_margin=0.3, type_max_paths=7
    )
    assert paths is not None and types is not None
    assert types.paths is paths and types.max_paths == 7
    assert (paths.encoder_name, paths.max_hops, paths.override_margin) == ("enc", 1, 0.3)


def test_without_the_fallback_the_type_check_ranks_paths_with_its_own_encoder() -> None:
    paths, types = build_extensions(path_fallback=False, answer_type=True, encoder="enc", type_encoder="kinds")
    assert paths is None and types is not None
    assert types.paths is not None and types.paths.encoder_name == "kinds" and types.max_paths == 30


def test_both_off() -> None:
    assert build_extensions(path_fallback=False, answer_type=False) == (None, None)
