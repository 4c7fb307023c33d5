"""Gold decompositions of training examples: what Keqing's decomposer learns to write.

A chain example (:func:`~kbqa_lit.data.keqing.templates.example_chain`) ``seed -h1-> ... -hn->``
decomposes into ``n`` sub-questions; the k-th asks hop ``hk`` of the answers of the (k-1)-th
(``dep: [k-1]``, seed ``<ANSWER>-(k-1)``), the first of the seed entity. Each is worded by its
hop's template (the step's most frequent training wording, so the target is deterministic; a
MetaQA question type ``a_to_b_to_c`` becomes its one-hop steps), or written as the hop's chain text
for the chain-generating ablation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from kbqa_lit.data.keqing.decomposition import (
    INSTRUCTION,
    SubQuestion,
    chain_decomposition,
    decomposition_prompt,
    render_decomposition,
    slot_name,
    slot_question,
)
from kbqa_lit.data.keqing.templates import TemplateBank, example_chain
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.chains import Chain, chain_text


def gold_subquestions(
    chain: Chain, bank: TemplateBank, seed: str, target: Literal["subquestions", "chains"] = "subquestions"
) -> list[SubQuestion]:
    """The gold decomposition of a chain from ``seed`` (a slot or a name)."""
    texts = [bank.step_template(h) if target == "subquestions" else chain_text((h,)) for h in chain]
    return chain_decomposition(texts, seed)


def topic_mention(ex: KBQAExample, seed: str) -> str:
    """The seed's mention: MetaQA's bracketed name, else the entity's name in the file."""
    return ex.topic_entities.get(seed, "") or seed


def model_question(ex: KBQAExample, mentions: list[str], seed_form: Literal["slot", "name"]) -> str:
    """The question as the decomposer reads it: mentions as slots ``[E0]``..., or as written."""
    return slot_question(ex.question, mentions) if seed_form == "slot" else ex.question


def decomposition_rows(
    examples: Iterable[KBQAExample],
    bank: TemplateBank,
    *,
    target: Literal["subquestions", "chains"] = "subquestions",
    seed_form: Literal["slot", "name"] = "slot",
    instruction: str = INSTRUCTION,
) -> tuple[list[tuple[str, str]], int]:
    """``(prompt, response)`` per chain example, and how many examples were not chains."""
    rows: list[tuple[str, str]] = []
    skipped = 0
    for ex in examples:
        found = example_chain(ex)
        if found is None:
            skipped += 1
            continue
        seed, chain = found
        mention = topic_mention(ex, seed)
        seed_text = slot_name(0) if seed_form == "slot" else mention
        subs = gold_subquestions(chain, bank, seed_text, target)
        prompt = decomposition_prompt(model_question(ex, [mention], seed_form), instruction)
        rows.append((prompt, render_decomposition(subs)))
    return rows, skipped


__all__ = ["decomposition_rows", "gold_subquestions", "model_question", "topic_mention"]
