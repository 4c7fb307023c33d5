"""Logical skeletons from the nearest training questions (``skeleton.source: neighbours``; our addition).

The paper's skeleton parser is a seq2seq model (``skeleton.source: parser``). On the CPU that is a
small T5 trained from scratch on a few hundred questions, and such a parser does not read words it
has never seen: on the synthetic world's zero-shot questions, whose relations no training question
names, its top-1 skeleton is right for 3 of 20 (docs/fc.md). A skeleton is the structure of the
question, not its relations, and the installed pretrained sentence encoder (all-MiniLM-L6-v2)
already places "what is the official language of <entity0>" next to "what is the capital of
<entity0>". So this source embeds the masked question (:func:`~kbqa_lit.data.fc.skeletons.mask_mentions`
with the linked mentions; the training side masks its topic-entity labels, as the parser is
trained; each ``<entityK>`` read as the neutral word ``something``), takes the ``k`` most similar
training questions (cosine of mean-pooled embeddings,
:class:`~kbqa_lit.backbones.sentence_encoder.SentenceEncoder`) and ranks their skeletons by the sum
of their similarities. The ranked list plays the part of the parser's beams: the top-2 rule
(:func:`~kbqa_lit.data.fc.skeletons.top2_skeletons`) applies unchanged.

Its reach is the training split's skeletons: a question whose structure no training question has
gets a wrong one (the parser could, in principle, write a new structure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.backbones.sentence_encoder import SentenceEncoder
from kbqa_lit.data.fc.skeletons import parser_example
from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.errors import UserInputError, check_choice

#: How the neighbours rank their skeletons.
VOTES = ("max", "sum")
_ENTITY_MASK_RE = re.compile(r"<entity\d+>")


def _slot_text(masked_question: str) -> str:
    """``<entity0>``... as a neutral noun (``something``), so the slot reads as an ordinary noun phrase."""
    return " ".join(_ENTITY_MASK_RE.sub("something", masked_question).split())


class NeighbourSkeletons:
    """Rank skeletons by the nearest training questions (see the module docstring).

    Args:
        train_files: Question files with gold S-expressions (the training split).
        k: Neighbours that vote.
        encoder: Sentence encoder (``all-MiniLM-L6-v2`` offline).
        vote: ``max`` — skeletons ranked by their nearest neighbour's similarity (the nearest training
            question's skeleton first); ``sum`` — by the sum of their neighbours' similarities.
        device: Torch device of the encoder.

    Raises:
        UserInputError: When the files hold no question with an S-expression, or ``k < 1``.
    """

    def __init__(
        self,
        train_files: Iterable[str | Path],
        k: int = 20,
        encoder: str = MINILM,
        vote: str = "max",
        device: str = "cpu",
    ) -> None:
        check_choice("skeleton neighbours vote", vote, VOTES)
        self.vote = vote
        if k < 1:
            raise UserInputError(f"skeleton neighbours k must be >= 1, got {k}")
        pairs = [p for f in train_files for ex in read_jsonl(f) if (p := parser_example(ex)) is not None]
        if not pairs:
            raise UserInputError("skeleton.source neighbours needs training questions with S-expressions")
        self.k = k
        self.skeletons = [s for _, s in pairs]
        self.encoder = SentenceEncoder(encoder, device=device)
        self.train_embeddings = self.encoder.encode([_slot_text(q) for q, _ in pairs])

    def beams(self, masked_questions: Sequence[str]) -> list[list[str]]:
        """Each question's skeletons among its ``k`` nearest training questions, best first (see ``vote``)."""
        if not masked_questions:
            return []
        scores = self.encoder.encode([_slot_text(q) for q in masked_questions]) @ self.train_embeddings.T
        values, indices = torch.topk(scores, min(self.k, len(self.skeletons)), dim=1)
        out = []
        for row_values, row_indices in zip(values.tolist(), indices.tolist(), strict=True):
            votes: dict[str, float] = {}
            for i, score in zip(row_indices, row_values, strict=True):
                if self.vote == "sum":
                    votes[self.skeletons[i]] = votes.get(self.skeletons[i], 0.0) + score
                else:  # max: the first (nearest) neighbour of a skeleton decides its place
                    votes.setdefault(self.skeletons[i], score)
            out.append(sorted(votes, key=lambda s: -votes[s]))
        return out


__all__ = ["VOTES", "NeighbourSkeletons"]
