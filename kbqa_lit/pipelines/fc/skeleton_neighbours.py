"""Logical skeletons from the nearest training questions (``skeleton.source: neighbours``; our addition).

The paper's skeleton parser is a seq2seq model (``skeleton.source: parser``). On the CPU that is a
small T5 trained from scratch on a few hundred questions, and such a parser does not read words it
has never seen: on the synthetic world's zero-shot questions, whose relations no training question
names, its top-1 skeleton is right for 3 of 20 (docs/fc.md). A skeleton is the structure of the
question, not its relations, and the installed pretrained sentence encoder (all-MiniLM-L6-v2)
already places "what is the official language of <entity0>" next to "what is the capital of
<entity0>". So this source embeds the masked question (:func:`~kbqa_lit.data.fc.skeletons.mask_mentions`
with the linked mentions; the training side masks its topic-entity labels, as the parser is
trained), takes the ``k`` most similar training questions (cosine of mean-pooled embeddings,
:class:`~kbqa_lit.pipelines.keqing.matching.TemplateMatcher`) and ranks their skeletons by the sum of
their similarities. The ranked list plays the part of the parser's beams: the top-2 rule
(:func:`~kbqa_lit.data.fc.skeletons.top2_skeletons`) applies unchanged.

Its reach is the training split's skeletons: a question whose structure no training question has
gets a wrong one (the parser could, in principle, write a new structure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.data.fc.skeletons import parser_example
from kbqa_lit.data.keqing.decomposition import MASK
from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.keqing.matching import TemplateMatcher

_ENTITY_MASK_RE = re.compile(r"<entity\d+>")


def _slot_text(masked_question: str) -> str:
    """``<entity0>``... as the matcher's neutral slot (``[mask]``, read as an ordinary noun phrase)."""
    return _ENTITY_MASK_RE.sub(MASK, masked_question)


class NeighbourSkeletons:
    """Rank skeletons by the nearest training questions (see the module docstring).

    Args:
        train_files: Question files with gold S-expressions (the training split).
        k: Neighbours that vote.
        encoder: Sentence encoder (``all-MiniLM-L6-v2`` offline).
        cache_dir: Folder of the embedding cache (``None``: none).

    Raises:
        UserInputError: When the files hold no question with an S-expression, or ``k < 1``.
    """

    def __init__(
        self,
        train_files: Iterable[str | Path],
        k: int = 10,
        encoder: str = MINILM,
        cache_dir: str | Path | None = None,
    ) -> None:
        if k < 1:
            raise UserInputError(f"skeleton neighbours k must be >= 1, got {k}")
        pairs = [p for f in train_files for ex in read_jsonl(f) if (p := parser_example(ex)) is not None]
        if not pairs:
            raise UserInputError("skeleton.source neighbours needs training questions with S-expressions")
        self.k = k
        self.skeletons = [s for _, s in pairs]
        self.matcher = TemplateMatcher([_slot_text(q) for q, _ in pairs], encoder, cache_dir, exact=False)

    def beams(self, masked_questions: Sequence[str]) -> list[list[str]]:
        """Each question's skeletons, most voted first (the sum of its neighbours' cosine similarities)."""
        out = []
        for found in self.matcher.top_k([_slot_text(q) for q in masked_questions], self.k):
            votes: dict[str, float] = {}
            for i, score in found:
                votes[self.skeletons[i]] = votes.get(self.skeletons[i], 0.0) + score
            out.append(sorted(votes, key=lambda s: -votes[s]))
        return out


__all__ = ["NeighbourSkeletons"]
