"""``InstructionDataModule``: TFS-KBQA's instruction tasks for causal-LM fine-tuning (LoRA).

Each split is a JSON-lines file of :class:`~kbqa_lit.data.schema.KBQAExample` (any dataset
converted with ``kbqa data convert``, or the synthetic world, built into ``data_dir`` on first use
when ``synthetic_seed`` is set). Every example gives one row per configured task (see
:mod:`kbqa_lit.data.tfs.prompts`): ``s1`` question → logical form with entity mentions,
``s2_items`` question → ``relations ; mentions``, ``s2_lf`` items (or question and items, by
``s2_lf_input``) → logical form, ``s3`` question → answer names; ``schema_form`` writes relations
as words or as raw Freebase ids. Several tasks are mixed in one run (rows shuffled together) or
one task per run, by ``tasks``.

Rows are tokenised by :class:`~kbqa_lit.datamodules.tfs.instruction_batches.InstructionEncoder`
(Alpaca prompt by default, LLaMA-2 chat as an option; loss on the response only; inputs of at
most ``max_input_length`` tokens, the template never cut) and padded by
:class:`~kbqa_lit.datamodules.tfs.instruction_batches.InstructionCollator`: batches hold
``input_ids``, ``attention_mask``, ``labels``, left-padded ``prompt_input_ids``/
``prompt_attention_mask`` for generation, ``index`` (positions in :meth:`examples` of the
split) and ``task`` (positions in :data:`~kbqa_lit.data.tfs.prompts.TASKS`).

Training rows need a gold response; evaluation rows without one have all-``-100`` labels (for
generation). Under DDP, validation/test/predict use
:class:`~kbqa_lit.datamodules.samplers.UnrepeatedDistributedSampler` (every row on exactly one
rank); training batches are shuffled and sharded by Lightning's distributed sampler.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.causal import build_causal_tokenizer
from kbqa_lit.data.tfs.prompts import TASKS, check_tasks
from kbqa_lit.datamodules.split_files import SPLITS, STAGE_SPLITS, LinkedSplitFilesDataModule, canonical_split
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionCollator, InstructionEncoder, pad_id
from kbqa_lit.errors import UserInputError

log = logging.getLogger(__name__)


class InstructionDataModule(LinkedSplitFilesDataModule):
    """Instruction data for :class:`~kbqa_lit.modules.lora_causal_lm.LoraCausalLM` (TFS-KBQA).

    Takes the file and linking arguments of
    :class:`~kbqa_lit.datamodules.split_files.LinkedSplitFilesDataModule` (``data_dir``, the split
    files, ``synthetic_seed``, ``synthetic_size``, ``linking``, ``linking_store``,
    ``linking_build_from``, ``linking_top_k``) as keywords. ``linking`` decides
    which entities the execution-guided evaluation may map mentions to; the tokenised rows are
    teacher-forced from the file.

    Args:
        tasks: Instruction tasks of this run: one or several of ``s1``, ``s2_items``, ``s2_lf``,
            ``s3`` (a list, or a comma-separated string); several are mixed in one run.
        instructions: Task → instruction text, overriding the paper's instructions.
        template: Prompt template: ``alpaca`` (default) or ``llama2_chat``.
        system_prompt: System prompt of the ``llama2_chat`` template (``None``: no system block).
        tokenizer_name_or_path: Hub name or local folder of the tokenizer (the base model's,
            e.g. ``meta-llama/Llama-2-7b-hf`` or a merged model's folder); ``None`` trains a
            byte-level BPE tokenizer on the training prompts and responses, cached under
            ``<data_dir>/.tokenizer``.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_length: Most tokens of the whole prompt, template included (``None``: no cap, the
            default); only the input is cut to meet it.
        max_response_length: Most response tokens, the end token included (never cut).
        max_input_length: Most tokens of the input (question, or S2 items): the paper's max input
            length, 128. A longer input is cut at its end; the template is never cut.
        s2_lf_input: What S2-t2 reads: ``items`` (the paper's Fig. 3, default) or
            ``question_items`` (``question | items``). Saved with the adapter, so ``kbqa lora
            pipeline`` builds the t2 input the same way.
        schema_form: How logical forms and S2 items write relations and classes: ``words``
            (``[ people , person , place of birth ]``, default) or ``ids``
            (``people.person.place_of_birth``). Saved with the adapter.
        max_answers: S3 responses list at most this many answer names.
        batch_size: Training batch size (per device; the paper uses 8).
        eval_batch_size: Validation/test/predict batch size (per device).
        num_workers: DataLoader worker processes.
        **kwargs: The file and linking arguments of
            :class:`~kbqa_lit.datamodules.split_files.LinkedSplitFilesDataModule`.
    """

    def __init__(
        self,
        tasks: str | list[str] = "s1",
        instructions: dict[str, str] | None = None,
        template: str = "alpaca",
        system_prompt: str | None = None,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        max_length: int | None = None,
        max_response_length: int = 128,
        max_input_length: int = 128,
        s2_lf_input: Literal["items", "question_items"] = "items",
        schema_form: Literal["words", "ids"] = "words",
        max_answers: int = 10,
        batch_size: int = 8,
        eval_batch_size: int = 16,
        num_workers: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)  # links, keeps the files and saves the hyper-parameters
        fmt = {
            "max_input_length": max_input_length,
            "s2_lf_input": s2_lf_input,
            "schema_form": schema_form,
        }
        try:
            self.tasks: tuple[str, ...] = check_tasks(tasks)
            self.text_encoder = InstructionEncoder(
                None, template, instructions, system_prompt, max_length, max_response_length, **fmt
            )
        except ValueError as exc:
            raise UserInputError(str(exc)) from None
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self.tokenizer: PreTrainedTokenizerBase = self._build_tokenizer()
        self.encoder = InstructionEncoder(
            self.tokenizer, template, instructions, system_prompt, max_length, max_response_length, **fmt
        )

    # ------------------------------------------------------------------ files and examples

    # ------------------------------------------------------------------ tokenizer

    def _tokenizer_texts(self) -> list[str]:
        self._ensure_data()
        splits = ["train"] if self._has("train") else [s for s in ("val", "test", "predict") if self._has(s)]
        if splits != ["train"]:
            log.warning("no training file: training the tokenizer on %s", ", ".join(splits) or "nothing")
        text_encoder = self.text_encoder
        texts: list[str] = []
        for split in dict.fromkeys(splits):
            for ex in self.gold_examples(split):
                for task in TASKS:  # every task, so one tokenizer serves runs of any task mix
                    target = text_encoder.target_of(task, ex, self.hparams.max_answers)
                    texts.append(text_encoder.prompt_text(task, text_encoder.input_of(task, ex)))
                    if target:
                        texts.append(target)
        return texts

    def _build_tokenizer(self) -> PreTrainedTokenizerBase:
        name = self.hparams.tokenizer_name_or_path
        if name is not None:
            return build_causal_tokenizer(name)
        texts = self._tokenizer_texts()
        if not texts:
            raise UserInputError("no examples to train a tokenizer on; set tokenizer_name_or_path or the files")
        return build_causal_tokenizer(
            train_texts=texts, vocab_size=self.hparams.vocab_size, cache_dir=self._home() / ".tokenizer"
        )

    @property
    def pad_token_id(self) -> int:
        """The padding id of the tokenizer."""
        return pad_id(self.tokenizer)

    # ------------------------------------------------------------------ rows

    def rows(self, split: str) -> list[dict[str, Any]]:
        """Tokenised rows of ``split``: per example (file order), one row per task of this run.

        A training row needs a gold response; an evaluation row without one keeps all-``-100``
        labels (S2-t2 rows need the gold items, as their input is built from them).
        """
        split = canonical_split(split)
        if split not in self._rows:
            out: list[dict[str, Any]] = []
            skipped = 0
            for i, ex in enumerate(self.gold_examples(split)):  # teacher-forced rows (losses)
                for task in self.tasks:
                    target = self.encoder.target_of(task, ex, self.hparams.max_answers)
                    if target is None and (split == "train" or task == "s2_lf"):
                        skipped += 1
                        continue
                    row = self.encoder.encode(task, self.encoder.input_of(task, ex), target)
                    row.update(index=i, task=TASKS.index(task))
                    out.append(row)
            if skipped:
                log.info("%s: %d (example, task) rows without a gold response left out", split, skipped)
            self._rows[split] = out
        return self._rows[split]

    def prepare_data(self) -> None:
        """Build the synthetic world if asked to (rank 0 only)."""
        self._ensure_data()

    def setup(self, stage: str | None = None) -> None:
        """Tokenise the splits the stage needs (``fit`` → train and, when present, val)."""
        for split in STAGE_SPLITS.get(stage or "", SPLITS):
            if split == "val" and stage == "fit" and not self._has("val"):
                continue
            self.rows(split)

    # ------------------------------------------------------------------ loaders

    def _loader(self, split: str, batch_size: int, shuffle: bool) -> DataLoader:
        rows = self.rows(split)
        sampler = None if shuffle else self._eval_sampler(rows)
        workers = self.hparams.num_workers
        return DataLoader(
            rows,  # type: ignore[arg-type]
            batch_size=batch_size,
            shuffle=shuffle,
            sampler=sampler,
            collate_fn=InstructionCollator(self.pad_token_id),
            num_workers=workers,
            persistent_workers=workers > 0,
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled training rows of every task (Lightning shards them under DDP)."""
        return self._loader("train", self.hparams.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader | list:
        """Validation rows in order (exactly one rank per row under DDP); ``[]`` without a file."""
        return self._loader("val", self.hparams.eval_batch_size, False) if self._has("val") else []

    def test_dataloader(self) -> DataLoader:
        """Test rows in order (exactly one rank per row under DDP)."""
        return self._loader("test", self.hparams.eval_batch_size, shuffle=False)

    def predict_dataloader(self) -> DataLoader:
        """Prediction rows in order (exactly one rank per row under DDP)."""
        return self._loader("predict", self.hparams.eval_batch_size, shuffle=False)

    def state_dict(self) -> dict[str, Any]:
        """Nothing to restore: the data and tokenizer are rebuilt from the hyper-parameters."""
        return {}


__all__ = ["InstructionDataModule"]
