"""TFS-KBQA's instruction tasks as text: instructions, prompt templates, inputs and targets.

Four tasks, named as in the configs (the instructions are the paper's, editable per run)::

    task       input                               response
    s1         question                            normalised logical form with entity mentions
    s2_items   question                            schema items ; entity mentions        (S2, step t1)
    s2_lf      schema items ; mentions             normalised logical form               (S2, step t2)
    s3         question                            answer names joined with " | "

S2-t2 reads the items only (``s2_lf_input="items"``, the paper's Fig. 3); ``"question_items"``
prepends the question (``question | items``). Training and inference build it with
:func:`s2_lf_input`, so the two agree when they are given the same setting.

The logical form is :func:`~kbqa_lit.kb.lf.normalize.normalize_sexpr`'s text: operators as words,
relations and classes as bracketed words, entities as their *mentions* (labels) in brackets::

    ( join ( reverse [ people , person , place of birth ] ) [ Amos Garrick ] )

The S2 items use the same word scheme, relations (then classes) in order of first use, a
`` ; ``, then the entity mentions: ``[ people , person , place of birth ] ; [ Amos Garrick ]``.
:func:`parse_items` reads them back (relation ids and mentions), for entity linking at inference.

Schema forms (``schema_form``): ``words`` (above, the default) or ``ids``, raw Freebase ids as
the paper writes them: ``( join ( reverse people.person.place_of_birth ) [ Amos Garrick ] )``
and items ``[ people.person.place_of_birth ] ; [ Amos Garrick ]``. The denormaliser reads a
bare id as itself, so both forms execute the same way; :func:`read_schema_ids` also unbrackets
``[ people.person.place_of_birth ]`` in a logical form of the ``ids`` form (models write it so).

Templates (the prompt is ``prefix + input + suffix``, the response follows the suffix):

- ``alpaca`` (default): the Stanford Alpaca prompt with ``### Instruction:``, ``### Input:`` and
  ``### Response:`` sections;
- ``llama2_chat``: ``[INST] <<SYS>>…<</SYS>> instruction⏎input [/INST]`` (the system block only
  when a system prompt is given), for LLaMA-2-chat bases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kbqa_lit.data.gold import gold_items
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError, check_choice
from kbqa_lit.kb.lf.normalize import OPERATOR_WORDS, normalize_sexpr, schema_to_words, words_to_schema
from kbqa_lit.kb.lf.sexpr import ENTITY_RE, SCHEMA_RE, Atom, SExpr, atoms_with_roles, parse_sexpr

#: The instruction tasks, in fallback order.
TASKS: tuple[str, ...] = ("s1", "s2_items", "s2_lf", "s3")

#: The paper's instructions, one per task.
DEFAULT_INSTRUCTIONS: dict[str, str] = {
    "s1": "Please translate the following questions into their corresponding logical forms.",
    "s2_items": (
        "Please translate the following questions into their corresponding relations and extract "
        "entities mentioned in the questions."
    ),
    "s2_lf": "Please generate the target logical form according to the following sentence.",
    "s3": "Please provide answers to the following questions based on your understanding.",
}

TEMPLATES: tuple[str, ...] = ("alpaca", "llama2_chat")
ALPACA_PREAMBLE = (
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request."
)
#: Between answer names in an S3 response (the separator the fallback answer mapping splits on).
ANSWER_SEPARATOR = " | "
#: Between the schema items and the entity mentions of an S2-t1 response.
ITEM_SEPARATOR = " ; "
#: Between the question and the items in an S2-t2 input (``s2_lf_input="question_items"``).
QUESTION_SEPARATOR = " | "
#: What S2-t2 reads: the items only (the paper's Fig. 3), or the question and the items.
S2_LF_INPUTS: tuple[str, ...] = ("items", "question_items")
#: How logical forms and S2 items write relations and classes: as words, or as raw Freebase ids.
SCHEMA_FORMS: tuple[str, ...] = ("words", "ids")

_SPAN_RE = re.compile(r"\[\s*(.*?)\s*\](?=\s|$|\[)")
_SCHEMA_SEP_RE = re.compile(r"\s,\s")
_BRACKETED_ID_RE = re.compile(r"\[\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)+)\s*\](?=\s|\)|$)")


def check_tasks(tasks: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Read a task list (``"s1"``, ``"s1,s3"`` or a list) into a tuple of known task names.

    Raises:
        ValueError: For an empty list or an unknown task.
    """
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    out = tuple(dict.fromkeys(t.strip() for t in items if t and t.strip()))
    if not out:
        raise ValueError("no instruction task given")
    unknown = [t for t in out if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(unknown)}; choose from {', '.join(TASKS)}")
    return out


