"""Keqing's answers through the shared answer chain's extensions (``path_fallback``, ``answer_type``).

Keqing answers with the end nodes of the chains its sub-questions kept. For the extensions those
answers become a selection whose logical form is the whole question's chain: a linear decomposition
(each sub-question seeded by the one before, the first by entities) written as the JOIN chain of the
kept chains, one candidate per seed and combination (:func:`chain_candidates`). Then
:meth:`~kbqa_lit.pipelines.selection.chain.AnswerChain.after` applies what is on: a question left
without answers gets its seeds' best-ranked KB path (``path_fallback``; with ``override_margin`` a
path that fits the question better also replaces a chain's answers) and an answer of another kind than
the question names gives way to the next candidate or path of that kind (``answer_type``). A question
with answers but no candidate (a branching decomposition) keeps its answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.chains import chain_to_sexpr
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.pipelines.keqing.execution import StepLog
from kbqa_lit.pipelines.selection.chain import AnswerChain
from kbqa_lit.pipelines.selection.execution_guided import Selection

#: Whole-question candidates written at most per question.
MAX_CANDIDATES = 20


def chain_candidates(steps: Sequence[StepLog], limit: int = MAX_CANDIDATES) -> list[str]:
    """The whole question's JOIN chains, best first, when its decomposition is linear; else ``[]``."""
    if not steps or steps[0].subquestion.answer_deps():
        return []
    for before, step in itertools.pairwise(steps):
        sq = step.subquestion
        if sq.entity_seeds() or sq.answer_deps() != [before.subquestion.qid]:
            return []
    out: list[str] = []
    for combo in itertools.product(*(s.chains for s in steps)):
        chain = tuple(hop for part in combo for hop in part)
        out.extend(chain_to_sexpr(seed, chain) for seed in steps[0].seeds)
        if len(out) >= limit:
            break
    return list(dict.fromkeys(out))[:limit]


@dataclass
class ExtensionOutcome:
    """What the extensions did to one question.

    Attributes:
        answers: The answers after the extensions.
        s_expression: The logical form of a path or candidate that replaced the chains' answers.
        by: ``path_fallback``, ``path_override`` or ``answer_type``; ``None`` when nothing changed.
    """

    answers: list[str]
    s_expression: str | None = None
    by: str | None = None


def apply_extensions(
    chain: AnswerChain, view: KBQAExample, steps: Sequence[StepLog], answers: list[str]
) -> ExtensionOutcome:
    """The question's answers after the extensions that ``chain`` carries (see the module docstring)."""
    candidates = chain_candidates(steps)
    if (answers and not candidates) or not view.topic_entities:
        return ExtensionOutcome(answers)
    linked = dict(view.topic_entities)
    executed = bool(answers)
    sel = Selection(
        answers=list(answers),
        chosen_beam=0 if executed else None,
        chosen_sexpr=candidates[0] if executed else None,
        sparql=None,
        executable=executed,
        fallback=False,
        beams_tried=1 if executed else len(candidates),
    )
    out = chain.after(sel, candidates, question=view.question, linked=linked, semantics=view.semantics,
                      label_to_ids=invert_labels(linked))  # fmt: skip
    by = next((name for name in ("path_fallback", "path_override", "answer_type") if getattr(out, name)), None)
    if by is None:
        return ExtensionOutcome(answers)
    return ExtensionOutcome(list(out.answers), out.chosen_sexpr, by)


__all__ = ["MAX_CANDIDATES", "ExtensionOutcome", "apply_extensions", "chain_candidates"]
