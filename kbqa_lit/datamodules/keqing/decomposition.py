"""``KeqingDecompositionDataModule``: question → Keqing's JSON decomposition, for a causal LM.

Each training example whose gold S-expression is a chain of JOINs from its topic entity gives
one row: the prompt (:func:`~kbqa_lit.data.keqing.decomposition.decomposition_prompt` over the
question, its topic mention written as the slot ``[E0]`` by default) and the response, the
paper's JSON list with one sub-question per hop, each worded by the hop's template in the
:class:`~kbqa_lit.data.keqing.templates.TemplateBank` (``target: subquestions``), or the hop's
chain text itself (``target: chains``, the paper's "generate logical chains directly" ablation).
Examples that are not chains have no target and are counted (``skipped``).

Rows are tokenised the way an LLM backend tokenises a prompt at inference
(:class:`~kbqa_lit.llm.hf_backend.HFCausalLMBackend`: ``tokenizer(prompt)``), followed by the
response and the end token; the loss is on the response only. Batches hold ``input_ids``,
``attention_mask`` and ``labels`` — what :class:`~kbqa_lit.modules.tfs.lora_causal_lm.LoraCausalLM`
trains on (the Keqing configs name it by class path).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.causal import build_causal_tokenizer
from kbqa_lit.data.keqing.decomposition import INSTRUCTION
from kbqa_lit.data.keqing.targets import decomposition_rows
from kbqa_lit.data.keqing.templates import TemplateBank, mine_templates
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.datamodules.collate import IGNORE_INDEX, pad_sequences
from kbqa_lit.errors import UserInputError

log = logging.getLogger(__name__)


class KeqingDecompositionDataModule(LightningDataModule):
    """Decomposition rows for fine-tuning a causal LM (Keqing's decomposer).

    Args:
        train_file: Training examples (JSON lines, common schema).
        val_file: Validation examples (a held-out part of the training data).
        templates: The template bank (``kbqa keqing templates`` writes one); when the file is
            missing it is mined from ``train_file`` and written there.
        target: ``subquestions`` (template wordings, the paper) or ``chains`` (chain texts:
            the "generate logical chains directly" ablation).
        seed_form: ``slot`` (the topic mention becomes ``[E0]`` in the question and the seed;
            the default for small models trained here) or ``name`` (the entity's name, as a
            served LLM writes it).
        instruction: The prompt's instruction line.
        tokenizer_name_or_path: The base model's tokenizer; ``None`` trains a byte-level BPE on
            the training rows, cached next to the template bank.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_length: Longest row in tokens (a longer row is dropped from training, counted).
        batch_size: Training batch size.
        eval_batch_size: Validation batch size.
        num_workers: DataLoader workers.
    """

    def __init__(
        self,
        train_file: str,
        val_file: str,
        templates: str,
        target: Literal["subquestions", "chains"] = "subquestions",
        seed_form: Literal["slot", "name"] = "slot",
        instruction: str = INSTRUCTION,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        max_length: int = 320,
        batch_size: int = 32,
        eval_batch_size: int = 64,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        if target not in ("subquestions", "chains"):
            raise UserInputError(f"target must be 'subquestions' or 'chains', got {target!r}")
        if seed_form not in ("slot", "name"):
            raise UserInputError(f"seed_form must be 'slot' or 'name', got {seed_form!r}")
        self.save_hyperparameters()
        self.bank = self._bank(Path(templates), Path(train_file))
        self._texts: dict[str, list[tuple[str, str]]] = {}
        self.skipped: dict[str, int] = {}
        self.tokenizer: PreTrainedTokenizerBase = self._build_tokenizer()
        self._rows: dict[str, list[dict[str, list[int]]]] = {}

    def _bank(self, path: Path, train_file: Path) -> TemplateBank:
        if path.is_file():
            return TemplateBank.load(path)
        bank = mine_templates(self._examples(train_file))
        bank.save(path)
        log.info("mined %d templates from %s into %s", len(bank.templates), train_file, path)
        return bank

    @staticmethod
    def _examples(path: Path) -> list[KBQAExample]:
        if not path.is_file():
            raise UserInputError(f"no such example file: {path}")
        return list(read_jsonl(path))

    def texts(self, split: str) -> list[tuple[str, str]]:
        """``(prompt, response)`` of every chain example of ``split`` (``train`` or ``val``)."""
        if split not in self._texts:
            hp = self.hparams
            path = Path(hp.train_file if split == "train" else hp.val_file)
            rows, skipped = decomposition_rows(
                self._examples(path), self.bank, target=hp.target, seed_form=hp.seed_form, instruction=hp.instruction
            )
            self._texts[split] = rows
            self.skipped[split] = skipped
            if skipped:
                log.info("%s: %d examples are not JOIN chains and have no decomposition target", path, skipped)
        return self._texts[split]

    def _build_tokenizer(self) -> PreTrainedTokenizerBase:
        hp = self.hparams
        if hp.tokenizer_name_or_path is not None:
            return build_causal_tokenizer(hp.tokenizer_name_or_path)
        texts = [t for pair in self.texts("train") for t in pair]
        if not texts:
            raise UserInputError(f"{hp.train_file}: no chain examples to train a tokenizer on")
        cache = Path(hp.templates).parent / ".tokenizer"
        return build_causal_tokenizer(train_texts=texts, vocab_size=hp.vocab_size, cache_dir=cache)

    def encode(self, prompt: str, response: str) -> dict[str, list[int]]:
        """One training row: the prompt as a backend tokenises it, then the response and ``</s>``."""
        tok = self.tokenizer
        prompt_ids = tok(prompt)["input_ids"]
        response_ids = tok(response, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        return {
            "input_ids": prompt_ids + response_ids,
            "labels": [IGNORE_INDEX] * len(prompt_ids) + response_ids,
        }

    def rows(self, split: str) -> list[dict[str, list[int]]]:
        """Tokenised rows of ``split``; rows over ``max_length`` tokens are dropped (logged)."""
        if split not in self._rows:
            encoded = [self.encode(p, r) for p, r in self.texts(split)]
            kept = [row for row in encoded if len(row["input_ids"]) <= self.hparams.max_length]
            if len(kept) < len(encoded):
                log.warning(
                    "%s: %d rows longer than %d tokens dropped",
                    split,
                    len(encoded) - len(kept),
                    self.hparams.max_length,
                )
            self._rows[split] = kept
        return self._rows[split]

    def collate(self, rows: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        """Right-padded ``input_ids``/``attention_mask``/``labels``."""
        pad = self.tokenizer.pad_token_id
        ids = pad_sequences([r["input_ids"] for r in rows], pad)
        mask = pad_sequences([[1] * len(r["input_ids"]) for r in rows], 0)
        labels = pad_sequences([r["labels"] for r in rows], IGNORE_INDEX)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    def setup(self, stage: str | None = None) -> None:
        """Tokenise the splits the stage needs."""
        self.rows("train")
        self.rows("val")

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader[Any]:
        return DataLoader(
            self.rows(split),  # type: ignore[arg-type]
            batch_size=batch_size,
            shuffle=shuffle,
            collate_fn=self.collate,
            num_workers=self.hparams.num_workers,
        )

    def train_dataloader(self) -> DataLoader[Any]:
        """Shuffled training rows."""
        return self._loader("train", self.hparams.batch_size, True)

    def val_dataloader(self) -> DataLoader[Any]:
        """Validation rows (teacher-forced loss)."""
        return self._loader("val", self.hparams.eval_batch_size, False)


__all__ = ["KeqingDecompositionDataModule"]
