"""Keqing's response: a readable summary of how a question was answered, step by step.

:func:`render_response` writes the execution log deterministically: each sub-question, what it
started from, the chain(s) executed in relation words (``directed by → directed by (inverse)``)
and its answers (at most ``max_names`` names, then ``and N more``), and the final answer (the last
step's). :class:`LLMResponder` asks a backend to summarise that log and falls back to the
deterministic text when the output is empty or the request failed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.chains import Chain
from kbqa_lit.llm.backends import DecompositionBackend, DecompositionBackendError
from kbqa_lit.pipelines.keqing.verbalize import Labeler, chain_words, names_text

log = logging.getLogger(__name__)

SUMMARY_PROMPT = (
    "Below is the log of how a question was answered from a knowledge graph, one sub-question per "
    "step. Write a short answer to the question that explains the reasoning path step by step, "
    "using only the facts in the log.\n\n{log}\n\nResponse:"
)


@dataclass(frozen=True)
class ResponseStep:
    """One executed sub-question of the log.

    Attributes:
        question: The sub-question text (with its ``[mask]`` slot).
        chains: The chains executed for it.
        answers: Its answer ids (or literal values), in order.
        seeds: What it started from (entity ids, or the answers of the step it depends on).
    """

    question: str
    chains: tuple[Chain, ...] = ()
    answers: tuple[str, ...] = ()
    seeds: tuple[str, ...] = ()


def render_response(
    question: str, steps: Sequence[ResponseStep], label: Labeler | None = None, max_names: int = 5
) -> str:
    """The deterministic summary of an execution log (see the module docstring).

    Args:
        question: The user's question.
        steps: The executed sub-questions, in order.
        label: ``label(id) -> name or None`` for names (ids are shown otherwise).
        max_names: Names listed per answer set before ``and N more``.

    Returns:
        Several lines of text: the question, each step, the final answer.
    """
    lines = [f"Question: {question.strip()}"]
    if not steps:
        lines.append("No sub-question was answered.")
        return "\n".join(lines)
    for n, step in enumerate(steps, 1):
        start = f" (from {names_text(step.seeds, label, max_names)})" if step.seeds else ""
        lines.append(f"{n}. {step.question.strip()}{start}")
        chains = "; ".join(chain_words(c) for c in step.chains) or "none"
        lines.append(f"   {'chains' if len(step.chains) > 1 else 'chain'}: {chains}")
        lines.append(f"   answers: {names_text(step.answers, label, max_names)}")
    lines.append(f"Answer: {names_text(steps[-1].answers, label, max_names)}")
    return "\n".join(lines)


class LLMResponder:
    """Responses written by an LLM from the execution log, with the deterministic text as fallback.

    Args:
        backend: Any decomposition backend.
        max_names: Names listed per answer set in the log.

    Attributes:
        fallbacks: How many responses fell back to :func:`render_response` so far.
    """

    def __init__(self, backend: DecompositionBackend, max_names: int = 5) -> None:
        self.backend = backend
        self.max_names = int(max_names)
        self.fallbacks = 0

    def prompt(self, log_text: str) -> str:
        """The summary prompt of one rendered log."""
        return SUMMARY_PROMPT.format(log=log_text)

    def respond_many(
        self, questions: Sequence[str], steps: Sequence[Sequence[ResponseStep]], label: Labeler | None = None
    ) -> list[str]:
        """One response per question (one batched backend call); never raises for a failed output.

        A failed or empty output, or a backend that cannot serve requests at all, gives the
        deterministic text (counted in :attr:`fallbacks`).

        Raises:
            UserInputError: When ``questions`` and ``steps`` differ in length.
        """
        if len(questions) != len(steps):
            raise UserInputError(f"{len(questions)} questions but {len(steps)} step lists")
        logs = [render_response(q, s, label, self.max_names) for q, s in zip(questions, steps, strict=True)]
        if not logs:
            return []
        try:
            outcomes = self.backend.generate_outcomes([self.prompt(t) for t in logs])
        except DecompositionBackendError as exc:
            log.warning("response backend unusable, writing the execution logs instead: %s", exc)
            self.fallbacks += len(logs)
            return logs
        out = []
        for text, outcome in zip(logs, outcomes, strict=True):
            if outcome.text is None or not outcome.text.strip():
                self.fallbacks += 1
                out.append(text)
            else:
                out.append(outcome.text.strip())
        return out

    def respond(self, question: str, steps: Sequence[ResponseStep], label: Labeler | None = None) -> str:
        """The response to one question (see :meth:`respond_many`)."""
        return self.respond_many([question], [steps], label)[0]


__all__ = ["SUMMARY_PROMPT", "LLMResponder", "ResponseStep", "render_response"]
