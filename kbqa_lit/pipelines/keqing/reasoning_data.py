"""Training rows of Keqing's fine-tuned reasoner: a reasoning prompt over retrieved triples → gold answers.

For each training example whose gold S-expression is a chain, the gold chain is executed from the topic
entity on the KB (the dataset's semantics), retrieved triples fill the paper's reasoning prompt
(:func:`~kbqa_lit.pipelines.keqing.reasoning.reasoning_prompt`, the first ``max_triples``), and the
response lists the gold answers that are a subject or an object of that context, one name per line (the
form :class:`~kbqa_lit.pipelines.keqing.reasoning.LLMReasoner` parses). ``context`` says which question
and which triples a row shows, to match what the reasoner sees at inference (``reasoner.scope``):

- ``step`` (the paper's, the default; inference under ``scope: step``): one row per sub-question of the
  gold decomposition (the bank's step wordings, :func:`~kbqa_lit.data.keqing.targets.gold_subquestions`).
  Row ``k`` reads :func:`~kbqa_lit.pipelines.keqing.reasoning.step_question` (the slot written as the
  step's seeds' names) over the triples of hop ``k`` executed from the paths the previous step passes
  on, and answers the nodes after hop ``k`` on the paths that reach a gold answer (the gold answers
  themselves on the last step). The paths passed on are those ending in what a reasoner reads back from
  the previous row's response (:func:`~kbqa_lit.pipelines.keqing.reasoning.parse_answers`), exactly as
  :meth:`~kbqa_lit.pipelines.keqing.execution.DecompositionExecutor.run_many` passes them;
- ``last`` (inference under ``scope: last``): the whole question over the last hop's triples, executed
  from every path of the hops before;
- ``chain`` (the rows before per-step reasoning): the whole question over the triples of every hop of
  the gold chain.

Examples without a chain, whose chain reaches nothing, or with no gold answer in any context give no row
(counted).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from kbqa_lit.data.keqing.targets import gold_subquestions
from kbqa_lit.data.keqing.templates import TemplateBank, chain_examples
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.lf.chains import Chain
from kbqa_lit.pipelines.keqing.reasoning import Triple, context_names, parse_answers, reasoning_prompt, step_question
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor, Path
from kbqa_lit.pipelines.keqing.verbalize import Labeler, node_name

#: Which question and triples a row shows (the paper's first).
CONTEXTS = ("step", "last", "chain")
Row = dict[str, str | int]


def _response(want: Sequence[str], triples: Sequence[Triple], label: Labeler | None, max_answers: int) -> str:
    """The names of the wanted nodes that are a subject or object of the context, one per line."""
    in_context = {n for s, _, o in triples for n in (s, o)}
    return "\n".join([node_name(n, label) for n in dict.fromkeys(want) if n in in_context][:max_answers])


def _step_rows(
    ex: KBQAExample,
    seed: str,
    chain: Chain,
    gold_paths: list[Path],
    executor: ChainExecutor,
    bank: TemplateBank,
    label: Labeler | None,
    max_triples: int,
    max_answers: int,
) -> list[Row]:
    """One row per hop of the gold decomposition (see the module docstring)."""
    rows: list[Row] = []
    gold = [a.id for a in ex.answers]
    starts = executor.seed_paths([seed])
    for k, (sub, hop) in enumerate(zip(gold_subquestions(chain, bank, "[E0]"), chain, strict=True)):
        result = executor.execute(starts, (hop,))
        triples = result.triples[:max_triples]
        want = gold if k == len(chain) - 1 else [p[k + 1] for p in gold_paths]
        response = _response(want, triples, label, max_answers)
        if not response:
            break
        seeds = list(dict.fromkeys(p[-1] for p in starts))
        question = step_question(sub.text, seeds, label)
        rows.append(
            {
                "qid": ex.qid,
                "step": k,
                "prompt": reasoning_prompt(question, triples, label, max_triples),
                "response": response,
            }
        )
        chosen, _ = parse_answers(response, context_names(triples, label))
        keep = set(chosen)
        starts = [p for p in result.paths if p[-1] in keep]
    return rows


def reasoning_rows(
    examples: Iterable[KBQAExample],
    executor: ChainExecutor,
    label: Labeler | None = None,
    max_triples: int = 30,
    max_answers: int = 10,
    *,
    context: Literal["step", "last", "chain"] = "step",
    bank: TemplateBank | None = None,
) -> tuple[list[Row], Counter[str]]:
    """``{"qid", "prompt", "response"}`` rows (``step`` rows also carry ``"step"``), and the skips by reason.

    Args:
        examples: Training examples (their gold S-expressions and answers are read).
        executor: Chain execution over the KB (the dataset's semantics and path cap).
        label: ``label(id) -> name or None`` for the prompt's names.
        max_triples: Context triples per prompt (the first ones; the reasoner's ``max_triples``).
        max_answers: Names per response.
        context: ``step`` (the paper's), ``last`` or ``chain`` (see the module docstring).
        bank: The template bank the decomposer was trained with (``step``: it words the sub-questions).

    Returns:
        The rows, and how many examples gave none, by reason.

    Raises:
        UserInputError: For an unknown ``context``, or ``context="step"`` without a bank.
    """
    check_choice("reasoning-data context", context, CONTEXTS)
    if context == "step" and bank is None:
        raise UserInputError(
            "reasoning-data context 'step' words each sub-question as the decomposer does and needs the "
            "template bank (bank=TemplateBank.load(templates.json)); context 'last' or 'chain' needs none"
        )
    rows: list[Row] = []
    skipped: Counter[str] = Counter()
    for ex, seed, chain in chain_examples(examples, skipped):
        full = executor.execute(executor.seed_paths([seed]), chain)
        if not full.paths:
            skipped["the gold chain reaches nothing"] += 1
            continue
        gold = {a.id for a in ex.answers}
        made: list[Row] = []
        if context == "step":
            gold_paths = [p for p in full.paths if p[-1] in gold]
            assert bank is not None
            made = _step_rows(ex, seed, chain, gold_paths, executor, bank, label, max_triples, max_answers)
        else:
            if context == "chain":
                triples = full.triples[:max_triples]
            else:
                before = executor.execute(executor.seed_paths([seed]), chain[:-1]).paths if len(chain) > 1 else None
                last = executor.execute(before if before is not None else executor.seed_paths([seed]), chain[-1:])
                triples = last.triples[:max_triples]
            response = _response([a.id for a in ex.answers], triples, label, max_answers)
            if response:
                prompt = reasoning_prompt(ex.question, triples, label, max_triples)
                made = [{"qid": ex.qid, "prompt": prompt, "response": response}]
        if not made:
            skipped["no gold answer in the context"] += 1
        rows.extend(made)
    return rows, skipped


__all__ = ["CONTEXTS", "reasoning_rows"]
