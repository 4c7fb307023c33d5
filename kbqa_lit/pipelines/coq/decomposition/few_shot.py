"""The few-shot prompt of CoQ's progressive decomposition, with worked cases kept in editable files.

A prompt is an instruction, the worked cases, then the question. In the paper's form
(``style="worked"``, the default) each case is worked step by step, then the one-line result::

    <instruction>

    Decompose the question "What is the nationality of the director of Lantern?" step by step:
    The first sub-question is "who directed Lantern?"; the answer is Tobias Wren; the relation is "directed by".
    The second sub-question is "what is the nationality of Tobias Wren?"; the answer is Veloria; ...
    [SUBQ] who directed Lantern? [ANS] Tobias Wren [SUBQ] ... [SCHEMA] Lantern [SEP] directed by [REL] nationality

    Decompose the question "<the question>" step by step:

``style="compact"`` leaves the worked lines out (header, then the result line). The model is
stopped after its result line by :attr:`DecompositionPrompt.stop`, which the decomposition run
hands to the backend unless the backend's config names its own stop strings.

The instruction is a named preset (``instruction_preset``) or a text of your own
(``instruction``). ``paper`` (the default) asks, as Fig. 3 does, for each sub-question's answer
written out and used by the later sub-questions; ``placeholders`` (ours, the earlier default) also
invites ``#1``, ``#2``, ... for unknown answers, which leads to placeholder sub-questions — the
paper's weaker ablation, not its method.

The cases of each dataset ship as ``kbqa_lit/pipelines/coq/decomposition/cases/<dataset>.txt`` (webqsp, cwq,
grailqa, metaqa, pathquestion, synthetic), each written in its dataset's own words, with the
schema's relations as natural-language phrases; a user may pass a file of their own. A case
file holds cases separated by blank lines: a ``Question:`` line, the worked lines (one per step),
and a ``Decomposition:`` line::

    Question: what is the nationality of the director of Golden Compass?
    The first sub-question is "who directed Golden Compass?"; the answer is Silas Quill; the relation ...
    The second sub-question is ...
    Decomposition: [SUBQ] who directed Golden Compass? [ANS] Silas Quill [SUBQ] ... [SCHEMA] ...

Lines starting with ``#`` are comments. Every decomposition must parse (at least one step) and
have a ``[SCHEMA]`` part, and the worked lines must not hold decomposition markers; the
``worked`` style needs worked lines in every case. A missing file or a malformed case raises a
typed error naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from kbqa_lit.errors import DataFormatError, UserInputError, check_choice
from kbqa_lit.pipelines.coq.decomposition.parser import HEADER_TEMPLATE, parse_decomposition

#: Datasets with shipped cases.
DATASETS = ("webqsp", "cwq", "grailqa", "metaqa", "pathquestion", "synthetic")

#: The paper's instruction (Fig. 3): each sub-question's answer is written out and later
#: sub-questions use it by name, so every step is a semantically clear question of its own.
PAPER_INSTRUCTION = (
    "Decompose a complex question into simple sub-questions, one step at a time. For each step, say "
    "what the sub-question is, what its answer is and which relation it asks about. Write each answer "
    "out in full, and let a later sub-question that depends on an earlier one name that answer. Then "
    "write the result on one line: each sub-question after [SUBQ] and its answer after [ANS], then "
    "[SCHEMA], the entities of the question separated by [ENT], then [SEP] and the relations the "
    "question needs, as short phrases, separated by [REL]."
)
#: Ours, kept as the ``placeholders`` preset: it invites ``#k`` for unknown answers, which leads to
#: placeholder sub-questions (the paper's weaker ablation, not its method).
PLACEHOLDER_INSTRUCTION = (
    "Decompose a complex question into simple sub-questions, one step at a time. For each step, say "
    "what the sub-question is, what its answer is and which relation it asks about; a later "
    "sub-question may use an earlier answer. When an answer is unknown, write #1, #2, ... for the "
    "first, second, ... answer. Then write the result on one line: each sub-question after [SUBQ] and "
    "its answer after [ANS], then [SCHEMA], the entities of the question separated by [ENT], then "
    "[SEP] and the relations the question needs, as short phrases, separated by [REL]."
)
#: The instruction presets, by name: ``paper`` (the default) and ``placeholders`` (ours).
INSTRUCTIONS: dict[str, str] = {"paper": PAPER_INSTRUCTION, "placeholders": PLACEHOLDER_INSTRUCTION}
DEFAULT_INSTRUCTION_PRESET = "paper"
DEFAULT_INSTRUCTION = INSTRUCTIONS[DEFAULT_INSTRUCTION_PRESET]
#: The prompt styles: the paper's worked cases, or the result lines only.
STYLES = ("worked", "compact")
#: Stop strings of each style: after the result line (a blank line ends a case) or the next header.
DEFAULT_STOPS: dict[str, tuple[str, ...]] = {
    "worked": ("\n\n", "Decompose the question"),
    "compact": ("Decompose the question",),
}
_MARKER_RE = re.compile(r"\[\s*(SUBQ|ANS|SCHEMA|ENT|SEP|REL)\s*\]", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    """One worked case of the few-shot prompt.

    Attributes:
        question: The complex question.
        decomposition: Its decomposition in the CoQ form (with the ``[SCHEMA]`` part).
        worked: The worked lines, one per step (``The first sub-question is ...``); may be empty.
    """

    question: str
    decomposition: str
    worked: tuple[str, ...] = ()


def shipped_cases_path(dataset: str) -> Path:
    """The shipped case file of a dataset.

    Raises:
        UserInputError: For a dataset without shipped cases.
    """
    check_choice("dataset", dataset, DATASETS, hint="the datasets with shipped decomposition cases")
    return Path(
        str(resources.files("kbqa_lit.pipelines.coq.decomposition").joinpath("cases").joinpath(f"{dataset}.txt"))
    )


def load_cases(path: str | Path) -> list[Case]:
    """Read a case file (see the module docstring for its form).

    Raises:
        UserInputError: When the file does not exist.
        DataFormatError: Naming file and line of a malformed case, or the file when it has none.
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such decomposition case file: {path}")
    cases: list[Case] = []
    block: list[tuple[int, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate([*lines, ""], 1):
        text = line.strip()
        if text.startswith("#"):
            continue
        if text:
            block.append((lineno, text))
            continue
        if block:
            cases.append(_read_case(path, block))
            block = []
    if not cases:
        raise DataFormatError(path, None, "no cases (expected 'Question: ...' and 'Decomposition: ...' lines)")
    return cases


def _read_case(path: Path, block: list[tuple[int, str]]) -> Case:
    first = block[0][0]
    if len(block) < 2:
        raise DataFormatError(
            path, first, "a case is a 'Question: ...' line, its worked lines and a 'Decomposition: ...' line"
        )
    (qline, qtext), (dline, dtext) = block[0], block[-1]
    if not qtext.lower().startswith("question:"):
        raise DataFormatError(path, qline, "a case must start with 'Question: ...'")
    if not dtext.lower().startswith("decomposition:"):
        raise DataFormatError(path, dline, "the last line of a case must be 'Decomposition: ...'")
    for lineno, text in block[1:-1]:
        if text.lower().startswith(("question:", "decomposition:")) or _MARKER_RE.search(text):
            raise DataFormatError(path, lineno, "a worked line holds no 'Question:', 'Decomposition:' or [MARKER]")
    question = qtext.split(":", 1)[1].strip()
    decomposition = dtext.split(":", 1)[1].strip()
    if not question:
        raise DataFormatError(path, qline, "empty question")
    parsed = parse_decomposition(decomposition)
    if not parsed.ok:
        raise DataFormatError(path, dline, f"bad decomposition: {parsed.error}")
    if not parsed.entities and not parsed.relations:
        raise DataFormatError(path, dline, "the decomposition has no [SCHEMA] part")
    return Case(question=question, decomposition=decomposition, worked=tuple(t for _, t in block[1:-1]))


def header(question: str) -> str:
    """The line that asks for one question's decomposition."""
    return HEADER_TEMPLATE.format(question=" ".join(question.split()))


class DecompositionPrompt:
    """Few-shot prompt builder for progressive decomposition.

    Args:
        dataset: Which shipped cases to use (webqsp, cwq, grailqa, metaqa, pathquestion,
            synthetic); ignored when ``cases_file`` is given.
        cases_file: A case file of your own (``Question:``/``Decomposition:`` pairs separated
            by blank lines); overrides ``dataset``.
        instruction: The instruction before the cases, as text; ``None`` uses ``instruction_preset``
            (a text given here wins over the preset; ``""``: no instruction).
        num_cases: How many cases of the file to use (``None``: all).
        style: ``worked`` (the paper: each case worked step by step, then the result line) or
            ``compact`` (the result lines only).
        stop: Stop strings handed to the backend (unless its config names its own); ``None``: the
            style's (``worked``: a blank line — the end of the result line's case — and the next
            header; ``compact``: the next header).
        instruction_preset: A named instruction (:data:`INSTRUCTIONS`): ``paper`` (Fig. 3: answers
            written out and used by later sub-questions) or ``placeholders`` (ours: ``#k`` for
            unknown answers).

    Raises:
        UserInputError: For an unknown style, instruction preset or dataset, a missing case file,
            a negative ``num_cases``, or the ``worked`` style with a case without worked lines.
        DataFormatError: For a malformed case file (naming file and line).
    """

    def __init__(
        self,
        dataset: str = "synthetic",
        cases_file: str | None = None,
        instruction: str | None = None,
        num_cases: int | None = None,
        style: Literal["worked", "compact"] = "worked",
        stop: list[str] | None = None,
        instruction_preset: str = DEFAULT_INSTRUCTION_PRESET,
    ) -> None:
        check_choice("prompt style", style, STYLES)
        check_choice(
            "instruction preset", instruction_preset, INSTRUCTIONS, hint="or give the text as prompt.instruction"
        )
        self.dataset = dataset
        self.cases_file = cases_file
        self.style = style
        self.stop = list(DEFAULT_STOPS[style] if stop is None else stop)
        self.instruction_preset = instruction_preset
        self.instruction = INSTRUCTIONS[instruction_preset] if instruction is None else instruction
        path = Path(cases_file) if cases_file else shipped_cases_path(dataset)
        cases = load_cases(path)
        if num_cases is not None:
            if num_cases < 0:
                raise UserInputError(f"num_cases must be >= 0, got {num_cases}")
            cases = cases[:num_cases]
        if style == "worked":
            unworked = [c.question for c in cases if not c.worked]
            if unworked:
                raise UserInputError(
                    f"prompt style 'worked' needs worked lines in every case of {path}; none for {unworked[0]!r} "
                    "(add them, or use style: compact)"
                )
        self.cases = cases
        blocks = [self.instruction.strip()] if self.instruction.strip() else []
        blocks += [self.case_text(c) for c in cases]
        self._prefix = "\n\n".join(blocks)

    def case_text(self, case: Case) -> str:
        """One case as the prompt shows it: header, worked lines (``worked`` style), result line."""
        lines = [header(case.question), *(case.worked if self.style == "worked" else ()), case.decomposition]
        return "\n".join(lines)

    def render(self, question: str) -> str:
        """The full prompt for ``question`` (ends with its header line and a newline)."""
        ask = header(question)
        return f"{self._prefix}\n\n{ask}\n" if self._prefix else f"{ask}\n"

    def __repr__(self) -> str:
        source = self.cases_file or self.dataset
        return f"DecompositionPrompt({source!r}, cases={len(self.cases)}, style={self.style!r})"


__all__ = [
    "DATASETS",
    "DEFAULT_INSTRUCTION",
    "DEFAULT_INSTRUCTION_PRESET",
    "DEFAULT_STOPS",
    "INSTRUCTIONS",
    "PAPER_INSTRUCTION",
    "PLACEHOLDER_INSTRUCTION",
    "STYLES",
    "Case",
    "DecompositionPrompt",
    "header",
    "load_cases",
    "shipped_cases_path",
]
