"""Training rows of CoQ's trained decomposer, the stand-in for the paper's few-shot LLM on this machine.

The paper decomposes every question with ChatGPT prompted by worked cases (Fig. 3). Without an LLM
with weights here, the ``paper`` form runs the same stage with a small causal LM fine-tuned (LoRA)
on the training split's gold decompositions, named as a stand-in; the real form is one setting away
(``configs/coq/decompose/openai.yaml`` or ``llama2_7b_local.yaml``).

:func:`training_rows` writes one ``{"prompt", "response"}`` row per training example that has a gold
decomposition. The prompt is exactly what ``kbqa decompose`` sends the model at inference (the
config's :class:`~kbqa_lit.pipelines.coq.decomposition.few_shot.DecompositionPrompt`, usually without
cases: the header line); the response is the decomposition's result line in the variant the chain
uses (``placeholders`` by default: a model without world knowledge cannot know intermediate
answers, so it learns to write ``#1``, ``#2``) followed by the ``[SCHEMA]`` part: the topic
entities' names and the gold logical form's relations as short phrases (what the relation
retriever reads as extra queries, :mod:`kbqa_lit.tools.retrieve_tool`). With ``mask_entities`` the topic
entities' mentions are slots ``[E0]``, ``[E1]``... in prompt and response (a small model trained from
scratch learns the structure long before it learns to copy names; at inference ``kbqa decompose``
masks the *linked* entities the same way and puts their names back). The rows are read by
:class:`~kbqa_lit.datamodules.prompt_rows.PromptRowsDataModule`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.data.chain_wording import relation_words, step_wordings
from kbqa_lit.data.entity_slots import mask_text, topic_slots
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.coq.decomposition.chain_gold import fill_chain_decompositions
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt
from kbqa_lit.pipelines.coq.decomposition.variants import apply_variant, check_variant, gold_decomposition


def relation_phrase(relation: str) -> str:
    """A relation id as a schema phrase (``people.person.place_of_birth`` → ``place of birth``)."""
    return relation_words(relation).strip()


def training_response(ex: KBQAExample, variant: str = "placeholders") -> str | None:
    """The decomposition the stand-in learns to write for ``ex`` (``None`` without a usable gold one).

    Args:
        ex: A training example with a gold ``decomposition``.
        variant: ``full``, ``placeholders`` or ``no_answers`` (see
            :mod:`~kbqa_lit.pipelines.coq.decomposition.variants`).
    """
    gold = gold_decomposition(ex, with_relations=True)
    if not gold.ok or not gold.steps:
        return None
    gold.relations = list(dict.fromkeys(relation_phrase(r) for r in gold.relations))
    return apply_variant(gold, variant).render(with_schema=True, with_answers=variant != "no_answers")


def training_rows(
    examples: Iterable[KBQAExample],
    prompt: DecompositionPrompt,
    variant: str = "placeholders",
    mask_entities: bool = False,
) -> tuple[list[dict[str, str]], int]:
    """``({"prompt", "response"}`` rows, examples skipped for lack of a gold decomposition).

    Args:
        examples: Training examples with gold decompositions and topic entities.
        prompt: The prompt ``kbqa decompose`` renders at inference.
        variant: The decomposition variant the model learns to write.
        mask_entities: Write the topic entities' mentions as slots in prompt and response.

    Raises:
        UserInputError: For an unknown variant, or ``none`` (there is nothing to learn).
    """
    check_variant(variant)
    if variant == "none":
        raise UserInputError("training rows need a decomposition variant other than 'none'")
    rows: list[dict[str, str]] = []
    skipped = 0
    for ex in examples:
        response = training_response(ex, variant)
        if response is None:
            skipped += 1
            continue
        slots = topic_slots(ex) if mask_entities else []
        rows.append({"prompt": prompt.render(mask_text(ex.question, slots)), "response": mask_text(response, slots)})
    return rows, skipped


def write_training_rows(
    input_path: str | Path,
    out: str | Path,
    prompt: DecompositionPrompt,
    variant: str = "placeholders",
    mask_entities: bool = False,
    chains_from: str | Path | None = None,
) -> dict[str, int | str | None]:
    """Write the rows of a common-schema file to ``out`` (JSON lines, atomically); return a summary.

    Args:
        input_path: Common-schema examples with gold decompositions.
        out: The rows' file.
        prompt: The prompt ``kbqa decompose`` renders at inference.
        variant: The decomposition variant the model learns to write.
        mask_entities: Write the topic entities' mentions as slots.
        chains_from: A training file whose one-hop questions word each hop: examples without a gold
            decomposition get one from their gold relation chain
            (:mod:`~kbqa_lit.pipelines.coq.decomposition.chain_gold`; MetaQA, PathQuestion).

    Raises:
        UserInputError: When a file is missing or no example has a gold decomposition.
    """
    path = Path(input_path)
    for file in (path, *([Path(chains_from)] if chains_from else [])):
        if not file.is_file():
            raise UserInputError(f"no such example file: {file}")
    examples = list(read_jsonl(path))
    filled = 0
    if chains_from:
        examples, filled = fill_chain_decompositions(examples, step_wordings(read_jsonl(chains_from)))
    rows, skipped = training_rows(examples, prompt, variant, mask_entities)
    if not rows:
        hint = "" if chains_from else " (--chains-from TRAIN.jsonl builds them from gold relation chains)"
        raise UserInputError(f"{path}: no example has a gold decomposition to learn from{hint}")
    write_jsonl_atomic(rows, out)
    return {
        "rows": len(rows),
        "skipped": skipped,
        "from_chains": filled,
        "chains_from": str(chains_from) if chains_from else None,
        "variant": variant,
        "mask_entities": mask_entities,
        "out": str(out),
    }


__all__ = ["relation_phrase", "training_response", "training_rows", "write_training_rows"]
