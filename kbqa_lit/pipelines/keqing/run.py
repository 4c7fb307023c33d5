"""``kbqa keqing run``: Keqing end to end over a question file, per-question records and figures.

Per batch of questions: link (by ``linking.mode``), decompose (the LLM backend, or the gold
decomposition as a labelled oracle), match every sub-question to the top-K templates, execute the
matched templates' chains from the seeds (:class:`~kbqa_lit.pipelines.keqing.execution.DecompositionExecutor`),
reason (``reasoner.scope: step``, the paper's: per sub-question, each step's chosen answers seeding
the steps that depend on it; ``last``: once, over the last sub-question's candidates) and write
the response. Only the inference view
of an example (:func:`~kbqa_lit.data.linking.inference_view`) reaches these stages; the gold
fields are read afterwards, for scoring (:mod:`~kbqa_lit.pipelines.keqing.scoring`).

Each output line holds ``qid``, ``answers`` (ids, best first: ``kbqa eval`` reads the file), the
answer names, the decomposition (raw output and parse error), the execution log (one record per
sub-question), the response, the question's scores and its failure kind.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import atomic_writer
from kbqa_lit.data.keqing.decomposition import (
    INSTRUCTION,
    Decomposition,
    decomposition_prompt,
    parse_decomposition,
    slot_name,
    slot_question,
)
from kbqa_lit.data.keqing.targets import gold_subquestions
from kbqa_lit.data.keqing.templates import TemplateBank, example_chain
from kbqa_lit.data.linking import IndexLinker, inference_view
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.store import is_endpoint
from kbqa_lit.llm.backends import DecompositionBackend
from kbqa_lit.llm.response_cache import DecompositionCache
from kbqa_lit.pipelines.keqing.config import KeqingConfig
from kbqa_lit.pipelines.keqing.constrained import ConstrainedDecomposer
from kbqa_lit.pipelines.keqing.dense import DenseHopRetriever
from kbqa_lit.pipelines.keqing.encoder_reasoner import EncoderReasoner
from kbqa_lit.pipelines.keqing.execution import DecompositionExecutor, StepLog
from kbqa_lit.pipelines.keqing.extensions import ExtensionOutcome, apply_extensions
from kbqa_lit.pipelines.keqing.matching import TemplateMatcher
from kbqa_lit.pipelines.keqing.reasoning import (
    AllCandidatesReasoner,
    LLMReasoner,
    Reasoner,
    ReasoningResult,
    step_question,
)
from kbqa_lit.pipelines.keqing.response import LLMResponder, ResponseStep, render_response
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor
from kbqa_lit.pipelines.keqing.scoring import KeqingScorer
from kbqa_lit.pipelines.selection.chain import AnswerChain
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector
from kbqa_lit.pipelines.selection.forms import resolve_form

log = logging.getLogger(__name__)


def _mentions(view: KBQAExample) -> tuple[list[list[str]], list[str]]:
    """Linked entities grouped by label (one slot per distinct label, in question order)."""
    by_label: dict[str, list[str]] = {}
    for eid, label in view.topic_entities.items():
        by_label.setdefault(label or eid, []).append(eid)
    q = view.question.lower()
    labels = sorted(by_label, key=lambda lb: (q.find(lb.lower()) if lb.lower() in q else len(q), lb))
    return [by_label[lb] for lb in labels], labels


def _load_reasoner(backend: DecompositionBackend) -> None:
    """Load a local reasoner now, so a missing trained model fails before any question is answered.

    Raises:
        UserInputError: When the backend's model cannot be loaded (not trained, not merged, wrong path).
    """
    load = getattr(backend, "load", None)
    if not callable(load):  # a served model: nothing to load here
        return
    try:
        load()
    except (OSError, ValueError) as exc:
        raise UserInputError(
            f"reasoner.backend: no trained reasoner at {backend.model_name!r} ({exc}); fine-tune and merge one "
            "(configs/keqing/reasoner.yaml), point reasoner.backend at a served LLM, or set reasoner.kind: all "
            "(no reasoner: every candidate is kept)"
        ) from None


class KeqingRun:
    """One configured Keqing pipeline (stores and models are opened once).

    Args:
        config: The parsed config.
    """

    def __init__(self, config: KeqingConfig) -> None:
        self.config = config
        self.bank = TemplateBank.load(config.templates)
        self.store = self._open_store()
        # names for linking, name seeds, reasoning prompts and responses: the embedded store's name index
        # (cached beside it); an endpoint (Freebase) has none unless linking needs it, and shows ids
        self.index: EntityIndex | None = None
        if config.linking.mode == "predicted" or not is_endpoint(config.kb.store):
            self.index = EntityIndex.for_store(self.store)
        self.linker = (
            IndexLinker(self.index, config.linking.top_k, config.linking.fuzzy_threshold)
            if config.linking.mode == "predicted"
            else None
        )
        dc = config.decomposer
        self.cache = DecompositionCache(dc.cache) if dc.cache and dc.source == "backend" else None
        mc = config.matching
        self.matcher = TemplateMatcher(self.bank.templates, mc.encoder, mc.cache_dir, device=mc.device)
        executor = ChainExecutor(self.store, config.kb.semantics, config.retrieval.max_paths)
        lookup = (lambda name: [eid for eid, _, _ in self.index.lookup(name)]) if self.index is not None else None
        rt = config.retrieval
        dense = (
            DenseHopRetriever(self.store, rt.dense_k, rt.dense_encoder, is_entity=executor.is_entity)
            if rt.dense_k > 0
            else None
        )
        self.executor = DecompositionExecutor(self.bank, executor, rt.select, lookup, dense)
        rc = config.reasoner
        if rc.kind == "llm":
            if rc.backend is None:
                raise UserInputError("reasoner.kind llm needs reasoner.backend (a trained or served reasoner)")
            _load_reasoner(rc.backend)
            self.reasoner: Reasoner = LLMReasoner(rc.backend, rc.max_triples)
        elif rc.kind == "encoder":
            self.reasoner = EncoderReasoner(rc.encoder, rc.margin)
        else:
            self.reasoner = AllCandidatesReasoner()
        self.responder = LLMResponder(rc.response_backend) if rc.response_backend is not None else None
        #: Seconds spent per stage so far (linking, decomposition, matching, retrieval, reasoning, response, scoring).
        self.seconds: dict[str, float] = {}
        self.form = resolve_form("keqing", config.form, config.extensions)
        self.constrained: ConstrainedDecomposer | None = None
        if self.form.on("constrained_decoding") and dc.source == "backend":
            ConstrainedDecomposer.check_backend(dc.backend)
            self.constrained = ConstrainedDecomposer(self.bank, dc.target)
        paths, types = config.answer_chain.build(self.form)
        on = paths is not None or types is not None
        self.chain = AnswerChain(ExecutionGuidedSelector(self.store), paths, types) if on else None
        self.scorer = KeqingScorer(
            self.bank, executor, self.oracle_inputs(), config.decomposer.target, config.decomposer.seed_form
        )

    def oracle_inputs(self) -> list[str]:
        """The oracle inputs of this run (gold linking, gold decompositions), for labelling."""
        out = ["linking"] if self.config.linking.mode == "gold" else []
        return out + (["decomposition"] if self.config.decomposer.source == "gold" else [])

    def _open_store(self) -> Any:
        return self.config.kb.open()

    def label(self, eid: str) -> str | None:
        """An entity's name (the KB's name index when one is loaded)."""
        return self.index.label(eid) if self.index is not None else None

    # ------------------------------------------------------------------ stages

    def decompose(self, views: Sequence[KBQAExample], golds: Sequence[KBQAExample]) -> list[Decomposition]:
        """Decompositions of a batch (the backend's, or the gold ones for the oracle source)."""
        dc = self.config.decomposer
        if dc.source == "gold":
            out = []
            for ex in golds:
                found = example_chain(ex)
                if found is None:
                    out.append(Decomposition([], "", "gold: not a JOIN chain"))
                    continue
                seed = "[E0]" if dc.seed_form == "slot" else ex.topic_entities.get(found[0], found[0])
                out.append(Decomposition(gold_subquestions(found[1], self.bank, seed, dc.target), "gold"))
            return out
        prompts, seeds = [], []
        for view in views:
            _, labels = _mentions(view)
            question = slot_question(view.question, labels) if dc.seed_form == "slot" else view.question
            prompts.append(decomposition_prompt(question, dc.instruction or INSTRUCTION))
            seeds.append([slot_name(k) for k in range(len(labels))] if dc.seed_form == "slot" else labels)
        return [parse_decomposition(t) for t in self._generate(prompts, seeds)]

    def _generate(self, prompts: list[str], seeds: list[list[str]]) -> list[str]:
        """The decomposer's outputs (constrained by the form), through the response cache when one is configured."""
        backend = self.config.decomposer.backend
        assert backend is not None

        def generate(todo: list[str]) -> list[str]:
            if self.constrained is None:
                return backend.generate(todo)
            of = dict(zip(prompts, seeds, strict=True))
            outcomes = self.constrained.check_backend(backend).generate_outcomes(
                todo, self.constrained.factory([of[p] for p in todo])
            )
            return [o.text or "" for o in outcomes]

        if self.cache is None:
            return generate(prompts)
        key = backend.identity + ("+constrained_decoding" if self.constrained is not None else "")
        found = self.cache.get_many(key, prompts)
        todo = [p for p in dict.fromkeys(prompts) if p not in found]
        if todo:
            fresh = dict(zip(todo, generate(todo), strict=True))
            self.cache.put_many(key, fresh)
            found.update(fresh)
        return [found[p] for p in prompts]

    def reason_steps(self, steps: Sequence[StepLog]) -> list[ReasoningResult]:
        """Per-step reasoning (the paper's Eq. 4): each step's sub-question over its own triples.

        The question is :func:`~kbqa_lit.pipelines.keqing.reasoning.step_question` (the slot written
        as the step's seeds' names); one batched reasoner call for the steps of a round. Its time is
        counted under ``reasoning``.
        """
        start = time.perf_counter()
        results = self.reasoner.reason_many(
            [step_question(x.subquestion.text, x.seeds, self.label) for x in steps],
            [x.answers for x in steps],
            [x.triples for x in steps],
            self.label,
        )
        self._tick("reasoning", start)
        return results

    @staticmethod
    def _step_result(final: StepLog | None) -> ReasoningResult:
        """The answers of a question reasoned per step: its last step's chosen answers."""
        if final is None:
            return ReasoningResult([], None, "no sub-question ran")
        if final.reasoning is None:  # the step could not run (an unresolved seed...)
            return ReasoningResult([], None, final.error or "the last sub-question was not reasoned over")
        return ReasoningResult(list(final.outputs), final.reasoning.raw, final.reasoning.error)

    def _extensions(
        self, views: Sequence[KBQAExample], steps: Sequence[Sequence[StepLog]], results: list[ReasoningResult]
    ) -> dict[str, ExtensionOutcome]:
        """The form's extensions (:mod:`kbqa_lit.pipelines.keqing.extensions`); replaces changed results in place."""
        changed: dict[str, ExtensionOutcome] = {}
        if self.chain is None:
            return changed
        for k, (view, s, result) in enumerate(zip(views, steps, results, strict=True)):
            outcome = apply_extensions(self.chain, view, s, result.answers)
            if outcome.by is not None:
                results[k] = ReasoningResult(outcome.answers, result.raw, result.error)
                changed[view.qid] = outcome
        return changed

    def _tick(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now

    def answer(self, golds: Sequence[KBQAExample]) -> list[dict[str, Any]]:
        """Answer a batch; one JSON-ready record per question (gold read only for scoring)."""
        t = time.perf_counter()
        views = [inference_view(ex, self.config.linking.mode, self.linker) for ex in golds]
        t = self._tick("linking", t)
        decomps = self.decompose(views, golds)
        t = self._tick("decomposition", t)
        texts = [s.text for d in decomps if d.ok for s in d.subquestions]
        flat = iter(self.matcher.top_k(texts, self.config.matching.top_k) if texts else [])
        t = self._tick("matching", t)
        ok = [i for i, d in enumerate(decomps) if d.ok]
        matches = [[next(flat) for _ in decomps[i].subquestions] for i in ok]
        slots = [_mentions(views[i])[0] for i in ok]
        rc = self.config.reasoner
        per_step = rc.kind != "all" and rc.scope == "step"  # kind all: no reasoner, every candidate flows on
        reasoned = self.seconds.get("reasoning", 0.0)
        ran = self.executor.run_many(
            [decomps[i] for i in ok],
            matches,
            slots,
            [views[i].topic_entities for i in ok],
            self.reason_steps if per_step else None,
        )
        steps: list[list[StepLog]] = [[] for _ in decomps]
        for i, s in zip(ok, ran, strict=True):
            steps[i] = s
        t = self._tick("retrieval", t)
        self.seconds["retrieval"] -= self.seconds.get("reasoning", 0.0) - reasoned  # per-step reasoning apart
        finals = [s[-1] if s else None for s in steps]
        if per_step:
            results = [self._step_result(f) for f in finals]
        else:
            results = self.reasoner.reason_many(
                [v.question for v in views],
                [f.answers if f else [] for f in finals],
                [f.triples if f else [] for f in finals],
                self.label,
            )
        t = self._tick("reasoning", t)
        changed = self._extensions(views, steps, results)
        t = self._tick("extensions", t)
        logs = [
            [ResponseStep(x.subquestion.text, tuple(x.chains), tuple(x.outputs), tuple(x.seeds)) for x in s]
            for s in steps
        ]
        if self.responder is not None:
            responses = self.responder.respond_many([v.question for v in views], logs, self.label)
        else:
            responses = [render_response(v.question, lg, self.label) for v, lg in zip(views, logs, strict=True)]
        t = self._tick("response", t)
        records = []
        for ex, d, s, r, response in zip(golds, decomps, steps, results, responses, strict=True):
            record = {
                "qid": ex.qid,
                "question": ex.question,
                "answers": r.answers,
                "answer_names": [self.label(a) or a for a in r.answers[:20]],
                "decomposition": {
                    "raw": d.raw,
                    "error": d.error,
                    "subquestions": [x.to_json() for x in d.subquestions],
                },
                "steps": [x.to_json() for x in s],
                "reasoning": {"raw": r.raw, "error": r.error},
                "response": response,
                **self.form.record(),
            }
            if self.chain is not None:
                done = changed.get(ex.qid)
                record["extension"] = None if done is None else {"by": done.by, "s_expression": done.s_expression}
            record.update(self.scorer.score(ex, d, s, r.answers))
            records.append(record)
        self._tick("scoring", t)
        return records


def _examples(config: KeqingConfig) -> list[KBQAExample]:
    path = Path(config.data.file)
    if not path.is_file():
        raise UserInputError(f"no such question file: {path}")
    examples = list(read_jsonl(path))
    return examples[: config.data.limit] if config.data.limit is not None else examples


def run_keqing(config: KeqingConfig, out: str | None = None) -> dict[str, Any]:
    """Answer every question of the config's file; write the records atomically; return the figures."""
    start = time.perf_counter()
    pipeline = KeqingRun(config)
    examples = _examples(config)
    target = Path(out or config.out)
    batch = max(1, config.decomposer.batch_size)
    with atomic_writer(target) as f:
        for i in range(0, len(examples), batch):
            for record in pipeline.answer(examples[i : i + batch]):
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
            log.info("answered %d/%d", min(i + batch, len(examples)), len(examples))
    if pipeline.cache is not None:
        pipeline.cache.close()
    summary = pipeline.scorer.summary()
    seconds = time.perf_counter() - start
    summary.update(
        {
            "questions": len(examples),
            "out": str(target),
            "seconds": round(seconds, 1),
            "questions_per_s": round(len(examples) / seconds, 2) if seconds else None,
            "stage_seconds": {k: round(v, 2) for k, v in pipeline.seconds.items()},
            "oracle_inputs": pipeline.oracle_inputs(),
        }
    )
    return summary


__all__ = ["KeqingRun", "run_keqing"]
