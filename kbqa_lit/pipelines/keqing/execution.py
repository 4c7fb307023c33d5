"""Executing one parsed decomposition: seeds → matched templates → chains → candidates.

Sub-questions run in order. A sub-question's seeds are entity slots (``[E0]``: the ids linked to
the question's first mention), entity names (matched to the linked entities' labels, else looked
up in the KB's name index) or ``<ANSWER>-k`` (the result *paths* of sub-question ``k`` — those
ending in its chosen answers when it was reasoned over — so the dataset's answer semantics hold over
the whole question's path). Its text is matched to the
top-K templates; each template's chains are executed from the seeds; ``select`` decides which
templates' results the sub-question keeps. With a dense retriever
(:class:`~kbqa_lit.pipelines.keqing.dense.DenseHopRetriever`, the paper's dense retrieval) the one-hop
chains from the step's start nodes nearest its text are executed too and extend its candidates. A
text that is a chain (``r1> <r2``, the chain-generating ablation) is executed as it is.

Per-step reasoning (the paper's Eq. 4): :meth:`DecompositionExecutor.run_many` runs the questions of
a batch in rounds (round ``r``: every question's ``r``-th sub-question; dependencies only point
backwards) and, after each round, hands the round's steps to a ``choose`` callable (one batched
reasoner call). A step's ``chosen`` answers are then the reasoner's answers among its candidates,
and only the paths that end in them seed the sub-questions that depend on it. Without ``choose``
every candidate flows on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.data.keqing.decomposition import ANSWER_SEED, SLOT, Decomposition, SubQuestion
from kbqa_lit.data.keqing.templates import TemplateBank
from kbqa_lit.errors import StoreError, UserInputError, check_choice
from kbqa_lit.kb.index.entity_index import normalize_surface
from kbqa_lit.kb.lf.chains import Chain, chain_text, parse_chain
from kbqa_lit.pipelines.keqing.dense import DenseHopRetriever
from kbqa_lit.pipelines.keqing.reasoning import ReasoningResult
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor, ChainResult, Path

_log = logging.getLogger(__name__)
#: Which matched templates' results a sub-question keeps (the paper's first).
SELECTS = ("union", "first-nonempty")
#: Per-step reasoning: the steps of one round → one reasoning result each, in order.
StepChooser = Callable[[Sequence["StepLog"]], Sequence[ReasoningResult]]
_CHAIN_TEXT = re.compile(r"^(\S+>|<\S+)( (\S+>|<\S+))*$")


@dataclass
class StepLog:
    """What one sub-question did.

    Attributes:
        subquestion: The sub-question as parsed.
        seeds: The seed entity ids (or the dependency's answers) it started from.
        templates: ``(template, score)`` of the top-K matches, best first (empty for a chain text).
        template: The template whose results were kept (``None``: none reached anything).
        chains: The chains whose results were kept.
        dense: ``(chain, cosine)`` of the chains the dense retriever added (they are in ``chains``
            when they reached something).
        paths: The kept paths (seed → answer).
        triples: The triples on the kept paths.
        answers: The distinct end nodes of the kept paths (the step's candidates).
        cut: Paths dropped by the cap.
        error: Why the step could not run (an unresolved seed...), else ``None``.
        chosen: The reasoner's answers among ``answers`` (per-step reasoning), in its order;
            ``None`` when the step was not reasoned over (every candidate flows on).
        reasoning: The reasoner's result for this step (raw output, error), or ``None``.
    """

    subquestion: SubQuestion
    seeds: list[str] = field(default_factory=list)
    templates: list[tuple[str, float]] = field(default_factory=list)
    template: str | None = None
    chains: list[Chain] = field(default_factory=list)
    dense: list[tuple[Chain, float]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    cut: int = 0
    error: str | None = None
    chosen: list[str] | None = None
    reasoning: ReasoningResult | None = None

    @property
    def outputs(self) -> list[str]:
        """What the step passes on: the chosen answers when reasoned over, else every candidate."""
        return self.answers if self.chosen is None else self.chosen

    def output_paths(self) -> list[Path]:
        """The paths that seed a dependent sub-question: those ending in :attr:`outputs`."""
        if self.chosen is None:
            return self.paths
        keep = set(self.chosen)
        return [p for p in self.paths if p[-1] in keep]

    def choose(self, result: ReasoningResult) -> None:
        """Record the reasoner's result; :attr:`chosen` keeps its answers that are candidates."""
        candidates = set(self.answers)
        self.reasoning = result
        self.chosen = [a for a in dict.fromkeys(result.answers) if a in candidates]

    def to_json(self, max_answers: int = 20) -> dict[str, Any]:
        """A JSON-ready record (answers capped at ``max_answers``, with their count)."""
        return {
            **self.subquestion.to_json(),
            "seeds": self.seeds[:max_answers],
            "templates": [[t, round(s, 4)] for t, s in self.templates],
            "template": self.template,
            "chains": [chain_text(c) for c in self.chains],
            "dense": [[chain_text(c), round(s, 4)] for c, s in self.dense],
            "answers": self.answers[:max_answers],
            "n_answers": len(self.answers),
            "cut": self.cut,
            "error": self.error,
            "chosen": None if self.chosen is None else self.chosen[:max_answers],
            "n_chosen": None if self.chosen is None else len(self.chosen),
            "reasoning": None if self.reasoning is None else {"raw": self.reasoning.raw, "error": self.reasoning.error},
        }


def is_chain_text(text: str) -> bool:
    """Whether a sub-question text is written as a chain (``r1> <r2``)."""
    return bool(_CHAIN_TEXT.match(text.strip()))


class DecompositionExecutor:
    """Run decompositions against a template bank and a store.

    Args:
        bank: The template bank.
        executor: Chain execution over the store.
        select: ``union`` (the paper's: the chains of all top-K templates together give the
            candidates) or ``first-nonempty`` (ours: the best-ranked template whose chains reach
            something); see :class:`~kbqa_lit.pipelines.keqing.config.RetrievalConfig`.
        lookup: Name → entity ids (the KB's name index), for name seeds no linked entity carries.
        dense: Dense retrieval beside the templates' chains (``None``: the templates' chains only).

    Raises:
        UserInputError: For an unknown ``select``.
    """

    def __init__(
        self,
        bank: TemplateBank,
        executor: ChainExecutor,
        select: str = "union",
        lookup: Callable[[str], list[str]] | None = None,
        dense: DenseHopRetriever | None = None,
    ) -> None:
        check_choice("retrieval select", select, SELECTS)
        self.bank = bank
        self.templates = bank.templates
        self.executor = executor
        self.select = select
        self.lookup = lookup
        self.dense = dense

    def _seed_paths(
        self, sub: SubQuestion, slots: Sequence[Sequence[str]], labels: Mapping[str, str], done: Mapping[int, StepLog]
    ) -> tuple[list[Path], str | None]:
        starts: list[Path] = []
        for seed in sub.seeds:
            if (m := ANSWER_SEED.match(seed)) is not None:
                dep = done.get(int(m.group(1)))
                if dep is None:
                    return [], f"seed {seed} names a sub-question that has not run"
                starts.extend(dep.output_paths())
            elif (m := SLOT.match(seed)) is not None:
                k = int(m.group(1))
                if k >= len(slots):
                    return [], f"seed {seed}: the question has {len(slots)} linked mention(s)"
                starts.extend(self.executor.seed_paths(slots[k]))
            else:
                want = normalize_surface(seed)
                ids = [eid for eid, label in labels.items() if normalize_surface(label) == want]
                if not ids and self.lookup is not None:
                    ids = self.lookup(seed)
                if not ids:
                    return [], f"seed {seed!r} links to no entity"
                starts.extend(self.executor.seed_paths(ids))
        return list(dict.fromkeys(starts)), None

    def _candidates(
        self, sub: SubQuestion, matches: Sequence[tuple[int, float]]
    ) -> list[tuple[str | None, list[Chain]]]:
        if is_chain_text(sub.text):
            return [(None, [parse_chain(sub.text)])]
        return [(self.templates[i], self.bank.chains_of(self.templates[i])) for i, _ in matches]

    def run(
        self,
        decomposition: Decomposition,
        matches: Sequence[Sequence[tuple[int, float]]],
        slots: Sequence[Sequence[str]],
        labels: Mapping[str, str],
        choose: StepChooser | None = None,
    ) -> list[StepLog]:
        """Execute one question's sub-questions in order (see :meth:`run_many`).

        Args:
            decomposition: The parsed decomposition (``ok``).
            matches: Per sub-question, its top-K ``(template index, score)``.
            slots: Per mention slot ``[Ek]``, its linked entity ids.
            labels: Linked entity id → label (for name seeds).
            choose: Per-step reasoning (``None``: every candidate flows on).

        Returns:
            One :class:`StepLog` per sub-question; the last one holds the candidates.
        """
        return self.run_many([decomposition], [matches], [slots], [labels], choose)[0]

    def run_many(
        self,
        decompositions: Sequence[Decomposition],
        matches: Sequence[Sequence[Sequence[tuple[int, float]]]],
        slots: Sequence[Sequence[Sequence[str]]],
        labels: Sequence[Mapping[str, str]],
        choose: StepChooser | None = None,
    ) -> list[list[StepLog]]:
        """Execute a batch of decompositions in rounds, reasoning per step when ``choose`` is given.

        Round ``r`` executes the ``r``-th sub-question of every question that has one; then
        ``choose`` gets the round's steps that ran without error (one call, parallel results) and
        each such step keeps its :attr:`StepLog.chosen` answers. A ``<ANSWER>-k`` seed starts from
        the paths of sub-question ``k`` that end in its outputs (:meth:`StepLog.output_paths`).

        Args:
            decompositions: Parsed decompositions (``ok``), one per question.
            matches: Per question, per sub-question, its top-K ``(template index, score)``.
            slots: Per question, per mention slot ``[Ek]``, its linked entity ids.
            labels: Per question, linked entity id → label (for name seeds).
            choose: Steps → one :class:`~kbqa_lit.pipelines.keqing.reasoning.ReasoningResult`
                each (``None``: no per-step reasoning).

        Returns:
            Per question, one :class:`StepLog` per sub-question.

        Raises:
            UserInputError: When the sequences differ in length, or ``choose`` returns a result
                count other than the steps it was given.
        """
        n = len(decompositions)
        if any(len(x) != n for x in (matches, slots, labels)):
            raise UserInputError(
                f"decompositions, matches, slots and labels differ in length: "
                f"{[len(x) for x in (decompositions, matches, slots, labels)]}"
            )
        done: list[dict[int, StepLog]] = [{} for _ in range(n)]
        logs: list[list[StepLog]] = [[] for _ in range(n)]
        rounds = max((len(d.subquestions) for d in decompositions), default=0)
        for r in range(rounds):
            ran: list[StepLog] = []
            for i, d in enumerate(decompositions):
                if r >= len(d.subquestions):
                    continue
                sub, found = d.subquestions[r], matches[i][r]
                log = StepLog(sub, templates=[(self.templates[j], s) for j, s in found])
                starts, log.error = self._seed_paths(sub, slots[i], labels[i], done[i])
                log.seeds = list(dict.fromkeys(p[-1] for p in starts))
                if log.error is None:
                    self._execute(log, starts, self._candidates(sub, found))
                    self._execute_dense(log, starts)
                    ran.append(log)
                done[i][sub.qid] = log
                logs[i].append(log)
            if choose is not None and ran:
                results = list(choose(ran))
                if len(results) != len(ran):
                    raise UserInputError(f"the step reasoner returned {len(results)} results for {len(ran)} steps")
                for log, result in zip(ran, results, strict=True):
                    log.choose(result)
        return logs

    def _execute(self, log: StepLog, starts: list[Path], candidates: list[tuple[str | None, list[Chain]]]) -> None:
        ran: set[Chain] = set()
        for template, all_chains in candidates:
            chains = [c for c in all_chains if c not in ran]
            ran.update(chains)
            results: list[ChainResult] = [self.executor.execute(starts, c) for c in chains]
            kept = [(c, r) for c, r in zip(chains, results, strict=True) if r.answers]
            log.cut += sum(r.cut for r in results)
            if not kept:
                continue
            if log.template is None:
                log.template = template
            log.chains.extend(c for c, _ in kept)
            for _, r in kept:
                log.paths.extend(r.paths)
                log.triples.extend(r.triples)
            if self.select == "first-nonempty":
                break
        self._finish(log)

    def _execute_dense(self, log: StepLog, starts: list[Path]) -> None:
        """Add the dense retriever's chains (those not run already) to the step's results."""
        if self.dense is None or is_chain_text(log.subquestion.text) or not starts:
            return
        try:
            log.dense = self.dense.chains(log.subquestion.text, [p[-1] for p in starts])
        except StoreError as exc:  # the templates' results stand
            _log.warning("dense retrieval for %r failed: %s", log.subquestion.text, exc)
            return
        for chain, _ in log.dense:
            if chain in log.chains:
                continue
            result = self.executor.execute(starts, chain)
            log.cut += result.cut
            if result.answers:
                log.chains.append(chain)
                log.paths.extend(result.paths)
                log.triples.extend(result.triples)
        self._finish(log)

    @staticmethod
    def _finish(log: StepLog) -> None:
        log.paths = list(dict.fromkeys(log.paths))
        log.triples = list(dict.fromkeys(log.triples))
        log.answers = list(dict.fromkeys(p[-1] for p in log.paths))


__all__ = ["SELECTS", "DecompositionExecutor", "StepChooser", "StepLog", "is_chain_text"]
