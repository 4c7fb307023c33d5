"""Training rows of Keqing's fine-tuned reasoner: the reasoning prompt over the gold chain's triples → answers.

For each training example whose gold S-expression is a chain, the gold chain is executed from the topic
entity on the KB (the dataset's semantics), its triples fill the paper's reasoning prompt
(:func:`~kbqa_lit.pipelines.keqing.reasoning.reasoning_prompt`, the first ``max_triples``), and the
response lists the gold answers that are a subject or an object of that context, one name per line (the
form :class:`~kbqa_lit.pipelines.keqing.reasoning.LLMReasoner` parses). Examples without a chain, without
context or with no gold answer in the context give no row (counted).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kbqa_lit.data.keqing.templates import example_chain
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.pipelines.keqing.reasoning import reasoning_prompt
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor
from kbqa_lit.pipelines.keqing.verbalize import Labeler, node_name


def reasoning_rows(
    examples: Iterable[KBQAExample],
    executor: ChainExecutor,
    label: Labeler | None = None,
    max_triples: int = 30,
    max_answers: int = 10,
) -> tuple[list[dict[str, str]], Counter[str]]:
    """``{"qid", "prompt", "response"}`` rows, and the count of examples skipped by reason."""
    rows: list[dict[str, str]] = []
    skipped: Counter[str] = Counter()
    for ex in examples:
        found = example_chain(ex)
        if found is None:
            skipped["not a JOIN chain"] += 1
            continue
        seed, chain = found
        triples = executor.execute(executor.seed_paths([seed]), chain).triples[:max_triples]
        if not triples:
            skipped["the gold chain reaches nothing"] += 1
            continue
        in_context = {n for s, _, o in triples for n in (s, o)}
        names = [node_name(a.id, label) or a.name for a in ex.answers if a.id in in_context][:max_answers]
        if not names:
            skipped["no gold answer in the context"] += 1
            continue
        rows.append(
            {
                "qid": ex.qid,
                "prompt": reasoning_prompt(ex.question, triples, label, max_triples),
                "response": "\n".join(names),
            }
        )
    return rows, skipped


__all__ = ["reasoning_rows"]
