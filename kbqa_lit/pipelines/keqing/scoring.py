"""Scoring Keqing per question and per stage; the figures ``kbqa keqing run`` prints.

Gold fields are read here only, after the prediction. Per question:

- answers: F1, Hits@1 (the reasoner's order), ``hit1_any``;
- decomposition: ``decomposition_em`` — the same sub-question texts (normalised), dependencies and
  seeds as the gold decomposition of the gold chain (template wordings as in training);
  ``decomposition_structure`` — the same number of sub-questions, dependencies and seeds;
- matching: ``template_top1`` / ``template_topk`` — every sub-question's gold hop is a chain of its
  best / any top-K template (only when the structure is right);
- retrieval: ``retrieval_recall`` — the share of gold answers among the last sub-question's
  candidates;
- ``oracle/candidates_hit1`` — Hits@1 of the candidates of the gold chain from the gold topic
  entity (what a reasoner could reach with oracle retrieval), always labelled ``oracle/``;
- ``failure``: the paper's three kinds, in pipeline order — ``decomposition`` (no parse, the wrong
  structure, or a sub-question worded as a template of another step: ``decomposition_right_steps``),
  ``retrieval`` (no gold answer among the candidates), ``reasoning`` (gold among
  the candidates, but the top answer is not gold; or, reasoning per step, no gold answer among the
  last step's candidates because an earlier step's reasoner dropped every node of the gold paths
  that its candidates held) — or ``None`` for a Hits@1 hit.

Figures are averaged overall and per ``meta.hops`` (and ``meta.generalization`` where present).
With oracle inputs (gold linking or decompositions) every figure is named ``oracle/...``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from kbqa_lit.data.keqing.decomposition import Decomposition, SubQuestion
from kbqa_lit.data.keqing.targets import gold_subquestions
from kbqa_lit.data.keqing.templates import TemplateBank, example_chain
from kbqa_lit.data.linking import ORACLE_PREFIX
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.chains import Chain, parse_chain
from kbqa_lit.metrics.functional import score_question
from kbqa_lit.pipelines.keqing.execution import StepLog, is_chain_text
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor

FAILURES = ("decomposition", "retrieval", "reasoning")


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("?", " ").split())


def _structure(sub: SubQuestion) -> tuple[Any, ...]:
    return sub.qid, sub.dep, tuple(_norm(s) for s in sub.seeds)


def _hop_matched(step: StepLog, hop: Chain, bank: TemplateBank, k: int | None) -> bool:
    if is_chain_text(step.subquestion.text):
        return step.chains[:1] == [hop]
    ranked = step.templates if k is None else step.templates[:k]
    return any(hop in bank.chains_of(t) for t, _ in ranked)


class KeqingScorer:
    """Score questions one by one and keep the sums for :meth:`summary`.

    Args:
        bank: The template bank (gold decompositions are worded by it).
        executor: Chain execution (for the oracle candidates of the gold chain).
        oracle: The run's oracle inputs (non-empty: every figure is named ``oracle/...``).
        target: The decomposer's target form (``subquestions`` or ``chains``).
        seed_form: How gold decompositions write the seed (``slot`` or ``name``).
    """

    def __init__(
        self,
        bank: TemplateBank,
        executor: ChainExecutor,
        oracle: Sequence[str] = (),
        target: str = "subquestions",
        seed_form: str = "slot",
    ) -> None:
        self.bank = bank
        self.executor = executor
        self.prefix = ORACLE_PREFIX if oracle else ""
        self.target = target
        self.seed_form = seed_form
        self._templates = {_norm(t): t for t in bank.templates}
        self._sums: dict[str, Counter[str]] = defaultdict(Counter)
        self._failures: dict[str, Counter[str]] = defaultdict(Counter)

    def _owner_misses(self, text: str, hop: Any) -> bool:
        """Whether ``text`` is a known template (or a chain text) that does not ask for ``hop``."""
        if is_chain_text(text):
            return parse_chain(text) != (hop,)
        owner = self._templates.get(_norm(text))
        return owner is not None and (hop,) not in self.bank.chains_of(owner)

    def _decomposition(self, ex: KBQAExample, d: Decomposition, steps: Sequence[StepLog]) -> dict[str, float]:
        found = example_chain(ex)
        if found is None:
            return {}
        seed, chain = found
        seed_text = "[E0]" if self.seed_form == "slot" else ex.topic_entities.get(seed, seed)
        gold = gold_subquestions(chain, self.bank, seed_text, self.target)  # type: ignore[arg-type]
        pred = d.subquestions if d.ok else []
        structure = len(pred) == len(gold) and all(
            _structure(p) == _structure(g) for p, g in zip(pred, gold, strict=True)
        )
        em = structure and all(_norm(p.text) == _norm(g.text) for p, g in zip(pred, gold, strict=True))
        out = {"decomposition_em": float(em), "decomposition_structure": float(structure)}
        if structure:
            # a sub-question worded as another step's template is the decomposer's error, not matching's
            wrong = [p for p, h in zip(pred, chain, strict=True) if self._owner_misses(p.text, h)]
            out["decomposition_right_steps"] = float(not wrong)
        if structure and len(steps) == len(chain):
            out["template_top1"] = float(
                all(_hop_matched(s, (h,), self.bank, 1) for s, h in zip(steps, chain, strict=True))
            )
            out["template_topk"] = float(
                all(_hop_matched(s, (h,), self.bank, None) for s, h in zip(steps, chain, strict=True))
            )
        oracle = self.executor.execute(self.executor.seed_paths([seed]), chain).answers
        gold_ids = [a.id for a in ex.answers]
        out["oracle/candidates_hit1"] = score_question(oracle, [gold_ids], ordered=True).hit1
        return out

    def _reasoner_dropped_gold(self, ex: KBQAExample, steps: Sequence[StepLog]) -> bool:
        """Per-step reasoning: whether a step before the last held a node of a gold path but chose none.

        The gold paths are the gold chain's paths from the gold topic entity that end in a gold
        answer; step ``k``'s gold nodes are their nodes after hop ``k`` (only when the steps are the
        chain's hops, one each).
        """
        if all(s.chosen is None for s in steps[:-1]):
            return False
        found = example_chain(ex)
        if found is None or len(found[1]) != len(steps):
            return False
        seed, chain = found
        gold = {a.id for a in ex.answers}
        paths = [p for p in self.executor.execute(self.executor.seed_paths([seed]), chain).paths if p[-1] in gold]
        for k, step in enumerate(steps[:-1]):
            nodes = {p[k + 1] for p in paths}
            if step.chosen is not None and nodes & set(step.answers) and not nodes & set(step.chosen):
                return True
        return False

    def score(self, ex: KBQAExample, d: Decomposition, steps: Sequence[StepLog], answers: list[str]) -> dict[str, Any]:
        """The question's scores and failure kind (also added to the run's sums)."""
        gold_ids = [a.id for a in ex.answers]
        s = score_question(answers, [gold_ids], ordered=True)
        scores: dict[str, float] = {"f1": s.f1, "hit1": s.hit1, "hit1_any": s.hit1_any}
        candidates = set(steps[-1].answers) if steps else set()
        if gold_ids:
            scores["retrieval_recall"] = len(candidates & set(gold_ids)) / len(set(gold_ids))
        scores["parsed"] = float(d.ok)
        scores.update(self._decomposition(ex, d, steps))
        failure = None
        if s.hit1 < 1.0:
            if (
                not d.ok
                or min(scores.get("decomposition_structure", 1.0), scores.get("decomposition_right_steps", 1.0)) < 1
            ):
                failure = "decomposition"
            elif not candidates & set(gold_ids):
                failure = "reasoning" if self._reasoner_dropped_gold(ex, steps) else "retrieval"
            else:
                failure = "reasoning"
        groups = ["all", f"hops={ex.meta.get('hops', '?')}"]
        if ex.meta.get("generalization"):
            groups.append(f"generalization={ex.meta['generalization']}")
        for g in groups:
            self._sums[g]["n"] += 1
            for key, value in scores.items():
                self._sums[g][key] += value
                self._sums[g][f"n:{key}"] += 1
            if failure:
                self._failures[g][failure] += 1
        return {
            "scores": {f"{self.prefix}{k}" if not k.startswith("oracle/") else k: v for k, v in scores.items()},
            "failure": failure,
        }

    def summary(self) -> dict[str, Any]:
        """Averages per group (``all``, ``hops=N``...) and failure counts."""
        out: dict[str, Any] = {}
        for group, sums in sorted(self._sums.items()):
            figures: dict[str, Any] = {"n": int(sums["n"])}
            for key in sorted(k for k in sums if k != "n" and not k.startswith("n:")):
                name = key if key.startswith("oracle/") else f"{self.prefix}{key}"
                figures[name] = round(sums[key] / max(1, sums[f"n:{key}"]), 4)
            figures["failures"] = {k: self._failures[group][k] for k in FAILURES}
            out[group] = figures
        return out


__all__ = ["FAILURES", "KeqingScorer"]
