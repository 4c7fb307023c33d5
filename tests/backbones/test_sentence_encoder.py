"""The shared sentence encoder: the real offline all-MiniLM-L6-v2, mean-pooled and normalised."""

from __future__ import annotations

import pickle

import pytest
import torch

from kbqa_lit.backbones.sentence_encoder import CachedEmbeddings, SentenceEncoder
from kbqa_lit.errors import UserInputError


def test_embeddings_are_unit_vectors_and_batching_does_not_change_them():
    texts = ["what is the capital of something", "what is the official language of something", "how tall is it"]
    one = SentenceEncoder(batch_size=1)
    many = SentenceEncoder(batch_size=8)
    a, b = one.encode(texts), many.encode(texts)
    assert a.shape == (3, one.dim) == (3, 384)
    assert torch.allclose(a.norm(dim=1), torch.ones(3), atol=1e-5)
    assert torch.allclose(a, b, atol=1e-5)
    sims = a @ a.T
    assert sims[0, 1] > sims[0, 2]  # two "what is the X of something" questions are nearer than a third
    assert one.encoded_texts == 3 and one.encode([]).shape == (0, 384)
    with pytest.raises(UserInputError):
        SentenceEncoder(batch_size=0)


def test_cached_embeddings_encode_each_text_once_and_a_copy_reloads():
    texts = CachedEmbeddings()
    first = texts.embed(["city", "country", "city"])
    assert first.shape[0] == 3 and torch.equal(first[0], first[2])
    assert texts.model.encoded_texts == 2  # "city" once
    again = texts.embed(["country", "capital"])
    assert torch.equal(again[0], first[1]) and texts.model.encoded_texts == 3
    copy = pickle.loads(pickle.dumps(texts))
    assert copy.name == texts.name and copy._model is None and copy._vectors == {}
    assert torch.allclose(copy.embed(["city"])[0], first[0], atol=1e-6)
