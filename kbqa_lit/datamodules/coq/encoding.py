"""Tokenise CoQ's two generation tasks (logical form, answer) of a split into columns.

The columns go into the shared Arrow cache (:mod:`kbqa_lit.datamodules.tokenized_cache`): ``index``
(position in the split's example list), ``input_ids``, ``labels``, ``length`` and, with the answer
task, ``ans_input_ids``, ``ans_labels``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase

from kbqa_lit.data.coq.generator_inputs import coq_texts
from kbqa_lit.data.schema import KBQAExample

log = logging.getLogger(__name__)

#: Bump when the input recipe changes (part of the cache key).
CACHE_FORMAT = 3  # 3: evaluation inputs carry only predicted decompositions


def encode_examples(
    examples: Sequence[KBQAExample],
    tokenizer: PreTrainedTokenizerBase,
    *,
    use_decomposition: bool,
    patterns: str,
    answer_task: bool,
    mask_entities: bool = False,
    top_k_patterns: int | None = None,
    max_source_length: int,
    max_target_length: int,
    require_target: bool,
    targets: Sequence[KBQAExample] | None = None,
) -> dict[str, list[Any]]:
    """Tokenise both CoQ tasks of ``examples`` into columns.

    Args:
        examples: The split's examples, in file order.
        tokenizer: The tokenizer (appends ``</s>``).
        use_decomposition: Put the decomposition ``D`` in the inputs.
        patterns: ``"gold"``, ``"predicted"`` or ``"none"`` (see :mod:`kbqa_lit.data.coq.generator_inputs`).
        mask_entities: Topic entities as slots ``[E0]``... in the logical-form task.
        top_k_patterns: Use only each example's first ``top_k_patterns`` patterns (``None``: all).
        answer_task: Also encode the answer task.
        max_source_length: Inputs are truncated to this many tokens.
        max_target_length: Targets are truncated to this many tokens.
        require_target: Leave out examples without a gold S-expression (training); otherwise
            they are kept with empty labels.
        targets: The examples the targets come from, one per example (default ``examples``):
            the file's examples when ``examples`` are inference views without gold entities.

    Returns:
        Columns ``index``, ``input_ids``, ``labels``, ``length`` (+ ``ans_input_ids``,
        ``ans_labels``).
    """
    keep, texts = [], []
    golds = examples if targets is None else targets
    if len(golds) != len(examples):
        raise ValueError(f"{len(golds)} target examples for {len(examples)} examples")
    for i, (ex, gold) in enumerate(zip(examples, golds, strict=True)):
        t = coq_texts(
            ex,
            use_decomposition=use_decomposition,
            patterns=patterns,
            mask_entities=mask_entities,
            gold=gold,
            top_k_patterns=top_k_patterns,
        )
        if require_target and t["target"] is None:
            continue
        keep.append(i)
        texts.append(t)

    def encode(items: list[str | None], max_length: int) -> list[list[int]]:
        present = [k for k, s in enumerate(items) if s is not None]
        out: list[list[int]] = [[] for _ in items]
        if present:
            enc = tokenizer([items[k] for k in present], truncation=True, max_length=max_length)["input_ids"]
            for k, ids in zip(present, enc, strict=True):
                out[k] = list(ids)
        return out

    cols: dict[str, list[Any]] = {"index": keep}
    cols["input_ids"] = encode([t["source"] for t in texts], max_source_length)
    cols["labels"] = encode([t["target"] for t in texts], max_target_length)
    cols["length"] = [len(ids) for ids in cols["input_ids"]]
    if answer_task:
        cols["ans_input_ids"] = encode([t["ans_source"] for t in texts], max_source_length)
        cols["ans_labels"] = encode([t["ans_target"] for t in texts], max_target_length)
    unk = tokenizer.unk_token_id
    if unk is not None:
        bad = sum(unk in ids for key in ("labels", "ans_labels") for ids in cols.get(key, ()))
        if bad:
            log.warning("%d targets contain %s: the tokenizer cannot spell them", bad, tokenizer.unk_token)
    dropped = len(examples) - len(keep)
    if dropped:
        log.warning("left out %d of %d examples without a gold S-expression", dropped, len(examples))
    return cols


__all__ = ["CACHE_FORMAT", "encode_examples"]
