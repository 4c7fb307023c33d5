"""Keqing's decomposition: sub-questions with ``[mask]`` slots, dependencies and seeds.

The paper's JSON, one object per sub-question::

    [{"question_text": "who was the director of [mask]?", "question_id": 0, "dep": [-1],
      "seed_entities": ["Written on Wind"]},
     {"question_text": "[mask] was the director of which movies?", "question_id": 1, "dep": [0],
      "seed_entities": ["<ANSWER>-0"]}]

``dep: [-1]`` means no dependency; a seed ``<ANSWER>-k`` is the answers of sub-question ``k``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.data.chain_wording import MASK as MASK  # the slot of the templates, re-exported here

ANSWER_SEED = re.compile(r"^<ANSWER>-(\d+)$")
SLOT = re.compile(r"^\[E(\d+)\]$")
#: The instruction of the decomposition prompt (the paper's task, in one line).
INSTRUCTION = (
    "Decompose the question into sub-questions that each ask one thing about one entity. Answer with a JSON "
    "list of objects with question_text (the entity written [mask]), question_id, dep (the sub-questions it "
    "depends on, [-1] for none) and seed_entities (the entities, or <ANSWER>-k for the answers of sub-question k)."
)


@dataclass(frozen=True)
class SubQuestion:
    """One sub-question of a decomposition.

    Attributes:
        text: The sub-question with its entity slot written ``[mask]``.
        qid: Its position (``question_id``).
        dep: Sub-questions it depends on (``[-1]``: none).
        seeds: Seed entity names, or ``<ANSWER>-k`` for the answers of sub-question ``k``.
    """

    text: str
    qid: int
    dep: tuple[int, ...] = (-1,)
    seeds: tuple[str, ...] = ()

    def answer_deps(self) -> list[int]:
        """The sub-questions whose answers are this one's seeds (``<ANSWER>-k``)."""
        return [int(m.group(1)) for s in self.seeds if (m := ANSWER_SEED.match(s))]

    def entity_seeds(self) -> list[str]:
        """The seeds that are entity names (not ``<ANSWER>-k``)."""
        return [s for s in self.seeds if not ANSWER_SEED.match(s)]

    def to_json(self) -> dict[str, object]:
        """The paper's JSON object."""
        return {
            "question_text": self.text,
            "question_id": self.qid,
            "dep": list(self.dep),
            "seed_entities": list(self.seeds),
        }


@dataclass
class Decomposition:
    """A parsed decomposition, or the record of why parsing failed.

    Attributes:
        subquestions: The sub-questions in order (empty on failure).
        raw: The text the model produced.
        error: ``None`` when parsed, else what was wrong (``"no JSON list"``, ...).
    """

    subquestions: list[SubQuestion] = field(default_factory=list)
    raw: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the text parsed into at least one sub-question."""
        return self.error is None and bool(self.subquestions)


def slot_name(k: int) -> str:
    """The k-th entity slot of a question: ``[E0]``, ``[E1]``..."""
    return f"[E{k}]"


def slot_question(question: str, mentions: Sequence[str]) -> str:
    """The question with each mention replaced by its slot (``[E0]`` for ``mentions[0]``...).

    A bracketed mention (MetaQA's ``[Temuera Morrison]``) loses its brackets too; a mention that
    does not occur (case-insensitive, ``_`` read as a space) is left out.
    """
    out = question
    for k, mention in enumerate(mentions):
        if not mention:
            continue
        for form in (f"[{mention}]", mention, mention.replace(" ", "_")):
            at = out.lower().find(form.lower())
            if at >= 0:
                out = out[:at] + slot_name(k) + out[at + len(form) :]
                break
    return out


def decomposition_prompt(question: str, instruction: str = INSTRUCTION) -> str:
    """The decomposer's prompt: the instruction, the question and the response cue."""
    return f"{instruction}\nQuestion: {question}\nSub-questions: "


def render_decomposition(subquestions: Sequence[SubQuestion]) -> str:
    """The paper's JSON list on one line."""
    return json.dumps([s.to_json() for s in subquestions], ensure_ascii=False)


def chain_decomposition(texts: Sequence[str], seed: str) -> list[SubQuestion]:
    """Sub-questions of a chain: the k-th asks ``texts[k]`` of the answers of the (k-1)-th.

    Args:
        texts: One sub-question text (or one chain text, for the chain-generating ablation) per step.
        seed: The first sub-question's seed (a slot ``[E0]`` or an entity name).
    """
    return [
        SubQuestion(text, k, (-1,) if k == 0 else (k - 1,), (seed,) if k == 0 else (f"<ANSWER>-{k - 1}",))
        for k, text in enumerate(texts)
    ]


def _ints(value: Any, default: tuple[int, ...]) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value) or default
    return default


def _subquestion(obj: Any, position: int) -> SubQuestion | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("question_text"), str):
        return None
    qid = obj.get("question_id")
    seeds = obj.get("seed_entities")
    if isinstance(seeds, str):
        seeds = [seeds]
    return SubQuestion(
        text=obj["question_text"].strip(),
        qid=qid if isinstance(qid, int) and not isinstance(qid, bool) else position,
        dep=_ints(obj.get("dep"), (-1,)),
        seeds=tuple(s for s in (seeds or []) if isinstance(s, str)),
    )


def _objects(text: str) -> list[Any]:
    """JSON objects in ``text``: the whole list when it parses, else each ``{...}`` that does."""
    start = text.find("[")
    if start >= 0:
        end = text.rfind("]")
        for candidate in (text[start : end + 1], text[start:] + "]", text[start:] + "}]"):
            try:
                data = json.loads(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(data, list):
                return data
    found: list[Any] = []
    for match in re.finditer(r"\{[^{}]*\}", text):
        try:
            found.append(json.loads(match.group(0)))
        except json.JSONDecodeError:
            continue
    return found


def parse_decomposition(text: str) -> Decomposition:
    """Parse a model's decomposition, tolerantly; a failure is recorded, never raised.

    The JSON list is read whole when it parses (a truncated list is closed first); otherwise every
    complete ``{...}`` object in the text is read on its own. Objects without a ``question_text``
    are dropped; a missing ``question_id`` is the object's position, a missing ``dep`` is
    ``[-1]``. A dependency or ``<ANSWER>-k`` seed that points at no earlier sub-question makes the
    parse fail (``error`` says which), since executing it would read answers that do not exist.
    """
    subs = [s for i, obj in enumerate(_objects(text or "")) if (s := _subquestion(obj, i)) is not None]
    if not subs:
        return Decomposition([], text, "no JSON sub-question in the output")
    ids = [s.qid for s in subs]
    for s in subs:
        earlier = set(ids[: ids.index(s.qid)])
        bad = [d for d in (*[d for d in s.dep if d != -1], *s.answer_deps()) if d not in earlier]
        if bad:
            return Decomposition(subs, text, f"sub-question {s.qid} depends on {bad[0]}, which does not come before it")
        if not s.seeds:
            return Decomposition(subs, text, f"sub-question {s.qid} has no seed entity")
    return Decomposition(subs, text, None)
