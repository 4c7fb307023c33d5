"""Keqing's candidate reasoning: pick a sub-question's answers from the triples retrieved for it.

Two reasoners share one interface (:class:`Reasoner`):

- :class:`AllCandidatesReasoner` (no LLM, the offline default): every candidate answer, in order —
  the retrieval upper bound;
- :class:`LLMReasoner`: the paper's prompt (the retrieved triples as context, one
  ``(subject name, relation, object name)`` per line, then the question) sent to any
  :class:`~kbqa_lit.llm.backends.DecompositionBackend`. The output is read as answer names (a JSON
  list, or one name per line, or names separated by ``,``/``;``/``|``/`` and ``, after an optional
  ``Answer:`` label and list bullets); a name is kept only when it equals (case-insensitively,
  whitespace squeezed) the name of a subject or object of the context, and is mapped back to the
  ids of that name. An empty or unusable output, or a failed request, gives no answers and a
  recorded ``error``, never an exception (only a backend that can serve no request at all raises
  :class:`~kbqa_lit.llm.backends.DecompositionBackendError`).

What a reasoner is asked depends on ``reasoner.scope`` (see
:class:`~kbqa_lit.pipelines.keqing.config.ReasonerConfig`): per sub-question (the paper's Eq. 4),
the question is :func:`step_question` — the sub-question with its ``[mask]`` slot written as the
names of the step's seeds — over that step's retrieved triples; ``last`` asks the whole question
over the last sub-question's triples. The fine-tuned reasoner's training rows
(:mod:`~kbqa_lit.pipelines.keqing.reasoning_data`) are built with the same functions.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.data.keqing.decomposition import MASK
from kbqa_lit.errors import UserInputError
from kbqa_lit.llm.backends import DecompositionBackend
from kbqa_lit.pipelines.keqing.verbalize import Labeler, names_text, node_name, triple_text

Triple = tuple[str, str, str]
PROMPT_HEAD = (
    "Use the following pieces of context to answer the users question. If you don't know the answer, "
    "just say that you don't know, don't try to make up an answer. The answers must be exactly a subject "
    "or an object of the context; write each answer on its own line and nothing else."
)
_LABEL_RE = re.compile(r"^\s*(?:the\s+)?answers?\s*(?:(?:is|are)\b\s*:?|:)\s*", re.IGNORECASE)
_BULLET_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_PART_RE = re.compile(r"\s*(?:[,;|]|\band\b)\s*", re.IGNORECASE)
_STRIP = " \t\"'`.!?"
_MASK_RE = re.compile(re.escape(MASK), re.IGNORECASE)
#: Seed names written into a sub-question's slot before ``and N more``.
STEP_SEED_NAMES = 5


@dataclass
class ReasoningResult:
    """The answers of one sub-question.

    Attributes:
        answers: Answer ids (or literal values), in order, without repeats.
        raw: The model's output (``None`` without an LLM or when the request failed).
        error: Why no answer was read (``None`` when fine).
    """

    answers: list[str]
    raw: str | None = None
    error: str | None = None


class Reasoner(ABC):
    """Picks the answers of a sub-question from its candidates and retrieved triples."""

    @abstractmethod
    def reason_many(
        self,
        questions: Sequence[str],
        candidates: Sequence[list[str]],
        triples: Sequence[list[Triple]],
        label: Labeler | None = None,
    ) -> list[ReasoningResult]:
        """One result per question (the three sequences are parallel).

        Raises:
            UserInputError: When the sequences differ in length.
        """

    def reason(
        self, question: str, candidates: list[str], triples: list[Triple], label: Labeler | None = None
    ) -> ReasoningResult:
        """The answers of one question (see :meth:`reason_many`)."""
        return self.reason_many([question], [candidates], [triples], label)[0]


def check_lengths(*seqs: Sequence[object]) -> None:
    """Raise :class:`UserInputError` unless the parallel sequences have one length."""
    if len({len(s) for s in seqs}) > 1:
        raise UserInputError(f"questions, candidates and triples differ in length: {[len(s) for s in seqs]}")


class AllCandidatesReasoner(Reasoner):
    """Every candidate is an answer (no LLM): the offline default and the retrieval upper bound."""

    def reason_many(
        self,
        questions: Sequence[str],
        candidates: Sequence[list[str]],
        triples: Sequence[list[Triple]],
        label: Labeler | None = None,
    ) -> list[ReasoningResult]:
        """The distinct candidates of each question, in order."""
        check_lengths(questions, candidates, triples)
        return [ReasoningResult(list(dict.fromkeys(c))) for c in candidates]


def reasoning_prompt(
    question: str, triples: Sequence[Triple], label: Labeler | None = None, max_triples: int = 200
) -> str:
    """The paper's reasoning prompt over the first ``max_triples`` triples (also the fine-tuned reasoner's)."""
    context = "\n".join(triple_text(t, label) for t in triples[:max_triples])
    return f"{PROMPT_HEAD}\n----------------\n{context}\n----------------\nQuestion: {question}\nAnswers:"


def step_question(
    text: str, seeds: Sequence[str], label: Labeler | None = None, max_names: int = STEP_SEED_NAMES
) -> str:
    """A sub-question as the per-step reasoner reads it: its ``[mask]`` slot written as its seeds' names.

    Args:
        text: The sub-question text (``who directed [mask]``).
        seeds: The step's seed ids (the linked entities, or the answers chosen for its dependency).
        label: ``label(id) -> name or None`` (ids are shown otherwise).
        max_names: Names written before ``and N more``.

    Returns:
        ``who directed Heat, Ronin``; the text itself when it has no slot or there are no seeds.
    """
    if not seeds or not _MASK_RE.search(text):
        return text
    names = names_text(seeds, label, max_names)
    return _MASK_RE.sub(lambda _: names, text)


def _key(name: str) -> str:
    return " ".join(name.casefold().split())


def context_names(triples: Sequence[Triple], label: Labeler | None = None) -> dict[str, list[str]]:
    """``{normalised name: ids}`` of every subject and object (ids also match themselves)."""
    names: dict[str, list[str]] = {}
    for s, _, o in triples:
        for node in (s, o):
            for key in {_key(node_name(node, label)), _key(node)}:
                ids = names.setdefault(key, [])
                if node not in ids:
                    ids.append(node)
    return names


def answer_texts(raw: str) -> list[str]:
    """Candidate answer strings of a model output (JSON list, lines, separated names)."""
    text = raw.strip()
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        try:
            items = json.loads(text[start : end + 1])
            if isinstance(items, list):
                return [str(x).strip(_STRIP) for x in items if isinstance(x, str | int | float)]
        except ValueError:
            pass
    out: list[str] = []
    for line in text.splitlines():
        line = _BULLET_RE.sub("", _LABEL_RE.sub("", line)).strip(_STRIP)
        if line:
            out.append(line)
            if line.strip("[]") != line:  # "[Douglas Sirk]", "[A, B]" that was not JSON
                line = line.strip("[]").strip(_STRIP)
                out.append(line)
            out.extend(p.strip(_STRIP) for p in _PART_RE.split(line) if p.strip(_STRIP) and p != line)
    return out


def parse_answers(raw: str, names: dict[str, list[str]]) -> tuple[list[str], str | None]:
    """The context ids a model output names, and an error when it names none."""
    if not raw.strip():
        return [], "empty output"
    found: dict[str, None] = {}
    for text in answer_texts(raw):
        for eid in names.get(_key(text), ()):
            found.setdefault(eid, None)
    if not found:
        return [], f"no answer is a subject or object of the context: {' '.join(raw.split())[:200]!r}"
    return list(found), None


class LLMReasoner(Reasoner):
    """Answers read by an LLM from the retrieved triples (the paper's prompt; see the module docstring).

    Args:
        backend: Any decomposition backend (local HF model or OpenAI-compatible server).
        max_triples: Context triples per prompt (the first ones).

    Raises:
        UserInputError: When ``max_triples < 1``.
    """

    def __init__(self, backend: DecompositionBackend, max_triples: int = 200) -> None:
        if max_triples < 1:
            raise UserInputError(f"max_triples must be >= 1, got {max_triples}")
        self.backend = backend
        self.max_triples = int(max_triples)

    def prompt(self, question: str, triples: Sequence[Triple], label: Labeler | None = None) -> str:
        """The reasoning prompt of one question over (at most ``max_triples``) triples."""
        return reasoning_prompt(question, triples, label, self.max_triples)

    def reason_many(
        self,
        questions: Sequence[str],
        candidates: Sequence[list[str]],
        triples: Sequence[list[Triple]],
        label: Labeler | None = None,
    ) -> list[ReasoningResult]:
        """Ask the backend once per question with context (one batched call); parse each output.

        Raises:
            UserInputError: When the sequences differ in length.
            DecompositionBackendError: When the backend can serve no request (auth, unreachable).
        """
        check_lengths(questions, candidates, triples)
        results: list[ReasoningResult] = [ReasoningResult([], None, "no context triples") for _ in questions]
        asked = [i for i, t in enumerate(triples) if t]
        prompts = [self.prompt(questions[i], triples[i], label) for i in asked]
        for i, outcome in zip(asked, self.backend.generate_outcomes(prompts), strict=True):
            if outcome.text is None:
                results[i] = ReasoningResult([], None, f"generation failed: {outcome.error}")
                continue
            names = context_names(triples[i][: self.max_triples], label)
            answers, error = parse_answers(outcome.text, names)
            results[i] = ReasoningResult(answers, outcome.text, error)
        return results


__all__ = [
    "PROMPT_HEAD",
    "AllCandidatesReasoner",
    "LLMReasoner",
    "Reasoner",
    "ReasoningResult",
    "answer_texts",
    "check_lengths",
    "context_names",
    "parse_answers",
    "reasoning_prompt",
    "step_question",
]
