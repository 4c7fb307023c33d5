"""TFS-KBQA inference: S1 → S2 → S3 fallback over one or several fine-tuned models.

Per question, in order (each strategy can be switched off — the paper's w/o S1/S2/S3 ablations):

1. **S1** — the model writes beams of normalised logical forms with entity *mentions*; each
   beam's mentions are linked to KB ids (the example's labels first, then an entity surface
   index; several candidates per mention, every reading tried in order via
   :func:`~kbqa_lit.kb.normalize.denormalize_all`) and the readings are executed in beam order
   (:class:`~kbqa_lit.pipelines.execution_guided.ExecutionGuidedSelector`: the first reading
   with a non-empty answer wins);
2. **S2** — step t1 writes ``relations ; mentions``, step t2 writes logical forms from the
   question and those items; linked and executed the same way (t1's mentions are linked too);
3. **S3** — the model writes the answer names; each is mapped to KB ids by exact name when
   possible (:func:`~kbqa_lit.pipelines.execution_guided.fallback_answers`), else kept as text.

A *chain* of several members (e.g. a 13B model first, then a 7B one) tries each strategy with
every member before the next strategy (``order="strategy"``) or runs every strategy of a member
before the next member (``order="member"``). Every row records which strategy and member
answered and every attempt; the report adds F1, Hit@1 (random-pick and any), logical-form EM,
the executable rate and each strategy's share.

A member's *generators* are objects with ``generate(batch, num_beams=, num_return_sequences=,
max_new_tokens=) -> list[list[str]]`` (:class:`~kbqa_lit.modules.tfs.lora_causal_lm.LoraCausalLM`,
one per task or one for all) and an optional ``tokenizer``; prompts are built with the
:class:`~kbqa_lit.datamodules.tfs.instruction_batches.InstructionEncoder` settings the adapter was
trained with. Batches also carry ``task``, ``inputs`` and ``prompts`` as plain lists.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbqa_lit.data.gold import gold_parses, gold_sexprs
from kbqa_lit.data.linking import check_linking, inference_view
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.tfs.prompts import parse_items, s2_lf_input
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionEncoder
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.normalize import denormalize_all, invert_labels
from kbqa_lit.kb.store import KnowledgeBase
from kbqa_lit.metrics.functional import score_question
from kbqa_lit.metrics.lf_match import logical_form_em
from kbqa_lit.pipelines.execution_guided import ExecutionGuidedSelector, KBNameLookup, fallback_answers

log = logging.getLogger(__name__)

STRATEGIES: tuple[str, ...] = ("s1", "s2", "s3")
#: The instruction tasks each strategy needs.
STRATEGY_TASKS: dict[str, tuple[str, ...]] = {"s1": ("s1",), "s2": ("s2_items", "s2_lf"), "s3": ("s3",)}
_SPAN_RE = re.compile(r"\[\s*(.*?)\s*\](?=\s|$|\)|\[)")
_SCHEMA_SEP_RE = re.compile(r"\s,\s")


class Generator(Protocol):
    """What a chain member's model must offer."""

    def generate(
        self, batch: dict[str, Any], num_beams: int, num_return_sequences: int, max_new_tokens: int
    ) -> list[list[str]]:
        """Per prompt of ``batch``, the generated responses in beam order."""
        ...


def mentions_in(text: str) -> list[str]:
    """Entity mentions of a normalised logical form (bracketed spans that are not schema items)."""
    return list(dict.fromkeys(s for s in _SPAN_RE.findall(text) if s and not _SCHEMA_SEP_RE.search(s)))


