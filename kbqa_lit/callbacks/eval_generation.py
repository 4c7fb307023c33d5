"""What the execution-guided evaluation asks a module for: beams of logical forms and answer texts.

Beams are normalised S-expressions per question in beam order (``pl_module.generate_lf``, with the
grammar-constrained processor when one is given); answer texts come from the module
(``pl_module.generate_answer``) or from a separately trained answer generator
(:class:`~kbqa_lit.callbacks.answer_source.SeparateAnswerModel`). A step may instead return a
mapping with ``"beams"`` (and ``"answer_texts"``) to avoid generating twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lightning as L
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from kbqa_lit.callbacks.answer_source import SeparateAnswerModel
from kbqa_lit.data.schema import KBQAExample

#: The generation limit of a module that does not say how long its targets were.
DEFAULT_MAX_NEW_TOKENS = 128


def generation_limit(max_new_tokens: int | None, pl_module: L.LightningModule) -> int:
    """``max_new_tokens``, or the module's ``hparams.max_target_length`` when it is ``None`` (else 128)."""
    if max_new_tokens is not None:
        return int(max_new_tokens)
    trained = getattr(getattr(pl_module, "hparams", None), "max_target_length", None)
    return int(trained) if isinstance(trained, int) and trained > 0 else DEFAULT_MAX_NEW_TOKENS


def datamodule_examples(trainer: L.Trainer, split: str) -> list[KBQAExample]:
    """The examples of ``split`` as the attached datamodule gives them (``batch["index"]`` indexes them).

    Raises:
        RuntimeError: When the trainer has no datamodule with ``examples(split)``.
    """
    dm = getattr(trainer, "datamodule", None)
    if dm is None or not callable(getattr(dm, "examples", None)):
        raise RuntimeError(
            "ExecutionGuidedEval needs a LightningDataModule with examples(split) -> "
            "list[KBQAExample] (pass datamodule=... to the Trainer call)"
        )
    return list(dm.examples(split))


def generate_for_batch(
    pl_module: L.LightningModule,
    outputs: Any,
    batch: Any,
    *,
    processor: LogitsProcessor | None,
    lf_generation: bool,
    num_beams: int,
    num_return_sequences: int,
    max_new_tokens: int,
    answers: SeparateAnswerModel | None,
    early_stopping: bool | str | None = None,
) -> tuple[list[list[str]], list[str] | None]:
    """The batch's beams (per question) and answer texts (``None`` when there are none).

    Args:
        pl_module: The module under test.
        outputs: What its step returned (beams and answer texts when it generated them already).
        batch: The batch.
        processor: The grammar-constrained logits processor, or ``None`` (free decoding).
        lf_generation: Whether logical forms are generated (else every prediction is the answer text).
        num_beams: Beam width.
        num_return_sequences: Beams kept per question.
        max_new_tokens: Longest generation.
        answers: A separately trained answer generator, or ``None`` (the module's answer texts).
        early_stopping: The beam search's stopping rule, passed to ``generate_lf`` when not ``None``
            (``None``: the module's own rule).
    """
    if isinstance(outputs, Mapping) and "beams" in outputs:
        beams = [list(b) for b in outputs["beams"]]
        texts = outputs.get("answer_texts")
        if answers is not None:
            texts = answers.texts(batch, pl_module.device, max_new_tokens)
        return beams, None if texts is None else [str(t) for t in texts]
    extra: dict[str, Any] = {} if processor is None else {"logits_processor": LogitsProcessorList([processor])}
    if early_stopping is not None:
        extra["early_stopping"] = early_stopping
    with torch.no_grad():
        if lf_generation:
            beams = pl_module.generate_lf(
                batch,
                num_beams=num_beams,
                num_return_sequences=num_return_sequences,
                max_new_tokens=max_new_tokens,
                **extra,
            )
        else:  # "w/o LF generation": no beams, so every prediction is the answer text
            beams = [[] for _ in range(len(batch["index"]))]
        texts = None
        if answers is not None:  # the separately trained answer generator's, not the module's
            texts = answers.texts(batch, pl_module.device, max_new_tokens)
        elif callable(getattr(pl_module, "generate_answer", None)):
            # [] when the batches have no answer task (answer_task: false): no fallback text
            texts = pl_module.generate_answer(batch, max_new_tokens=max_new_tokens) or None
    return [list(b) for b in beams], None if texts is None else [str(t) for t in texts]


__all__ = ["DEFAULT_MAX_NEW_TOKENS", "datamodule_examples", "generate_for_batch", "generation_limit"]
