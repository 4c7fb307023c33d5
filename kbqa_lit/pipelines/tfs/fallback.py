"""TFS-KBQA inference: S1 → S2 → S3 fallback over one or several fine-tuned models.

Per question, in order (each strategy can be switched off — the paper's w/o S1/S2/S3 ablations):

1. **S1** — the model writes beams of normalised logical forms with entity *mentions*; each
   beam's mentions are linked to KB ids (the example's labels first, then an entity surface
   index; several candidates per mention, every reading tried in order via
   :func:`~kbqa_lit.kb.lf.denormalize.denormalize_all`) and the readings are executed in beam order
   (:class:`~kbqa_lit.pipelines.selection.execution_guided.ExecutionGuidedSelector`: the first reading
   with a non-empty answer wins);
2. **S2** — step t1 writes ``relations ; mentions``, step t2 writes logical forms from those
   items (or from the question and the items: the ``s2_lf_input`` the t2 adapter was trained
   with); linked and executed the same way (t1's mentions are linked too);
3. **S3** — the model writes the answer names; each is mapped to KB ids by exact name when
   possible (:func:`~kbqa_lit.pipelines.selection.execution_guided.fallback_answers`), else kept as text.

That is the paper's method (the ``paper`` form). Two named extensions of ours
(:mod:`kbqa_lit.pipelines.selection.forms`) act through the shared answer chain: ``path_fallback``
— a ``paths`` step before S3: the linked entities' KB paths ranked by a sentence encoder
(:mod:`kbqa_lit.pipelines.selection.path_fallback`) answer a question no logical form answered —
and ``answer_type`` — an S1/S2 answer of another kind than the question names gives way to the
next reading, else KB path, of that kind (:mod:`kbqa_lit.pipelines.selection.type_guard`). Rows
name the form and the extensions.

A *chain* of several members (e.g. a 13B model first, then a 7B one) tries each strategy with
every member before the next strategy (``order="strategy"``) or runs every strategy of a member
before the next member (``order="member"``). Every row records which strategy and member
answered and every attempt; the report adds F1, Hit@1 (random-pick and any), logical-form EM,
the executable rate and each strategy's share.

A member's *generators* are objects with ``generate(batch, num_beams=, num_return_sequences=,
max_new_tokens=) -> list[list[str]]`` (:class:`~kbqa_lit.modules.lora_causal_lm.LoraCausalLM`,
one per task or one for all) and an optional ``tokenizer``; prompts are built with the
:class:`~kbqa_lit.datamodules.tfs.instruction_batches.InstructionEncoder` settings the adapter was
trained with (``instruction.json``: template, lengths, ``s2_lf_input``, ``schema_form``). Batches
also carry ``task``, ``inputs`` and ``prompts`` as plain lists. Logical forms in either schema form
(words or raw ids) are read; a member trained on ids also has bracketed ids unbracketed.

Mentions become KB ids through the pipeline's *linkers* (:mod:`kbqa_lit.pipelines.tfs.linkers`:
exact or fuzzy names in the KB, a file of precomputed linking results), merged per mention.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.data.gold import gold_parses, gold_sexprs
from kbqa_lit.data.linking import check_linking, inference_view
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.tfs.prompts import parse_items
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.denormalize import denormalize_all, invert_labels
from kbqa_lit.kb.store import KnowledgeBase
from kbqa_lit.metrics.functional import score_question
from kbqa_lit.metrics.lf_match import logical_form_em
from kbqa_lit.pipelines.selection.chain import AnswerChain
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, KBNameLookup, fallback_answers
from kbqa_lit.pipelines.selection.forms import Form
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard
from kbqa_lit.pipelines.tfs.linkers import MentionLinker, NameLinker, merge_links
from kbqa_lit.pipelines.tfs.members import (
    LEGACY_FORMAT,
    ChainMember,
    load_instruction_settings,
    member_from_adapters,
    resolve_format,
)

log = logging.getLogger(__name__)

STRATEGIES: tuple[str, ...] = ("s1", "s2", "s3")
#: The ``path_fallback`` extension's step (before S3) and the name its attempts carry as their member.
PATHS, KB_MEMBER = "paths", "kb"
#: Entities whose KB paths the extensions rank at most per question.
MAX_LINKED = 5
_SPAN_RE = re.compile(r"\[\s*(.*?)\s*\](?=\s|$|\)|\[)")
_SCHEMA_SEP_RE = re.compile(r"\s,\s")


def mentions_in(text: str) -> list[str]:
    """Entity mentions of a normalised logical form (bracketed spans that are not schema items)."""
    return list(dict.fromkeys(s for s in _SPAN_RE.findall(text) if s and not _SCHEMA_SEP_RE.search(s)))


@dataclass
class Attempt:
    """One (strategy, member) try on one question."""

    strategy: str
    member: str
    beams: list[str]
    answered: bool
    chosen_beam: int | None = None
    items: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class QuestionResult:
    """The prediction for one question, how it was reached, and its scores."""

    index: int
    qid: str
    question: str
    strategy: str | None
    member: str | None
    answers: list[str]
    executable: bool
    sexpr: str | None
    sparql: str | None
    answer_text: str | None
    attempts: list[Attempt]
    f1: float = 0.0
    hit1: float = 0.0
    hit1_any: float = 0.0
    em: float | None = None
    form: str = "paper"
    extensions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass
class FallbackReport:
    """Rows (one per question, input order) and the question-averaged metrics."""

    rows: list[QuestionResult]
    metrics: dict[str, float]

    def write_jsonl(self, path: str | Path) -> Path:
        """Write the rows as JSON lines, atomically (no half-written file)."""
        write_jsonl_atomic((row.to_dict() for row in self.rows), path)
        return Path(path)


class TFSFallbackPipeline:
    """The S1 → S2 → S3 fallback over a chain of members against one knowledge base.

    Args:
        members: The chain, tried in order.
        kb: The knowledge base (Oxigraph store or endpoint).
        use_s1: Try S1 (false: the w/o S1 ablation).
        use_s2: Try S2.
        use_s3: Try S3.
        order: ``strategy`` (each strategy with every member, then the next strategy) or
            ``member`` (every strategy of a member, then the next member).
        s1_beams: Logical forms generated per question by S1.
        s2_item_beams: Item lists generated per question by S2-t1 (each feeds S2-t2).
        s2_lf_beams: Logical forms generated per item list by S2-t2.
        max_new_tokens: Longest logical form / item list.
        answer_max_new_tokens: Longest S3 answer text.
        batch_size: Questions generated for at once.
        linking: Which of the example's entities link mentions before the linkers
            (:func:`kbqa_lit.data.linking.inference_view`): ``predicted`` (its refined or linked
            candidates only), ``dataset-given`` (its topic entities) or ``gold`` (an oracle:
            topic entities and the gold form's labels).
        linkers: Mention linkers (:mod:`kbqa_lit.pipelines.tfs.linkers`), merged per mention in
            this order; none of them sees gold entities.
        surface_index: Mention → KB ids (e.g. :class:`KBNameLookup`), a :class:`NameLinker`
            tried after ``linkers``; ``None``: none.
        candidates_per_mention: Ids each linker gives per mention.
        max_readings: Readings (choices of ids) executed per logical form.
        name_to_ids: Exact name → ids for S3 answers (default: a :class:`KBNameLookup` on ``kb``).
        count_zero_is_executable: Whether a ``COUNT`` of 0 counts as executed.
        workers: Queries in flight at once.
        paths: The ``path_fallback`` extension's KB-path ranking (``None``: off).
        types: The ``answer_type`` extension's check (``None``: off).
        form: The form rows record (default: the paper's, or what ``paths``/``types`` make it).
    """

    def __init__(
        self,
        members: Sequence[ChainMember],
        kb: KnowledgeBase,
        *,
        use_s1: bool = True,
        use_s2: bool = True,
        use_s3: bool = True,
        order: str = "strategy",
        s1_beams: int = 5,
        s2_item_beams: int = 1,
        s2_lf_beams: int = 5,
        max_new_tokens: int = 128,
        answer_max_new_tokens: int = 64,
        batch_size: int = 8,
        linking: str = "predicted",
        linkers: Sequence[MentionLinker] = (),
        surface_index: Mapping[str, Sequence[str]] | None = None,
        candidates_per_mention: int = 5,
        max_readings: int = 8,
        name_to_ids: Mapping[str, Sequence[str]] | None = None,
        count_zero_is_executable: bool = False,
        workers: int = 1,
        paths: PathFallback | None = None,
        types: TypeGuard | None = None,
        form: Form | None = None,
    ) -> None:
        if not members:
            raise ValueError("the chain needs at least one member")
        if order not in ("strategy", "member"):
            raise ValueError(f"order must be 'strategy' or 'member', got {order!r}")
        self.members = list(members)
        self.kb = kb
        self.strategies = tuple(s for s, on in zip(STRATEGIES, (use_s1, use_s2, use_s3), strict=True) if on)
        self.order = order
        self.s1_beams, self.s2_item_beams, self.s2_lf_beams = s1_beams, s2_item_beams, s2_lf_beams
        self.max_new_tokens, self.answer_max_new_tokens = max_new_tokens, answer_max_new_tokens
        self.batch_size = max(1, int(batch_size))
        self.linking = check_linking(linking)
        self.linkers: list[MentionLinker] = list(linkers)
        if surface_index is not None:
            self.linkers.append(NameLinker(surface_index))
        self.candidates_per_mention = candidates_per_mention
        self.max_readings = max_readings
        self.name_to_ids = name_to_ids if name_to_ids is not None else KBNameLookup(kb)
        self.selector = ExecutionGuidedSelector(kb, workers=workers, count_zero_is_executable=count_zero_is_executable)
        self.paths, self.types = paths, types
        on = [name for name, step in (("path_fallback", paths), ("answer_type", types)) if step is not None]
        self.form = form or Form("tfs", tuple(on))

    def steps(self) -> list[tuple[str, ChainMember]]:
        """The (strategy, member) tries in order (members lacking a strategy's tasks are skipped).

        With the ``path_fallback`` extension, its ``paths`` step comes before the first S3 try
        (last when there is none).
        """
        if self.order == "strategy":
            pairs = [(s, m) for s in self.strategies for m in self.members]
        else:
            pairs = [(s, m) for m in self.members for s in self.strategies]
        found = [(s, m) for s, m in pairs if m.has(s)]
        if self.paths is not None:
            at = next((i for i, (s, _) in enumerate(found) if s == "s3"), len(found))
            found.insert(at, (PATHS, self.members[0]))
        return found

    # ------------------------------------------------------------------ linking and execution

    def _linking(self, ex: KBQAExample, mentions: Sequence[str]) -> tuple[dict, list[tuple[str, str]]]:
        """The example's own entities (as ``linking`` allows) and the linkers' (id, mention) pairs."""
        labels = inference_view(ex, self.linking).entity_labels()
        wanted = list(dict.fromkeys(m for m in mentions if m))
        merged = merge_links([linker.link(ex, wanted) for linker in self.linkers], self.candidates_per_mention)
        candidates = [(e, mention) for mention, ids in merged.items() for e in ids]
        return invert_labels(labels), candidates

    def _execute(self, ex: KBQAExample, beams: Sequence[str], mentions: Sequence[str]) -> tuple[Any, int | None]:
        """Execute every reading of ``beams`` in order; return the selection and the winning beam."""
        label_to_ids, candidates = self._linking(ex, [*mentions, *(m for b in beams for m in mentions_in(b))])
        readings: list[str] = []
        origin: list[int] = []
        for i, beam in enumerate(beams):
            try:
                found = denormalize_all(beam, label_to_ids, candidates, max_variants=self.max_readings)
            except (SExprError, RecursionError):
                found = [beam]  # the selector records why it cannot be read
            readings.extend(found)
            origin.extend([i] * len(found))
        sel = self.selector.select(readings, semantics=ex.semantics, label_to_ids=label_to_ids, candidates=candidates)
        if self.types is not None and sel.executable:  # re-typing an S1/S2 answer; a question none answered: paths
            sel = self.types.after(
                self.selector, sel, readings, question=ex.question, linked=self._linked(ex, candidates),
                semantics=ex.semantics, label_to_ids=label_to_ids,
            )  # fmt: skip
        return sel, None if sel.chosen_beam is None else origin[sel.chosen_beam]

    def _linked(self, ex: KBQAExample, candidates: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
        """The entities whose KB paths the extensions read (id → label), at most :data:`MAX_LINKED`.

        The example's own (as ``linking`` allows), then the linkers' candidates for generated mentions.
        """
        linked = inference_view(ex, self.linking).entity_labels()
        for eid, mention in candidates:
            linked.setdefault(eid, mention)
        return dict(list(linked.items())[:MAX_LINKED])

    def _paths(self, examples: list[KBQAExample], tried: Sequence[Sequence[Attempt]]) -> list[dict[str, Any]]:
        """The ``path_fallback`` step: the best-ranked KB path that executes.

        Its entities: the example's own and those the earlier attempts' mentions link to (TFS links no
        question text of its own).
        """
        chain = AnswerChain(self.selector, self.paths, self.types)
        outcomes = []
        for ex, attempts in zip(examples, tried, strict=True):
            mentions = [m for a in attempts for b in a.beams for m in mentions_in(b)]
            mentions += [m for a in attempts for it in a.items for m in parse_items(it)[1]]
            linked = self._linked(ex, self._linking(ex, mentions)[1])
            sel = chain.select([], question=ex.question, linked=linked, semantics=ex.semantics,
                               label_to_ids=invert_labels(linked))  # fmt: skip
            attempt = Attempt(PATHS, KB_MEMBER, [], sel.executable, None, [], sel.errors[:10])
            outcomes.append({"attempt": attempt, "selection": sel, "answers": list(sel.answers)})
        return outcomes

    # ------------------------------------------------------------------ strategies

    def _try(
        self, strategy: str, member: ChainMember, examples: list[KBQAExample], tried: Sequence[Sequence[Attempt]] = ()
    ) -> list[dict[str, Any]]:
        """Run one strategy of one member on pending questions (``tried``: their attempts so far); one outcome each."""
        questions = [ex.question for ex in examples]
        if strategy == PATHS:
            return self._paths(examples, tried or [[] for _ in examples])
        if strategy == "s3":
            texts = member.run("s3", questions, 1, self.answer_max_new_tokens)
            outcomes = []
            for beams in texts:
                text = beams[0] if beams else ""
                answers = fallback_answers(text, self.name_to_ids) if text.strip() else []
                outcomes.append(
                    {
                        "attempt": Attempt("s3", member.name, list(beams), bool(answers)),
                        "answers": answers,
                        "text": text,
                    }
                )
            return outcomes
        items: list[list[str]] = [[] for _ in examples]
        if strategy == "s1":
            lf_beams = member.run("s1", questions, self.s1_beams, self.max_new_tokens)
        else:
            items = member.run("s2_items", questions, self.s2_item_beams, self.max_new_tokens)
            flat = [
                (k, member.s2_lf_text(q, it))
                for k, (q, its) in enumerate(zip(questions, items, strict=True))
                for it in its
                if it.strip()  # an empty item list gives t2 nothing to work from
            ]
            generated = member.run("s2_lf", [x for _, x in flat], self.s2_lf_beams, self.max_new_tokens)
            lf_beams = [[] for _ in examples]
            for (k, _), beams in zip(flat, generated, strict=True):
                lf_beams[k].extend(beams)
        lf_task = "s1" if strategy == "s1" else "s2_lf"
        lf_beams = [[member.read_lf(lf_task, b) for b in beams] for beams in lf_beams]
        outcomes = []
        for ex, beams, its in zip(examples, lf_beams, items, strict=True):
            mentions = [m for it in its for m in parse_items(it)[1]]
            sel, chosen = self._execute(ex, beams, mentions)
            attempt = Attempt(strategy, member.name, list(beams), sel.executable, chosen, list(its), sel.errors[:10])
            outcomes.append({"attempt": attempt, "selection": sel, "answers": list(sel.answers)})
        return outcomes

    def _finish(
        self, index: int, ex: KBQAExample, attempts: list[Attempt], win: dict[str, Any] | None
    ) -> QuestionResult:
        sel = (win or {}).get("selection")
        attempt = (win or {}).get("attempt")
        row = QuestionResult(
            index=index,
            qid=ex.qid,
            question=ex.question,
            strategy=attempt.strategy if attempt else None,
            member=attempt.member if attempt else None,
            form=self.form.name,
            extensions=list(self.form.extensions),
            answers=list((win or {}).get("answers") or []),
            executable=bool(sel is not None and sel.executable),
            sexpr=sel.chosen_sexpr if sel is not None else None,
            sparql=sel.sparql if sel is not None else None,
            answer_text=(win or {}).get("text"),
            attempts=attempts,
        )
        golds = gold_sexprs(ex)
        em = None
        if golds:
            try:
                em = float(row.sexpr is not None and any(logical_form_em(row.sexpr, g) for g in golds))
            except SExprError:
                em = None
        score = score_question(row.answers, gold_parses(ex), em=em, executable=row.executable)
        row.f1, row.hit1, row.hit1_any, row.em = score.f1, score.hit1, score.hit1_any, score.em
        return row

    def answer(self, examples: Sequence[KBQAExample], offset: int = 0) -> list[QuestionResult]:
        """Answer a batch of questions (rows indexed from ``offset``)."""
        attempts: list[list[Attempt]] = [[] for _ in examples]
        wins: list[dict[str, Any] | None] = [None] * len(examples)
        for strategy, member in self.steps():
            pending = [k for k, w in enumerate(wins) if w is None]
            if not pending:
                break
            outcomes = self._try(strategy, member, [examples[k] for k in pending], [attempts[k] for k in pending])
            for k, outcome in zip(pending, outcomes, strict=True):
                attempts[k].append(outcome["attempt"])
                if outcome["attempt"].answered:
                    wins[k] = outcome
        return [self._finish(offset + k, ex, attempts[k], wins[k]) for k, ex in enumerate(examples)]

    def run(self, examples: Sequence[KBQAExample]) -> FallbackReport:
        """Answer every question (in batches) and compute the metrics."""
        rows: list[QuestionResult] = []
        for start in range(0, len(examples), self.batch_size):
            rows.extend(self.answer(examples[start : start + self.batch_size], offset=start))
            log.info("TFS fallback: %d/%d questions", len(rows), len(examples))
        return FallbackReport(rows, fallback_metrics(rows, [m.name for m in self.members]))

    def close(self) -> None:
        """Stop the selector's thread pool."""
        self.selector.close()


def fallback_metrics(rows: Sequence[QuestionResult], members: Sequence[str] = ()) -> dict[str, float]:
    """Question-averaged metrics of fallback rows.

    Returns:
        ``f1``, ``hit1``, ``hit1_any``, ``executable`` (share answered by an executed logical
        form), ``em`` (over questions with a gold S-expression, when any), ``n``, and
        ``share/s1``, ``share/s2``, ``share/s3``, ``share/none`` and ``share/member/<name>``.
    """
    n = len(rows)
    denom = max(n, 1)
    metrics = {key: sum(float(getattr(r, key)) for r in rows) / denom for key in ("f1", "hit1", "hit1_any")}
    metrics["executable"] = sum(r.executable for r in rows) / denom
    measured = [r.em for r in rows if r.em is not None]
    if measured:
        metrics["em"] = sum(measured) / len(measured)
    metrics["n"] = float(n)
    used = (*STRATEGIES, PATHS) if any(r.strategy == PATHS for r in rows) else STRATEGIES
    for strategy in (*used, None):
        metrics[f"share/{strategy or 'none'}"] = sum(r.strategy == strategy for r in rows) / denom
    for name in members:
        metrics[f"share/member/{name}"] = sum(r.member == name for r in rows) / denom
    return metrics


__all__ = [
    "STRATEGIES",
    "Attempt",
    "ChainMember",
    "FallbackReport",
    "QuestionResult",
    "TFSFallbackPipeline",
    "fallback_metrics",
    "LEGACY_FORMAT",
    "load_instruction_settings",
    "member_from_adapters",
    "resolve_format",
    "mentions_in",
]