@dataclass
class ChainMember:
    """One trained model of the fallback chain: a generator (and prompt encoder) per task.

    Attributes:
        name: Reported in the rows (``member``) and the per-member shares.
        generators: Task (``s1``, ``s2_items``, ``s2_lf``, ``s3``) → generator.
        encoders: Task → prompt encoder (its settings must be those of training); a task
            without one gets default settings and the generator's ``tokenizer``.
    """

    name: str
    generators: dict[str, Generator]
    encoders: dict[str, InstructionEncoder] = field(default_factory=dict)

    def has(self, strategy: str) -> bool:
        """Whether this member can run ``strategy`` (it has every task the strategy needs)."""
        return all(t in self.generators for t in STRATEGY_TASKS[strategy])

    def run(self, task: str, inputs: Sequence[str], num_beams: int, max_new_tokens: int) -> list[list[str]]:
        """Generate ``num_beams`` responses per input for ``task``."""
        if not inputs:
            return []
        gen = self.generators[task]
        encoder = self.encoders.get(task)
        if encoder is None:
            encoder = self.encoders[task] = InstructionEncoder(getattr(gen, "tokenizer", None))
        batch = encoder.prompt_batch(task, list(inputs))
        out = gen.generate(batch, num_beams=num_beams, num_return_sequences=num_beams, max_new_tokens=max_new_tokens)
        if len(out) != len(inputs):
            raise ValueError(f"{self.name}/{task}: {len(out)} generations for {len(inputs)} inputs")
        return [list(b) for b in out]


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

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass
class FallbackReport:
    """Rows (one per question, input order) and the question-averaged metrics."""

    rows: list[QuestionResult]
    metrics: dict[str, float]

    def write_jsonl(self, path: str | Path) -> Path:
        """Write the rows as JSON lines."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as fh:
            for row in self.rows:
                fh.write(json.dumps(row.to_dict(), ensure_ascii=False) + "\n")
        return out


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
        linking: Which of the example's entities link mentions before the surface index
            (:func:`kbqa_lit.data.linking.inference_view`): ``predicted`` (its refined or linked
            candidates only), ``dataset-given`` (its topic entities) or ``gold`` (an oracle:
            topic entities and the gold form's labels).
        surface_index: Mention → KB ids (e.g. :class:`KBNameLookup`); ``None``: none.
        candidates_per_mention: Ids taken per mention from the surface index.
        max_readings: Readings (choices of ids) executed per logical form.
        name_to_ids: Exact name → ids for S3 answers (default: a :class:`KBNameLookup` on ``kb``).
        count_zero_is_executable: Whether a ``COUNT`` of 0 counts as executed.
        workers: Queries in flight at once.
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
        surface_index: Mapping[str, Sequence[str]] | None = None,
        candidates_per_mention: int = 5,
        max_readings: int = 8,
        name_to_ids: Mapping[str, Sequence[str]] | None = None,
        count_zero_is_executable: bool = False,
        workers: int = 1,
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
        self.surface_index = surface_index
        self.candidates_per_mention = candidates_per_mention
        self.max_readings = max_readings
        self.name_to_ids = name_to_ids if name_to_ids is not None else KBNameLookup(kb)
        self.selector = ExecutionGuidedSelector(kb, workers=workers, count_zero_is_executable=count_zero_is_executable)

    def steps(self) -> list[tuple[str, ChainMember]]:
        """The (strategy, member) tries in order (members lacking a strategy's tasks are skipped)."""
        if self.order == "strategy":
            pairs = [(s, m) for s in self.strategies for m in self.members]
        else:
            pairs = [(s, m) for m in self.members for s in self.strategies]
        return [(s, m) for s, m in pairs if m.has(s)]

    # ------------------------------------------------------------------ linking and execution

    def _linking(self, ex: KBQAExample, mentions: Sequence[str]) -> tuple[dict, list[tuple[str, str]]]:
        labels = inference_view(ex, self.linking).entity_labels()
        candidates: list[tuple[str, str]] = []
        if self.surface_index is not None:
            for mention in dict.fromkeys(mentions):
                try:
                    ids = list(self.surface_index.get(mention) or ())
                except Exception:  # a lookup that fails (a store hiccup) links nothing
                    ids = []
                candidates.extend((e, mention) for e in ids[: self.candidates_per_mention])
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
        return sel, None if sel.chosen_beam is None else origin[sel.chosen_beam]

    # ------------------------------------------------------------------ strategies

    def _try(self, strategy: str, member: ChainMember, examples: list[KBQAExample]) -> list[dict[str, Any]]:
        """Run one strategy of one member on pending questions; one outcome dict per question."""
        questions = [ex.question for ex in examples]
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
                (k, s2_lf_input(q, it))
                for k, (q, its) in enumerate(zip(questions, items, strict=True))
                for it in its
                if it.strip()  # an empty item list gives t2 nothing to work from
            ]
            generated = member.run("s2_lf", [x for _, x in flat], self.s2_lf_beams, self.max_new_tokens)
            lf_beams = [[] for _ in examples]
            for (k, _), beams in zip(flat, generated, strict=True):
                lf_beams[k].extend(beams)
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
            outcomes = self._try(strategy, member, [examples[k] for k in pending])
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
    for strategy in (*STRATEGIES, None):
        metrics[f"share/{strategy or 'none'}"] = sum(r.strategy == strategy for r in rows) / denom
    for name in members:
        metrics[f"share/member/{name}"] = sum(r.member == name for r in rows) / denom
    return metrics


def load_instruction_settings(adapter_dir: str | Path) -> dict[str, Any]:
    """Prompt settings saved next to an adapter (``instruction.json``), without ``tasks``; ``{}`` if none."""
    path = Path(adapter_dir) / "instruction.json"
    if not path.is_file():
        return {}
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings.pop("tasks", None)
    return settings


def member_from_adapters(
    name: str, adapters: Mapping[str, str | Path], base: str | None = None, **overrides: Any
) -> ChainMember:
    """Load a chain member from adapter folders written by ``AdapterExport`` / ``save_adapter``.

    Args:
        name: The member's name.
        adapters: Task → adapter folder; one folder may serve several tasks (loaded once).
        base: Base model name or folder (default: the one each adapter records).
        **overrides: :class:`~kbqa_lit.modules.tfs.lora_causal_lm.LoraCausalLM` arguments
            (``torch_dtype``...).
    """
    from kbqa_lit.modules.tfs.lora_causal_lm import LoraCausalLM

    loaded: dict[str, Any] = {}
    generators: dict[str, Generator] = {}
    encoders: dict[str, InstructionEncoder] = {}
    for task, folder in adapters.items():
        key = str(Path(folder).resolve())
        if key not in loaded:
            loaded[key] = LoraCausalLM.from_adapter(folder, base=base, **overrides).eval()
        model = loaded[key]
        generators[task] = model
        encoders[task] = InstructionEncoder(model.tokenizer, **load_instruction_settings(folder))
    return ChainMember(name, generators, encoders)


__all__ = [
    "STRATEGIES",
    "Attempt",
    "ChainMember",
    "FallbackReport",
    "QuestionResult",
    "TFSFallbackPipeline",
    "fallback_metrics",
    "load_instruction_settings",
    "member_from_adapters",
    "mentions_in",
]
