"""``SeparateAnswerModel``: answer texts from a second, separately trained generator checkpoint.

CoQ's multitask generator writes both the logical form and the answer text; the paper's
"separately trained" ablation trains two models instead — an LF generator (``alpha: 0``, the
logical-form loss only) and an answer generator (``lf_weight: 0``, the answer loss only) — and
combines them at evaluation the same way: the LF beams are executed in order and the answer text is
the fallback. :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval` (and
:class:`~kbqa_lit.callbacks.prediction_writer.PredictionWriter`) take the LF beams from the module
under test and, with ``answer_model: <answer generator .ckpt>``, the answer texts from this source.

The second checkpoint is loaded once, on the CPU then moved to the module's device, as a module of
the same class as the module under test, by
:func:`~kbqa_lit.modules.checkpoint_loading.load_module_checkpoint` — so with the same tokenizer
rules as that class's own ``load_from_checkpoint`` (a ``MultitaskGenerator`` restores the tokenizer
stored in its checkpoint and decodes its generations with it). Its inputs are the batch's answer
task (``ans_input_ids``/``ans_attention_mask``), encoded by the datamodule's tokenizer, so the two
vocabularies must be the same: both generators trained on the same ``data_dir`` (the trained BPE
tokenizer is cached in ``<data_dir>/.tokenizer``) or with the same ``tokenizer_name_or_path``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightning as L
import torch

from kbqa_lit.errors import UserInputError
from kbqa_lit.modules.checkpoint_loading import load_module_checkpoint

#: Where an answer generator comes from (added to the loader's error messages).
ANSWER_MODEL_HINT = "an answer generator: kbqa fit --config configs/quickstart.yaml --model.init_args.lf_weight 0"


def _vocab(tokenizer: Any) -> dict[str, int] | None:
    get_vocab = getattr(tokenizer, "get_vocab", None)
    return dict(get_vocab()) if callable(get_vocab) else None


class SeparateAnswerModel:
    """A separately trained answer generator, loaded once, whose ``generate_answer`` gives the answer texts.

    Args:
        path: The answer generator's ``.ckpt`` (a checkpoint of the same LightningModule class as the
            module under test, trained with the answer task: ``lf_weight: 0`` for the paper's pair).

    Raises:
        UserInputError: When ``path`` is not a file (checked at once, so a config with a wrong path
            fails before any training).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserInputError(f"answer_model: no checkpoint file: {self.path}; expected {ANSWER_MODEL_HINT}")
        self.model: L.LightningModule | None = None

    def load(self, like: L.LightningModule, data_tokenizer: Any = None) -> L.LightningModule:
        """Load the checkpoint as a ``type(like)`` module (once) and check that it can answer this data.

        Args:
            like: The module under test; its class is the class of the checkpoint.
            data_tokenizer: The tokenizer that encodes the batches (the datamodule's, else the
                module's); ``None`` skips the vocabulary check.

        Returns:
            The answer generator, in eval mode, without gradients.

        Raises:
            UserInputError: When the file is not a checkpoint of ``type(like)``, the module has no
                ``generate_answer``, it was trained without the answer task (``alpha: 0``), or its
                tokenizer's vocabulary differs from ``data_tokenizer``'s.
        """
        if self.model is None:
            model = load_module_checkpoint(self.path, type(like), hint=ANSWER_MODEL_HINT)
            if not callable(getattr(model, "generate_answer", None)):
                raise UserInputError(f"answer_model {self.path}: a {type(model).__name__} has no generate_answer")
            hparams = getattr(model, "hparams", {})
            if isinstance(hparams, Mapping) and hparams.get("alpha") == 0:
                raise UserInputError(
                    f"answer_model {self.path} was trained without the answer task (alpha 0: it is an LF-only "
                    f"generator); expected {ANSWER_MODEL_HINT}"
                )
            model.eval()
            model.requires_grad_(False)
            self.model = model
        self._check_vocab(data_tokenizer)
        return self.model

    def _check_vocab(self, data_tokenizer: Any) -> None:
        own = _vocab(getattr(self.model, "tokenizer", None))
        data = _vocab(data_tokenizer)
        if own is not None and data is not None and own != data:
            raise UserInputError(
                f"answer_model {self.path} was trained with another tokenizer than the data's "
                f"({len(own)} vs {len(data)} tokens): train both generators on the same data_dir (the "
                "trained tokenizer is cached in <data_dir>/.tokenizer) or with the same tokenizer_name_or_path"
            )

    def texts(self, batch: Mapping[str, Any], device: torch.device, max_new_tokens: int) -> list[str]:
        """The answer generator's greedy answer text for each question of ``batch``.

        Args:
            batch: A batch with the answer task's inputs (``ans_input_ids``, ``ans_attention_mask``).
            device: Where the module under test runs; the answer generator is moved there.
            max_new_tokens: Longest answer text.

        Returns:
            One text per question (names joined with ``" | "``, as in training).

        Raises:
            RuntimeError: When :meth:`load` has not run.
            UserInputError: When the batch has no answer-task inputs.
        """
        if self.model is None:
            raise RuntimeError("SeparateAnswerModel.load() runs in the callback's setup, before any batch")
        if "ans_input_ids" not in batch:
            raise UserInputError(
                f"answer_model {self.path}: the batches have no answer-task inputs (ans_input_ids); "
                "set the datamodule's answer_task: true"
            )
        if self.model.device != device:
            self.model.to(device)
        with torch.no_grad():
            return [str(t) for t in self.model.generate_answer(batch, max_new_tokens=max_new_tokens)]  # type: ignore[operator]

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the path only (spawned DDP ranks load the checkpoint themselves in ``setup``)."""
        return {"path": self.path, "model": None}


__all__ = ["ANSWER_MODEL_HINT", "SeparateAnswerModel"]
