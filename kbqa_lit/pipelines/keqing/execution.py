"""Executing one parsed decomposition: seeds → matched templates → chains → candidates.

Sub-questions run in order. A sub-question's seeds are entity slots (``[E0]``: the ids linked to
the question's first mention), entity names (matched to the linked entities' labels, else looked
up in the KB's name index) or ``<ANSWER>-k`` (the result *paths* of sub-question ``k``, so the
dataset's answer semantics hold over the whole question's path). Its text is matched to the
top-K templates; each template's chains are executed from the seeds; ``select`` decides which
templates' results the sub-question keeps. A text that is a chain (``r1> <r2``, the
chain-generating ablation) is executed as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.data.keqing.decomposition import ANSWER_SEED, SLOT, Decomposition, SubQuestion
from kbqa_lit.data.keqing.templates import TemplateBank
from kbqa_lit.kb.index.entity_index import normalize_surface
from kbqa_lit.kb.lf.chains import Chain, chain_text, parse_chain
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor, ChainResult, Path

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
        paths: The kept paths (seed → answer).
        triples: The triples on the kept paths.
        answers: The distinct end nodes of the kept paths.
        cut: Paths dropped by the cap.
        error: Why the step could not run (an unresolved seed...), else ``None``.
    """

    subquestion: SubQuestion
    seeds: list[str] = field(default_factory=list)
    templates: list[tuple[str, float]] = field(default_factory=list)
    template: str | None = None
    chains: list[Chain] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    cut: int = 0
    error: str | None = None

    def to_json(self, max_answers: int = 20) -> dict[str, Any]:
        """A JSON-ready record (answers capped at ``max_answers``, with their count)."""
        return {
            **self.subquestion.to_json(),
            "seeds": self.seeds[:max_answers],
            "templates": [[t, round(s, 4)] for t, s in self.templates],
            "template": self.template,
            "chains": [chain_text(c) for c in self.chains],
            "answers": self.answers[:max_answers],
            "n_answers": len(self.answers),
            "cut": self.cut,
            "error": self.error,
        }


def is_chain_text(text: str) -> bool:
    """Whether a sub-question text is written as a chain (``r1> <r2``)."""
    return bool(_CHAIN_TEXT.match(text.strip()))


class DecompositionExecutor:
    """Run decompositions against a template bank and a store.

    Args:
        bank: The template bank.
        executor: Chain execution over the store.
        select: ``first-nonempty`` or ``union`` (see :class:`~kbqa_lit.pipelines.keqing.config.RetrievalConfig`).
        lookup: Name → entity ids (the KB's name index), for name seeds no linked entity carries.
    """

    def __init__(
        self,
        bank: TemplateBank,
        executor: ChainExecutor,
        select: str = "first-nonempty",
        lookup: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.bank = bank
        self.templates = bank.templates
        self.executor = executor
        self.select = select
        self.lookup = lookup

    def _seed_paths(
        self, sub: SubQuestion, slots: Sequence[Sequence[str]], labels: Mapping[str, str], done: Mapping[int, StepLog]
    ) -> tuple[list[Path], str | None]:
        starts: list[Path] = []
        for seed in sub.seeds:
            if (m := ANSWER_SEED.match(seed)) is not None:
                dep = done.get(int(m.group(1)))
                if dep is None:
                    return [], f"seed {seed} names a sub-question that has not run"
                starts.extend(dep.paths)
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
    ) -> list[StepLog]:
        """Execute one question's sub-questions in order.

        Args:
            decomposition: The parsed decomposition (``ok``).
            matches: Per sub-question, its top-K ``(template index, score)``.
            slots: Per mention slot ``[Ek]``, its linked entity ids.
            labels: Linked entity id → label (for name seeds).

        Returns:
            One :class:`StepLog` per sub-question; the last one holds the candidates.
        """
        done: dict[int, StepLog] = {}
        logs: list[StepLog] = []
        for sub, found in zip(decomposition.subquestions, matches, strict=True):
            log = StepLog(sub, templates=[(self.templates[i], s) for i, s in found])
            starts, log.error = self._seed_paths(sub, slots, labels, done)
            log.seeds = list(dict.fromkeys(p[-1] for p in starts))
            if log.error is None:
                self._execute(log, starts, self._candidates(sub, found))
            done[sub.qid] = log
            logs.append(log)
        return logs

    def _execute(self, log: StepLog, starts: list[Path], candidates: list[tuple[str | None, list[Chain]]]) -> None:
        for template, chains in candidates:
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
        log.paths = list(dict.fromkeys(log.paths))
        log.triples = list(dict.fromkeys(log.triples))
        log.answers = list(dict.fromkeys(p[-1] for p in log.paths))


__all__ = ["DecompositionExecutor", "StepLog", "is_chain_text"]