def resolve_instructions(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The paper's instructions with ``overrides`` (task → text) applied.

    Raises:
        ValueError: For an override of an unknown task or an empty instruction.
    """
    out = dict(DEFAULT_INSTRUCTIONS)
    for task, text in (overrides or {}).items():
        check_choice("task", task, TASKS, where="instructions")
        if not str(text).strip():
            raise ValueError(f"the instruction of {task} is empty")
        out[task] = str(text)
    return out


def prompt_parts(
    template: str, instruction: str, input_text: str, system_prompt: str | None = None
) -> tuple[str, str, str]:
    """Split a prompt into ``(prefix, input, suffix)``; truncation only ever shortens the input.

    Args:
        template: ``"alpaca"`` or ``"llama2_chat"``.
        instruction: The task's instruction.
        input_text: The task's input (question, or question and items).
        system_prompt: The LLaMA-2-chat system prompt (``llama2_chat`` only; ``None``: no block).

    Raises:
        ValueError: For an unknown template.
    """
    check_choice("prompt template", template, TEMPLATES)
    if template == "alpaca":
        prefix = f"{ALPACA_PREAMBLE}\n\n### Instruction:\n{instruction}\n\n### Input:\n"
        return prefix, input_text, "\n\n### Response:\n"
    system = f"<<SYS>>\n{system_prompt}\n<</SYS>>\n\n" if system_prompt else ""
    return f"[INST] {system}{instruction}\n", input_text, " [/INST] "


def format_prompt(template: str, instruction: str, input_text: str, system_prompt: str | None = None) -> str:
    """The whole prompt text (what precedes the response)."""
    return "".join(prompt_parts(template, instruction, input_text, system_prompt))


def check_format(s2_lf_input: str = "items", schema_form: str = "words") -> tuple[str, str]:
    """Validate the two input/output format settings; return them.

    Raises:
        ValueError: For a value outside :data:`S2_LF_INPUTS` or :data:`SCHEMA_FORMS`.
    """
    check_choice("s2_lf_input", s2_lf_input, S2_LF_INPUTS)
    check_choice("schema_form", schema_form, SCHEMA_FORMS)
    return s2_lf_input, schema_form


# --------------------------------------------------------------------------- targets


def _wrapped(atom_text: str, labels: Mapping[str, str]) -> str:
    """How the normalised form writes one entity or literal atom (cut out of a one-hop form)."""
    text = normalize_sexpr(f"(JOIN x.y {atom_text})", labels)
    return text[len("( join [ x , y ] ") : -len(" )")]


def sexpr_with_ids(expr: str | SExpr, labels: Mapping[str, str]) -> str:
    """The normalised form with raw relation and class ids (``schema_form="ids"``).

    Operators, entity mentions and literals are written as :func:`normalize_sexpr` writes them;
    relations and classes stay ids: ``( join ( reverse people.person.place_of_birth ) [ Ada ] )``.

    Raises:
        SExprError: When ``expr`` is not a valid S-expression.
    """
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    roles = {id(atom): role for atom, role in atoms_with_roles(node)}

    def render(n: SExpr) -> str:
        if isinstance(n, Atom):
            return n.text if roles[id(n)] in ("relation", "class") else _wrapped(n.text, labels)
        return " ".join(["(", OPERATOR_WORDS[n.op], *(render(a) for a in n.args), ")"])

    return render(node)


def lf_target(ex: KBQAExample, schema_form: str = "words") -> str | None:
    """The normalised gold logical form with entity mentions, or ``None`` without a usable gold.

    Args:
        ex: The example.
        schema_form: ``words`` (``[ people , person , place of birth ]``) or ``ids``
            (``people.person.place_of_birth``).
    """
    if not ex.s_expression:
        return None
    try:
        if schema_form == "ids":
            return sexpr_with_ids(ex.s_expression, ex.entity_labels())
        return normalize_sexpr(ex.s_expression, ex.entity_labels())
    except SExprError:
        return None


def read_schema_ids(text: str) -> str:
    """Unbracket raw schema ids in a generated logical form: ``[ a.b.c ]`` → ``a.b.c``.

    For the ``ids`` form only: a model trained on bare ids sometimes brackets one, which the
    denormaliser would read as an entity mention. Entity ids (``m.*``) stay bracketed.
    """
    return _BRACKETED_ID_RE.sub(lambda m: m.group(0) if ENTITY_RE.match(m.group(1)) else m.group(1), text)


def entity_mention(entity: str, labels: Mapping[str, str]) -> str:
    """How the normalised form writes ``entity``: its label when that reads back, else its id."""
    text = normalize_sexpr(f"(JOIN x.y {entity})", {entity: labels.get(entity) or ""})
    return text[len("( join [ x , y ] [ ") : -len(" ] )")]


def items_target(ex: KBQAExample, schema_form: str = "words") -> str | None:
    """S2-t1 response: ``[ relation words ] ... ; [ mention ] ...``, or ``None`` without a gold.

    With ``schema_form="ids"`` the schema items are bracketed ids: ``[ people.person.place_of_birth ]``.
    """
    items = gold_items(ex)
    if items is None:
        return None
    labels = ex.entity_labels()
    write = (lambda r: r) if schema_form == "ids" else schema_to_words
    schema = " ".join(f"[ {write(r)} ]" for r in (*items.relations, *items.classes))
    mentions = " ".join(f"[ {entity_mention(e, labels)} ]" for e in items.entities)
    return f"{schema}{ITEM_SEPARATOR}{mentions}".strip()


def parse_items(text: str) -> tuple[list[str], list[str]]:
    """Read an S2-t1 response into ``(relation and class ids, entity mentions)``.

    Bracketed spans with a `` , `` are schema items (kept when they spell an id), and so are
    spans before the `` ; `` that are a raw dotted id (the ``ids`` form); other spans after the
    `` ; `` are mentions; an unbracketed mention part is one mention.
    """
    schema_part, sep, mention_part = text.partition(ITEM_SEPARATOR.strip())
    if not sep:
        schema_part, mention_part = text, ""
    schema: list[str] = []
    mentions: list[str] = []
    for span in _SPAN_RE.findall(schema_part + " "):
        if _SCHEMA_SEP_RE.search(span):
            try:
                schema.append(words_to_schema(span))
            except SExprError:
                continue
        elif SCHEMA_RE.match(span) and not ENTITY_RE.match(span):
            schema.append(span)
        elif span:
            mentions.append(span)
    spans = _SPAN_RE.findall(mention_part.strip() + " ")
    if not spans and mention_part.strip():
        spans = [mention_part.strip()]
    mentions.extend(s for s in spans if s and not _SCHEMA_SEP_RE.search(s))
    return list(dict.fromkeys(schema)), list(dict.fromkeys(mentions))


def s2_lf_input(question: str, items: str, mode: str = "items") -> str:
    """S2-t2 input: the (gold or generated) items, after the question with ``mode="question_items"``.

    Raises:
        ValueError: For an unknown ``mode``.
    """
    check_format(mode)
    return items if mode == "items" else f"{question}{QUESTION_SEPARATOR}{items}"


def answer_target(ex: KBQAExample, max_answers: int | None = None) -> str | None:
    """S3 response: the gold answer names (ids when unnamed), or ``None`` without answers."""
    names = list(dict.fromkeys((a.name or a.id).strip() for a in ex.answers if (a.name or a.id).strip()))
    if max_answers is not None:
        names = names[:max_answers]
    return ANSWER_SEPARATOR.join(names) if names else None


def task_input(task: str, ex: KBQAExample, s2_lf_mode: str = "items", schema_form: str = "words") -> str:
    """The training/evaluation input of ``task`` for ``ex`` (S2-t2 gets the gold items).

    Args:
        task: The task name.
        ex: The example.
        s2_lf_mode: What S2-t2 reads (see :func:`s2_lf_input`).
        schema_form: How the S2-t2 input's items write relations (``words`` or ``ids``).
    """
    if task == "s2_lf":
        return s2_lf_input(ex.question, items_target(ex, schema_form) or "", s2_lf_mode)
    return ex.question


def task_target(task: str, ex: KBQAExample, max_answers: int | None = None, schema_form: str = "words") -> str | None:
    """The gold response of ``task`` for ``ex``, or ``None`` when the example has none."""
    if task in ("s1", "s2_lf"):
        return lf_target(ex, schema_form)
    if task == "s2_items":
        return items_target(ex, schema_form)
    if task == "s3":
        return answer_target(ex, max_answers)
    raise ValueError(f"unknown task {task!r}")


__all__ = [
    "ALPACA_PREAMBLE",
    "ANSWER_SEPARATOR",
    "DEFAULT_INSTRUCTIONS",
    "ITEM_SEPARATOR",
    "S2_LF_INPUTS",
    "SCHEMA_FORMS",
    "TASKS",
    "TEMPLATES",
    "answer_target",
    "check_format",
    "check_tasks",
    "entity_mention",
    "format_prompt",
    "items_target",
    "lf_target",
    "parse_items",
    "prompt_parts",
    "read_schema_ids",
    "resolve_instructions",
    "s2_lf_input",
    "sexpr_with_ids",
    "task_input",
    "task_target",
]
