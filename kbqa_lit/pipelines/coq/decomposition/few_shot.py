"""The few-shot prompt of CoQ's progressive decomposition, with worked cases kept in editable files.

A prompt is an instruction, the worked cases, then the question::

    <instruction>

    Decompose the question "who directed ..." step by step:
    [SUBQ] ... [ANS] ... [SUBQ] ... [ANS] ... [SCHEMA] ... [ENT] ... [SEP] ... [REL] ...

    Decompose the question "<the question>" step by step:

The cases of each dataset ship as ``kbqa_lit/pipelines/coq/decomposition/cases/<dataset>.txt`` (webqsp, cwq,
grailqa, metaqa, pathquestion, synthetic); a user may pass a file of their own. A case file holds
cases separated by blank lines, each two lines::

    Question: what is the nationality of the director of Golden Compass?
    Decomposition: [SUBQ] who directed Golden Compass? [ANS] Silas Quill [SUBQ] ... [SCHEMA] ...

Lines starting with ``#`` are comments. Every decomposition must parse (at least one step) and
have a ``[SCHEMA]`` part; a missing file or a malformed case raises a typed error naming the file
and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.pipelines.coq.decomposition.parser import HEADER_TEMPLATE, parse_decomposition

#: Datasets with shipped cases.
DATASETS = ("webqsp", "cwq", "grailqa", "metaqa", "pathquestion", "synthetic")

DEFAULT_INSTRUCTION = (
    "Decompose a complex question into simple sub-questions, one step at a time. Write each "
    "sub-question after [SUBQ] and its answer after [ANS]; a later sub-question may use an earlier "
    "answer. When an answer is unknown, write #1, #2, ... for the first, second, ... answer. "
    "Finish with [SCHEMA], the entities of the question separated by [ENT], then [SEP] and the "
    "knowledge-base relations the question needs separated by [REL]."
)


@dataclass(frozen=True)
class Case:
    """One worked case of the few-shot prompt.

    Attributes:
        question: The complex question.
        decomposition: Its decomposition in the CoQ form (with the ``[SCHEMA]`` part).
    """

    question: str
    decomposition: str


def shipped_cases_path(dataset: str) -> Path:
    """The shipped case file of a dataset.

    Raises:
        UserInputError: For a dataset without shipped cases.
    """
    if dataset not in DATASETS:
        raise UserInputError(f"no decomposition cases for dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
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
    if len(block) != 2:
        raise DataFormatError(
            path, first, f"a case is two lines ('Question: ...', 'Decomposition: ...'), got {len(block)}"
        )
    (qline, qtext), (dline, dtext) = block
    if not qtext.lower().startswith("question:"):
        raise DataFormatError(path, qline, "a case must start with 'Question: ...'")
    if not dtext.lower().startswith("decomposition:"):
        raise DataFormatError(path, dline, "the second line of a case must be 'Decomposition: ...'")
    question = qtext.split(":", 1)[1].strip()
    decomposition = dtext.split(":", 1)[1].strip()
    if not question:
        raise DataFormatError(path, qline, "empty question")
    parsed = parse_decomposition(decomposition)
    if not parsed.ok:
        raise DataFormatError(path, dline, f"bad decomposition: {parsed.error}")
    if not parsed.entities and not parsed.relations:
        raise DataFormatError(path, dline, "the decomposition has no [SCHEMA] part")
    return Case(question=question, decomposition=decomposition)


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
        instruction: The instruction before the cases; ``None`` uses the default one.
        num_cases: How many cases of the file to use (``None``: all).
    """

    def __init__(
        self,
        dataset: str = "synthetic",
        cases_file: str | None = None,
        instruction: str | None = None,
        num_cases: int | None = None,
    ) -> None:
        self.dataset = dataset
        self.cases_file = cases_file
        self.instruction = DEFAULT_INSTRUCTION if instruction is None else instruction
        path = Path(cases_file) if cases_file else shipped_cases_path(dataset)
        cases = load_cases(path)
        if num_cases is not None:
            if num_cases < 0:
                raise UserInputError(f"num_cases must be >= 0, got {num_cases}")
            cases = cases[:num_cases]
        self.cases = cases
        blocks = [self.instruction.strip()] if self.instruction.strip() else []
        blocks += [f"{header(c.question)}\n{c.decomposition}" for c in cases]
        self._prefix = "\n\n".join(blocks)

    def render(self, question: str) -> str:
        """The full prompt for ``question`` (ends with its header line and a newline)."""
        ask = header(question)
        return f"{self._prefix}\n\n{ask}\n" if self._prefix else f"{ask}\n"

    def __repr__(self) -> str:
        source = self.cases_file or self.dataset
        return f"DecompositionPrompt({source!r}, cases={len(self.cases)})"


__all__ = [
    "DATASETS",
    "DEFAULT_INSTRUCTION",
    "Case",
    "DecompositionPrompt",
    "header",
    "load_cases",
    "shipped_cases_path",
]
