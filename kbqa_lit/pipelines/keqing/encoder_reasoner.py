"""A stand-in for Keqing's LLM reasoner: a sentence encoder picks a sub-question's answers.

The paper's reasoner is ChatGPT reading the retrieved triples and the (sub-)question (Eq. 4). No LLM
with weights runs here, and a tiny causal LM trained from scratch does not learn to copy names out
of its context (docs/keqing.md), so :class:`EncoderReasoner` stands in for it, named as such
(``reasoner.kind: encoder``): it reads the same inputs — the question, the candidates and the
retrieved triples — and keeps the candidates that the triples most relevant to the question reach.

How it reads them: every candidate is the end of one or more triples (its object, or its subject
for a backward hop); a triple's relevance is the cosine similarity of the question and the
triple's relation words (``directed by``) in a sentence encoder (all-MiniLM-L6-v2 by default); a
candidate scores the best relevance of its triples. The answers are the candidates within
``margin`` of the best score, best first (ties in retrieval order). When the retrieved chains of
several templates are pooled (``retrieval.select: union``), this keeps the candidates of the
relation the question asks for and drops those of the other templates' relations. A candidate no
triple reaches scores lowest; with no triple at all, every candidate is kept (``error`` says so).
When one relation reaches every reached candidate (a chain step of one relation, MetaQA's usual
case), every reached candidate has the same score whatever the question, so nothing is encoded:
the reached candidates are kept in retrieval order, as the scores would keep them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.backbones.sentence_encoder import CachedEmbeddings
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.keqing.reasoning import Reasoner, ReasoningResult, Triple, check_lengths
from kbqa_lit.pipelines.keqing.verbalize import Labeler, relation_words


class EncoderReasoner(Reasoner):
    """Answers chosen by the relevance of their triples' relations to the question (the module docstring).

    Args:
        encoder: Encoder name or folder (``all-MiniLM-L6-v2`` offline); loaded on first use.
        margin: Candidates scoring within ``margin`` of the best are kept (``0``: the best relation's).

    Raises:
        UserInputError: When ``margin`` is negative.
    """

    def __init__(self, encoder: str = MINILM, margin: float = 0.0) -> None:
        if margin < 0:
            raise UserInputError(f"reasoner.margin must be >= 0, got {margin}")
        self.embeddings = CachedEmbeddings(encoder)
        self.margin = float(margin)

    @staticmethod
    def reaching(candidates: Sequence[str], triples: Sequence[Triple]) -> dict[str, set[str]]:
        """Per candidate, the relations of the triples that end in it (candidates no triple reaches: absent)."""
        wanted = set(candidates)
        reaching: dict[str, set[str]] = {}
        for s, r, o in triples:
            for end in (o, s):
                if end in wanted:
                    reaching.setdefault(end, set()).add(r)
        return reaching

    def candidate_scores(self, question: str, candidates: Sequence[str], triples: Sequence[Triple]) -> list[float]:
        """Each candidate's best relevance among the triples that end in it (``-inf`` when none does)."""
        return self._scores(question, candidates, self.reaching(candidates, triples))

    def _scores(self, question: str, candidates: Sequence[str], reaching: dict[str, set[str]]) -> list[float]:
        """:meth:`candidate_scores` from the relations :meth:`reaching` found."""
        relations = sorted({r for c in candidates for r in reaching.get(c, ())})
        if not relations:
            return [float("-inf")] * len(candidates)
        words = [relation_words(r) for r in relations]
        vectors = self.embeddings.embed([question, *words])
        relevance = dict(zip(relations, (vectors[1:] @ vectors[0]).tolist(), strict=True))
        return [max((relevance[r] for r in reaching.get(c, ())), default=float("-inf")) for c in candidates]

    @torch.no_grad()
    def reason_many(
        self,
        questions: Sequence[str],
        candidates: Sequence[list[str]],
        triples: Sequence[list[Triple]],
        label: Labeler | None = None,
    ) -> list[ReasoningResult]:
        """The kept candidates of each question, best first (see the module docstring).

        Raises:
            UserInputError: When the sequences differ in length.
        """
        check_lengths(questions, candidates, triples)
        unique = [list(dict.fromkeys(cands)) for cands in candidates]
        reached = [self.reaching(cands, context) for cands, context in zip(unique, triples, strict=True)]
        relations = [set().union(*r.values()) for r in reached]
        # one batched encoder pass for the questions whose candidates two or more relations reach, and their
        # relations (the loop below reads the cache); one relation: equal scores, nothing to encode
        scored = [i for i, rels in enumerate(relations) if len(rels) > 1]
        if scored:
            words = {relation_words(r) for i in scored for r in relations[i]}
            self.embeddings.embed([*(questions[i] for i in scored), *sorted(words)])
        results = []
        for question, cands, reach, rels in zip(questions, unique, reached, relations, strict=True):
            if not cands:
                results.append(ReasoningResult([], None, "no candidates"))
                continue
            if len(rels) == 1:  # the scores' order: the reached ones, then (an infinite margin) the others
                kept = [c for c in cands if c in reach]
                if math.isinf(self.margin):
                    kept += [c for c in cands if c not in reach]
                results.append(ReasoningResult(kept))
                continue
            scores = self._scores(question, cands, reach)
            best = max(scores)
            if best == float("-inf"):
                results.append(ReasoningResult(cands, None, "no triple reaches a candidate: every one kept"))
                continue
            order = sorted(range(len(cands)), key=lambda i: -scores[i])
            results.append(ReasoningResult([cands[i] for i in order if scores[i] >= best - self.margin]))
        return results


__all__ = ["EncoderReasoner"]
