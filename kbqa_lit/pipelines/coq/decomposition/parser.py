"""Parse an LLM's progressive decomposition into a :class:`Decomposition`, and render it back.

The target form (CoQ) is::

    [SUBQ] q1 [ANS] a1 [SUBQ] q2 [ANS] a2 ... [SCHEMA] e1 [ENT] e2 [SEP] r1 [REL] r2

— the steps, then the schema items the model expects the question to need: entities (after
``[SCHEMA]`` and each ``[ENT]``) and relations (after ``[SEP]`` and each ``[REL]``).

:func:`parse_decomposition` is tolerant of what LLMs usually do around that form:

- prose before the first marker and after the last value (a value ends at its line's end);
- the prompt echoed back (with ``question`` given, the text after that question's own
  ``Decompose the question "..." step by step:`` header is used), and a continuation into the
  next case (parsing stops at the next ``Decompose the question`` or ``Question:`` header, or at
  a ``[SUBQ]`` after the schema);
- numbered or bulleted lines (``1. [SUBQ] ...``, ``- [ANS] ...``), markers without spaces around
  them (``[SUBQ]who...[ANS]Bob``), lower-case markers, markers with inner spaces (``[ SUBQ ]``);
- a missing final ``[ANS]`` (the answer becomes the placeholder ``#n``) or a missing
  ``[SCHEMA]`` part (empty entity and relation lists); repeated identical steps (greedy loops).

When no step can be read, the result has ``ok=False`` and an ``error`` saying why; the pipeline
then falls back to no decomposition for that example.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: The header that introduces a question in the few-shot prompt (see :mod:`.few_shot`).
HEADER_TEMPLATE = 'Decompose the question "{question}" step by step:'
MARKERS = ("SUBQ", "ANS", "SCHEMA", "ENT", "SEP", "REL")
_MARKER_RE = re.compile(r"\[\s*(SUBQ|ANS|SCHEMA|ENT|SEP|REL)\s*\]", re.IGNORECASE)
# a case header, echoed or a continuation: `Decompose the question "..." step by step:` or `Question: ...`
_HEADER_RE = re.compile(
    r'^[ \t]*(?:Decompose the question\s*"(?P<q>.*?)"\s*step by step:?|Question\s*:)',
    re.IGNORECASE | re.MULTILINE,
)
# line prefixes to drop: `1.`, `2)`, `-`, `*`, `•`, `Step 3:`
_LINE_PREFIX_RE = re.compile(r"^[ \t]*(?:(?:step\s*)?\d+\s*[.):]|[-*•])[ \t]*", re.IGNORECASE | re.MULTILINE)
_LINE_START_SUBQ_RE = re.compile(r"^[ \t]*\[\s*SUBQ\s*\]", re.IGNORECASE | re.MULTILINE)
_PLACEHOLDER_RE = re.compile(r"^#\d+$")
_SNIPPET = 80


@dataclass
class Decomposition:
    """A progressive decomposition.

    Attributes:
        steps: ``(sub-question, answer)`` pairs in order; an unknown answer is ``#k``.
        entities: Entity names of the ``[SCHEMA]`` part, as the model wrote them.
        relations: Relation names of the ``[SCHEMA]`` part, as the model wrote them.
        ok: Whether at least one step was read.
        error: Why nothing usable was found (when ``ok`` is false).
    """

    steps: list[tuple[str, str]] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    ok: bool = True
    error: str | None = None

    def render(self, with_schema: bool = False, with_answers: bool = True) -> str:
        """Write ``[SUBQ] q1 [ANS] a1 ...`` (plus `` [SCHEMA] e1 [ENT] e2 [SEP] r1 [REL] r2`` if asked).

        Args:
            with_schema: Append the ``[SCHEMA]`` part.
            with_answers: Write the ``[ANS]`` parts (false: ``[SUBQ] q1 [SUBQ] q2 ...``, the
                "w/o intermediate answers" ablation).
        """
        parts = [f"[SUBQ] {q} [ANS] {a}" if with_answers else f"[SUBQ] {q}" for q, a in self.steps]
        if with_schema and (self.entities or self.relations):
            parts.append(render_schema(self.entities, self.relations))
        return " ".join(parts)

    def schema_dict(self) -> dict[str, list[str]]:
        """The schema part as ``{"entities": [...], "relations": [...]}`` (the meta-field form)."""
        return {"entities": list(self.entities), "relations": list(self.relations)}

    @classmethod
    def failure(cls, error: str) -> Decomposition:
        """A failed parse with its reason."""
        return cls(ok=False, error=error)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "steps": [list(s) for s in self.steps],
            "entities": list(self.entities),
            "relations": list(self.relations),
            "ok": self.ok,
            "error": self.error,
        }


def render_schema(entities: list[str], relations: list[str]) -> str:
    """Write ``[SCHEMA] e1 [ENT] e2 [SEP] r1 [REL] r2``."""
    text = "[SCHEMA] " + " [ENT] ".join(entities) if entities else "[SCHEMA]"
    if relations:
        text += " [SEP] " + " [REL] ".join(relations)
    return text


def is_placeholder(answer: str) -> bool:
    """Whether an answer is a placeholder ``#k``."""
    return bool(_PLACEHOLDER_RE.match(answer.strip()))


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET else flat[: _SNIPPET - 3] + "..."


