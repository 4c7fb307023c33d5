"""The shared part of FC-KBQA's seq2seq datamodules (the skeleton parser and the composer).

Both train the project's seq2seq generator,
:class:`~kbqa_lit.modules.multitask_generator.MultitaskGenerator` (the FC configs name it by
class path, with ``alpha: 0``: no answer task): batches hold ``input_ids``, ``attention_mask``,
``labels`` (``-100`` on padding and for rows without gold) and ``index`` — the row's position in
:meth:`FCSeq2SeqDataModule.examples` of the split, so the execution-guided callback finds the
question back. A subclass says what a row's source and target are (:meth:`row_texts`).

**No gold at evaluation.** Training rows read the gold. Validation, test and predict rows are
built from :meth:`examples`, the inference views of :mod:`kbqa_lit.data.linking` (linked
entities, no gold-derived labels), unless ``oracle`` names gold inputs; then
:meth:`oracle_inputs` lists them and the callback logs metrics under ``oracle/``. Targets are
the gold (a validation loss), never an input.

The tokenizer is a pretrained one (``tokenizer_name_or_path``) or a BPE trained on the training
rows' sources and targets (cached under ``<data_dir>/.tokenizer``), with the slot tokens
``[E0]``... and ``<entity0>``... added as ordinary tokens.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import torch
from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.entity_slots import MAX_SLOTS, SLOT_TOKENS
from kbqa_lit.data.fc.skeletons import ENTITY_MASK
from kbqa_lit.data.linking import oracle_inputs
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.collate import Seq2SeqCollator
from kbqa_lit.datamodules.split_files import STAGE_SPLITS, SplitFilesDataModule, canonical_split
from kbqa_lit.datamodules.tokenizer_sizes import TokenizerSizesMixin
from kbqa_lit.errors import UserInputError, check_choice

log = logging.getLogger(__name__)

#: Tokens added to every FC tokenizer: the slots of both tasks.
FC_EXTRA_TOKENS: tuple[str, ...] = (*SLOT_TOKENS, *(ENTITY_MASK.format(k) for k in range(MAX_SLOTS)))


class FCSeq2SeqDataModule(TokenizerSizesMixin, SplitFilesDataModule):
    """Split files, inference views, tokenizer, rows and loaders of an FC seq2seq task.

    Takes the file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`
    (``data_dir``, the split files, ``synthetic_seed``, ``synthetic_size``) as keywords.

    Args:
        oracle: Gold inputs at evaluation (see the subclass; ``none``: an honest run).
        linking: Entities of evaluation views when no oracle: ``predicted`` or ``dataset-given``.
        linking_store: The KB whose names ``predicted`` linking searches.
        linking_build_from: Triple files to build ``linking_store`` from.
        linking_top_k: Linked entities kept per question.
        tokenizer_name_or_path: A pretrained tokenizer; ``None`` trains a BPE on the training rows.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_source_length: Sources are truncated to this many tokens.
        max_target_length: Targets are truncated to this many tokens.
        batch_size: Training batch size.
        eval_batch_size: Validation/test/predict batch size.
        num_workers: DataLoader workers.
        **kwargs: The file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`.
    """

    #: The ``oracle`` values the task knows (``none`` first).
    ORACLES: tuple[str, ...] = ("none", "linking")

    def __init__(
        self,
        oracle: str = "none",
        linking: Literal["predicted", "dataset-given"] = "predicted",
        linking_store: str | None = None,
        linking_build_from: list[str] | None = None,
        linking_top_k: int = 3,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        max_source_length: int = 256,
        max_target_length: int = 128,
        batch_size: int = 16,
        eval_batch_size: int = 32,
        num_workers: int = 0,
        **kwargs: Any,
    ) -> None:
        check_choice("oracle", oracle, self.ORACLES)
        check_choice("linking", linking, ("predicted", "dataset-given"), hint="gold is oracle: linking")
        # any oracle hands evaluation the gold entities; otherwise the linking setting decides
        self._init_linking(linking if oracle == "none" else "gold", linking_store, linking_build_from, linking_top_k)
        super().__init__(**kwargs)  # keeps the files and saves the hyper-parameters
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self.tokenizer: PreTrainedTokenizerBase = self._build_tokenizer()

    # ------------------------------------------------------------------ what a subclass says

    def row_texts(self, split: str) -> list[tuple[str, str | None]]:
        """``(source, target)`` per example of :meth:`examples` (``split``), in order."""
        raise NotImplementedError

    def oracle_inputs(self) -> list[str]:
        """The gold inputs evaluation sees: ``[]``, or the ``oracle`` setting's name."""
        return oracle_inputs(None, None, self.hparams.oracle)

    # ------------------------------------------------------------------ tokenizer and rows

    def _build_tokenizer(self) -> PreTrainedTokenizerBase:
        name = self.hparams.tokenizer_name_or_path
        if name is not None:
            return build_tokenizer(name, extra_tokens=FC_EXTRA_TOKENS)
        self._ensure_data()
        texts = [t for pair in self.row_texts("train") for t in pair if t]
        if not texts:
            raise UserInputError(f"no training rows in {self.split_file('train')}; set tokenizer_name_or_path")
        return build_tokenizer(
            train_texts=texts,
            vocab_size=self.hparams.vocab_size,
            cache_dir=self._home() / ".tokenizer",
            extra_tokens=FC_EXTRA_TOKENS,
        )

    def rows(self, split: str) -> list[dict[str, Any]]:
        """Tokenised rows (``index``, ``input_ids``, ``labels``); training keeps only rows with a target."""
        split = canonical_split(split)
        if split not in self._rows:
            hp, tok = self.hparams, self.tokenizer
            rows = []
            for i, (source, target) in enumerate(self.row_texts(split)):
                if split == "train" and not target:
                    continue
                ids = tok(source, truncation=True, max_length=hp.max_source_length)["input_ids"]
                labels = tok(target, truncation=True, max_length=hp.max_target_length)["input_ids"] if target else []
                rows.append({"index": i, "input_ids": ids, "labels": labels})
            self._rows[split] = rows
        return self._rows[split]

    def oracle_or_view(self, split: str) -> list[KBQAExample]:
        """What inputs of ``split`` are built from: the gold for training, else :meth:`examples`."""
        return self.gold_examples(split) if canonical_split(split) == "train" else self.examples(split)

    # ------------------------------------------------------------------ loaders

    def setup(self, stage: str | None = None) -> None:
        """Tokenise the splits the stage needs (fitting without a validation file is allowed)."""
        for split in STAGE_SPLITS.get(stage or "", ("train", "val", "test")):
            if split == "val" and not self._has("val"):
                continue
            self.rows(split)

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader[Any]:
        return DataLoader(
            self.rows(split),  # type: ignore[arg-type]
            batch_size=batch_size,
            shuffle=shuffle,
            collate_fn=self._collate,
            num_workers=self.hparams.num_workers,
        )

    def _collate(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        return Seq2SeqCollator(self.pad_token_id, answer_task=False)(rows)

    def train_dataloader(self) -> DataLoader[Any]:
        """Shuffled training rows."""
        return self._loader("train", self.hparams.batch_size, True)

    def val_dataloader(self) -> DataLoader[Any] | list[Any]:
        """Validation rows in file order (none without a validation file)."""
        return self._loader("val", self.hparams.eval_batch_size, False) if self._has("val") else []

    def test_dataloader(self) -> DataLoader[Any]:
        """Test rows in file order."""
        return self._loader("test", self.hparams.eval_batch_size, False)

    def predict_dataloader(self) -> DataLoader[Any]:
        """Predict rows in file order."""
        return self._loader("predict", self.hparams.eval_batch_size, False)


__all__ = ["FC_EXTRA_TOKENS", "FCSeq2SeqDataModule"]
