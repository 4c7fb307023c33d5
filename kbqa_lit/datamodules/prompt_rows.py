"""Prompt → response rows for fine-tuning a causal LM, and the datamodule over a file of them.

:class:`PromptRowsBase` tokenises ``(prompt, response)`` pairs the way an LLM backend tokenises a prompt
at inference (:class:`~kbqa_lit.llm.hf_backend.HFCausalLMBackend`: ``tokenizer(prompt)``), followed by
the response and the end token, with the loss on the response only; batches hold ``input_ids``,
``attention_mask`` and ``labels`` (what :class:`~kbqa_lit.modules.lora_causal_lm.LoraCausalLM`
trains on). Subclasses say where the pairs come from (:meth:`PromptRowsBase.texts`).
:class:`PromptRowsDataModule` reads them from JSON-lines files of ``{"prompt": ..., "response": ...}``
(``kbqa keqing reasoning-data`` writes Keqing's reasoning rows so, ``kbqa decompose --training-rows`` the rows
of CoQ's trained decomposer).
"""

from __future__ import annotations

import json
import logging
from abc import abstractmethod
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.causal import build_causal_tokenizer
from kbqa_lit.datamodules.collate import IGNORE_INDEX, pad_sequences
from kbqa_lit.errors import DataFormatError, UserInputError

log = logging.getLogger(__name__)


class PromptRowsBase(LightningDataModule):
    """Tokenised prompt → response rows (see the module docstring); subclasses give :meth:`texts`.

    Args:
        tokenizer_name_or_path: The base model's tokenizer; ``None`` trains a byte-level BPE on the
            training rows, cached in ``tokenizer_cache``.
        tokenizer_cache: Folder of a trained tokenizer's cache.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_length: Longest row in tokens (a longer training row is dropped, counted in the log).
        batch_size: Training batch size.
        eval_batch_size: Validation batch size.
        num_workers: DataLoader workers.
    """

    def _init_rows(
        self,
        tokenizer_name_or_path: str | None,
        tokenizer_cache: Path,
        vocab_size: int,
        max_length: int,
        batch_size: int,
        eval_batch_size: int,
        num_workers: int,
    ) -> None:
        self._rows: dict[str, list[dict[str, list[int]]]] = {}
        self.max_length = int(max_length)
        self.batch_size, self.eval_batch_size = int(batch_size), int(eval_batch_size)
        self.num_workers = int(num_workers)
        if tokenizer_name_or_path is not None:
            self.tokenizer: PreTrainedTokenizerBase = build_causal_tokenizer(tokenizer_name_or_path)
            return
        texts = [t for pair in self.texts("train") for t in pair]
        if not texts:
            raise UserInputError("no training rows to train a tokenizer on")
        self.tokenizer = build_causal_tokenizer(train_texts=texts, vocab_size=vocab_size, cache_dir=tokenizer_cache)

    @abstractmethod
    def texts(self, split: str) -> list[tuple[str, str]]:
        """``(prompt, response)`` pairs of ``split`` (``train`` or ``val``)."""

    def encode(self, prompt: str, response: str) -> dict[str, list[int]]:
        """One row: the prompt as a backend tokenises it, then the response and ``</s>``."""
        tok = self.tokenizer
        prompt_ids = tok(prompt)["input_ids"]
        response_ids = tok(response, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        return {"input_ids": prompt_ids + response_ids, "labels": [IGNORE_INDEX] * len(prompt_ids) + response_ids}

    def rows(self, split: str) -> list[dict[str, list[int]]]:
        """Tokenised rows of ``split``; rows over ``max_length`` tokens are dropped (logged)."""
        if split not in self._rows:
            encoded = [self.encode(p, r) for p, r in self.texts(split)]
            kept = [row for row in encoded if len(row["input_ids"]) <= self.max_length]
            if len(kept) < len(encoded):
                log.warning("%s: %d rows over %d tokens dropped", split, len(encoded) - len(kept), self.max_length)
            self._rows[split] = kept
        return self._rows[split]

    def collate(self, rows: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        """Right-padded ``input_ids``/``attention_mask``/``labels``."""
        return {
            "input_ids": pad_sequences([r["input_ids"] for r in rows], self.tokenizer.pad_token_id),
            "attention_mask": pad_sequences([[1] * len(r["input_ids"]) for r in rows], 0),
            "labels": pad_sequences([r["labels"] for r in rows], IGNORE_INDEX),
        }

    def setup(self, stage: str | None = None) -> None:
        """Tokenise the training and validation rows."""
        self.rows("train")
        self.rows("val")

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader[Any]:
        return DataLoader(
            self.rows(split),  # type: ignore[arg-type]
            batch_size=batch_size,
            shuffle=shuffle,
            collate_fn=self.collate,
            num_workers=self.num_workers,
        )

    def train_dataloader(self) -> DataLoader[Any]:
        """Shuffled training rows."""
        return self._loader("train", self.batch_size, True)

    def val_dataloader(self) -> DataLoader[Any]:
        """Validation rows (teacher-forced loss)."""
        return self._loader("val", self.eval_batch_size, False)


def read_prompt_rows(path: str | Path) -> list[tuple[str, str]]:
    """``(prompt, response)`` of a JSON-lines file of ``{"prompt", "response"}`` objects.

    Raises:
        UserInputError: The file is missing.
        DataFormatError: A line is not such an object (names the file and the line).
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such rows file: {path}")
    out: list[tuple[str, str]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, lineno, f"not JSON: {exc}") from None
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in ("prompt", "response")):
            raise DataFormatError(path, lineno, "expected an object with string 'prompt' and 'response'")
        out.append((obj["prompt"], obj["response"]))
    return out


class PromptRowsDataModule(PromptRowsBase):
    """Prompt → response rows read from JSON-lines files (Keqing's fine-tuned reasoner, CoQ's trained decomposer).

    Args:
        train_file: Training rows (``{"prompt", "response"}`` per line).
        val_file: Validation rows.
        tokenizer_name_or_path: See :class:`PromptRowsBase`; ``None`` trains one, cached next to ``train_file``.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_length: Longest row in tokens.
        batch_size: Training batch size.
        eval_batch_size: Validation batch size.
        num_workers: DataLoader workers.
    """

    def __init__(
        self,
        train_file: str,
        val_file: str,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        max_length: int = 512,
        batch_size: int = 16,
        eval_batch_size: int = 32,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self._texts = {"train": read_prompt_rows(train_file), "val": read_prompt_rows(val_file)}
        cache = Path(train_file).parent / ".tokenizer"
        self._init_rows(tokenizer_name_or_path, cache, vocab_size, max_length, batch_size, eval_batch_size, num_workers)

    def texts(self, split: str) -> list[tuple[str, str]]:
        """The rows of ``split`` as read."""
        return self._texts[split]


__all__ = ["PromptRowsBase", "PromptRowsDataModule", "read_prompt_rows"]