def _same_question(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def select_answer_region(text: str, question: str | None = None) -> str:
    """Cut the part of a model output that decomposes ``question``.

    With ``question`` given: the text after the last header of that question when there is one (an
    echoed prompt), else the text from the start (an output without echo never holds its own
    header). Without ``question``: the text before the first header when a line there starts with
    ``[SUBQ]`` (the output, then a continuation into the next case), else the text after the last
    header (an echoed prompt: its instruction mentions the markers only inside sentences). The
    region always ends at the next header.
    """
    headers = list(_HEADER_RE.finditer(text))
    if not headers:
        return text
    if question is not None:
        own = [m for m in headers if m.group("q") is not None and _same_question(m.group("q"), question)]
        start = own[-1].end() if own else 0
    elif _LINE_START_SUBQ_RE.search(_LINE_PREFIX_RE.sub("", text[: headers[0].start()])):
        start = 0
    else:
        start = headers[-1].end()
    following = [m.start() for m in headers if m.start() >= start]
    end = following[0] if following else len(text)
    return text[start:end]


def _value(segment: str) -> str:
    """The value after a marker: its first non-empty line, stripped (later lines are prose)."""
    for line in segment.splitlines():
        if line.strip():
            return line.strip().strip('"').strip()
    return ""


def parse_decomposition(text: str | None, question: str | None = None) -> Decomposition:
    """Read a model's output as a decomposition.

    Args:
        text: The raw model output (only the generated text, or the prompt echoed plus it).
        question: The decomposed question; locates its own header in an echoed prompt.

    Returns:
        The decomposition; ``ok=False`` with an ``error`` when no ``[SUBQ]`` step was found.
    """
    if text is None or not text.strip():
        return Decomposition.failure("empty model output")
    region = _LINE_PREFIX_RE.sub("", select_answer_region(text, question))
    matches = list(_MARKER_RE.finditer(region))
    if not any(m.group(1).upper() == "SUBQ" for m in matches):
        return Decomposition.failure(f"no [SUBQ] step in the model output: {_snippet(text)!r}")
    steps: list[tuple[str, str | None]] = []
    entities: list[str] = []
    relations: list[str] = []
    in_schema = False
    for i, m in enumerate(matches):
        marker = m.group(1).upper()
        end = matches[i + 1].start() if i + 1 < len(matches) else len(region)
        value = _value(region[m.end() : end])
        if marker == "SUBQ":
            if in_schema:
                break  # the model began another decomposition after the schema
            if value:
                steps.append((value, None))
        elif marker == "ANS":
            if in_schema or not steps or steps[-1][1] is not None:
                continue  # an answer without its sub-question
            steps[-1] = (steps[-1][0], value)
        else:
            in_schema = True
            if value:
                (entities if marker in ("SCHEMA", "ENT") else relations).append(value)
    done: list[tuple[str, str]] = []
    for q, a in steps:
        step = (q, a if a else f"#{len(done) + 1}")
        if done and done[-1] == step:
            continue  # a greedy decoding loop repeating itself
        done.append(step)
    if not done:
        return Decomposition.failure(f"no non-empty [SUBQ] step in the model output: {_snippet(text)!r}")
    return Decomposition(steps=done, entities=_unique(entities), relations=_unique(relations))


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def with_placeholders(decomposition: Decomposition) -> Decomposition:
    """Replace every answer by ``#1``, ``#2``, ... (the final one too), also inside later sub-questions.

    An answer mentioned in a later sub-question (``where was Bob born?`` after ``[ANS] Bob``)
    becomes its placeholder there (``where was #1 born?``); longer answers are replaced first.
    """
    if not decomposition.ok:
        return decomposition
    steps: list[tuple[str, str]] = []
    known: list[tuple[str, str]] = []  # (answer text, placeholder) of earlier steps
    for k, (q, a) in enumerate(decomposition.steps, 1):
        for answer, placeholder in sorted(known, key=lambda x: -len(x[0])):
            q = re.sub(rf"(?<!\w){re.escape(answer)}(?!\w)", placeholder, q, flags=re.IGNORECASE)
        placeholder = f"#{k}"
        if a and not is_placeholder(a):
            known.append((a, placeholder))
        steps.append((q, placeholder))
    return Decomposition(
        steps=steps,
        entities=list(decomposition.entities),
        relations=list(decomposition.relations),
    )


__all__ = [
    "HEADER_TEMPLATE",
    "MARKERS",
    "Decomposition",
    "is_placeholder",
    "parse_decomposition",
    "render_schema",
    "select_answer_region",
    "with_placeholders",
]
