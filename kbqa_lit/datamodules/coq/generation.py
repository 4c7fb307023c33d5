"""``GenerationDataModule``: CoQ's two seq2seq tasks (S-expression and answer) from common-schema files.

Each split is a JSON-lines file of :class:`~kbqa_lit.data.schema.KBQAExample` (the synthetic
world's ``train/dev/test.jsonl``, or any dataset converted with ``kbqa data convert``). Per
example the module builds the two CoQ inputs (see :mod:`kbqa_lit.data.coq.generator_inputs`)::

    Translate to S-expression: q | P1 | ... | Pk | D  →  normalised gold S-expression
    Answer the question: q | P1 | ... | Pk | D        →  answer names joined with " | "

tokenises each split once into an Arrow cache (:mod:`.tokenized_cache`), pads batches
dynamically and samples training batches by length buckets.

Batches are dicts of ``LongTensor``: ``input_ids``, ``attention_mask``, ``labels`` (``-100`` on
padding and for examples without gold), with the answer task ``ans_input_ids``,
``ans_attention_mask``, ``ans_labels``, and always ``index`` — row positions in
:meth:`GenerationDataModule.examples` of the split, so callbacks find the questions back.

Under DDP, validation/test/predict use :class:`~.samplers.UnrepeatedDistributedSampler` (every
question on exactly one rank, file order within a rank) and training uses
:class:`~.samplers.LengthBucketSampler` sharded by rank. The training order follows
``PL_GLOBAL_SEED`` (set by ``seed_everything``) and the epoch; the training loader is a
:class:`~.resumable.ResumableDataLoader`, so a run resumed from a mid-epoch checkpoint continues
where it stopped.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

from torch.utils.data import DataLoader, Sampler
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.coq.generator_inputs import (
    ANSWER_PREFIX,
    LF_PREFIX,
    PATTERN_MODES,
    answer_target,
    example_patterns,
    lf_target,
)
from kbqa_lit.data.entity_slots import SLOT_TOKENS
from kbqa_lit.data.linking import oracle_inputs
from kbqa_lit.datamodules.collate import Seq2SeqCollator
from kbqa_lit.datamodules.coq import encoding
from kbqa_lit.datamodules.coq.encoding import CACHE_FORMAT
from kbqa_lit.datamodules.resumable import LoaderProgress, ResumableDataLoader
from kbqa_lit.datamodules.samplers import LengthBucketSampler
from kbqa_lit.datamodules.split_files import SPLITS, STAGE_SPLITS, LinkedSplitFilesDataModule, canonical_split
from kbqa_lit.datamodules.tokenized_cache import TokenizedSplit, load_or_encode
from kbqa_lit.datamodules.tokenizer_sizes import TokenizerSizesMixin
from kbqa_lit.errors import UserInputError, check_choice

log = logging.getLogger(__name__)


class GenerationDataModule(TokenizerSizesMixin, LinkedSplitFilesDataModule):
    """Data for :class:`~kbqa_lit.modules.multitask_generator.MultitaskGenerator` (CoQ step 4).

    Takes the file and linking arguments of
    :class:`~kbqa_lit.datamodules.split_files.LinkedSplitFilesDataModule` (``data_dir``, the split
    files, ``synthetic_seed``, ``synthetic_size``, ``linking``, ``linking_store``,
    ``linking_build_from``, ``linking_top_k``) as keywords;
    ``data_dir`` is also the home of the tokenised cache (``.cache/``) unless ``cache_dir`` is set.

    Args:
        tokenizer_name_or_path: Hub name or local folder of the tokenizer (``t5-base``); ``None``
            trains a BPE tokenizer on the training questions, decompositions, normalised
            S-expressions and answers, cached under ``<data_dir>/.tokenizer``.
        vocab_size: Vocabulary size of a trained tokenizer.
        use_decomposition: Append the decomposition ``D`` to both inputs (false: the "w/o
            decomposition" ablation). Validation, test and predict inputs carry only a decomposition
            a predictor wrote (``kbqa decompose`` with an LLM backend), never the dataset's own or a
            ``--source gold`` one, unless ``linking: gold`` (see :mod:`kbqa_lit.data.linking`).
        patterns: Where the patterns ``P1..Pk`` come from: ``predicted`` (``meta["patterns"]``,
            written by the pattern stage; the paper's setting), ``none`` (the default and the "w/o
            patterns" ablation) or ``gold`` (``meta["gold_patterns"]``, else the (relation,
            entity) pairs of the gold S-expression: an oracle, so evaluation metrics are logged
            under ``oracle/`` and the run name says ``oracle-patterns``).
        top_k_patterns: Put only the first ``top_k_patterns`` patterns of each example in the
            inputs (``PatternWriter`` stores them best first; the paper keeps 3 on WebQSP, 5 on
            CWQ); ``None`` keeps all an example carries.
        answer_task: Also build the answer task (false: the "w/o answer task" ablation; batches
            then have no ``ans_*`` fields).
        mask_entities: In the logical-form task, write the topic entities as slots ``[E0]``...
            in the input and the target (added to the tokenizer as ordinary tokens); the
            execution-guided callback puts the labels back before denormalising. Spares a small
            model the copying of names (see :mod:`kbqa_lit.data.entity_slots`).
        max_source_length: Inputs are truncated to this many tokens.
        max_target_length: Targets are truncated to this many tokens.
        batch_size: Training batch size (per device).
        eval_batch_size: Validation/test/predict batch size (per device).
        num_workers: DataLoader worker processes.
        bucket_by_length: Sample training batches from buckets of similar input length (less
            padding); false shuffles uniformly.
        cache_dir: Folder of the tokenised Arrow cache (default ``<data_dir>/.cache``).
        **kwargs: The file and linking arguments of
            :class:`~kbqa_lit.datamodules.split_files.LinkedSplitFilesDataModule`.
    """

    def __init__(
        self,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        use_decomposition: bool = True,
        patterns: Literal["gold", "predicted", "none"] = "none",
        top_k_patterns: int | None = None,
        answer_task: bool = True,
        mask_entities: bool = False,
        max_source_length: int = 256,
        max_target_length: int = 128,
        batch_size: int = 16,
        eval_batch_size: int = 32,
        num_workers: int = 0,
        bucket_by_length: bool = True,
        cache_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        check_choice("patterns", patterns, PATTERN_MODES)
        if top_k_patterns is not None and top_k_patterns < 1:
            raise UserInputError(f"top_k_patterns must be at least 1 (or null for all), got {top_k_patterns}")
        super().__init__(**kwargs)  # links, keeps the files and saves the hyper-parameters
        self._datasets: dict[str, TokenizedSplit] = {}
        #: How many splits this instance tokenised (0 when everything came from the cache).
        self.encode_count = 0
        #: The training loader's place in its epoch (saved in checkpoints for exact mid-epoch resumes).
        self.train_progress = LoaderProgress()
        self.tokenizer: PreTrainedTokenizerBase = self._build_tokenizer()

    # ------------------------------------------------------------------ files and examples

    # ------------------------------------------------------------------ tokenizer

    def _tokenizer_texts(self) -> list[str]:
        self._ensure_data()
        train = self.split_file("train")
        splits = ["train"] if train is not None and train.is_file() else []
        if not splits:
            splits = [s for s in ("val", "test", "predict") if (p := self.split_file(s)) is not None and p.is_file()]
            log.warning("no training file: training the tokenizer on %s", ", ".join(splits) or "nothing")
        texts = [LF_PREFIX, ANSWER_PREFIX]
        for split in dict.fromkeys(splits):
            for ex in self.gold_examples(split):
                texts.append(ex.question)
                texts.extend(t for t in (ex.decomposition, lf_target(ex), answer_target(ex)) if t)
                texts.extend(example_patterns(ex, "predicted"))
        return texts

    def _build_tokenizer(self) -> PreTrainedTokenizerBase:
        name = self.hparams.tokenizer_name_or_path
        extra = SLOT_TOKENS if self.hparams.mask_entities else ()
        if name is not None:
            return build_tokenizer(name, extra_tokens=extra)
        texts = self._tokenizer_texts()
        if len(texts) <= 2:
            raise UserInputError("no examples to train a tokenizer on; set tokenizer_name_or_path or the files")
        return build_tokenizer(
            train_texts=texts,
            vocab_size=self.hparams.vocab_size,
            cache_dir=self._home() / ".tokenizer",
            extra_tokens=extra,
        )

    # ------------------------------------------------------------------ tokenised splits

    def _cache_root(self) -> Path:
        return Path(self.hparams.cache_dir).expanduser() if self.hparams.cache_dir else self._home() / ".cache"

    def oracle_inputs(self) -> list[str]:
        """Gold inputs of evaluation: ``linking`` (gold entities) and ``patterns`` (oracle patterns)."""
        return oracle_inputs(self.linking, self.hparams.patterns)

    def dataset(self, split: str) -> TokenizedSplit:
        """The tokenised ``split`` (loaded from the Arrow cache, or encoded and cached once)."""
        split = canonical_split(split)
        if split not in self._datasets:
            examples, golds = self.examples(split), self.gold_examples(split)
            if self.hparams.patterns == "predicted" and examples and not any("patterns" in ex.meta for ex in examples):
                raise UserInputError(
                    f"patterns: predicted, but no example of {self.split_file(split)} has meta.patterns: run the "
                    "pattern stage on it (kbqa predict with PatternWriter), or set patterns: none"
                )
            if self.hparams.patterns == "predicted" and split != "train":
                oracle = [ex.qid for ex in examples if ex.meta.get("patterns_mode") == "oracle"]
                if oracle:
                    raise UserInputError(
                        f"patterns: predicted, but {len(oracle)} examples of {self.split_file(split)} (first: "
                        f"{oracle[0]!r}) carry oracle patterns (PatternWriter mode: oracle, the gold pairs): use "
                        "patterns: gold for the oracle, or write the file with mode: scored"
                    )
            settings = {
                "use_decomposition": self.hparams.use_decomposition,
                "patterns": self.hparams.patterns,
                "top_k_patterns": self.hparams.top_k_patterns,
                "answer_task": self.hparams.answer_task,
                "mask_entities": self.hparams.mask_entities,
                "max_source_length": self.hparams.max_source_length,
                "max_target_length": self.hparams.max_target_length,
                "require_target": split == "train",
            }
            data, encoded = load_or_encode(
                split,
                self.split_file(split),
                self.tokenizer,
                self._cache_root(),
                {"format": CACHE_FORMAT, **settings, **({} if split == "train" else self.linking_key())},
                lambda: encoding.encode_examples(examples, self.tokenizer, targets=golds, **settings),
                namespace="generation",
                kind="train" if split == "train" else "eval",  # test and predict share entries
            )
            self.encode_count += int(encoded)
            self._datasets[split] = TokenizedSplit(data)
        return self._datasets[split]

    def prepare_data(self) -> None:
        """Build the synthetic world if asked to, and fill the tokenised cache (rank 0 only)."""
        self._ensure_data()
        for split in SPLITS:
            if split == "predict" and self._files["predict"] is None:
                continue  # the test file, cached under the same key
            path = self.split_file(split)
            if path is not None and path.is_file():
                self.dataset(split)

    def setup(self, stage: str | None = None) -> None:
        """Load the tokenised splits the stage needs (``fit`` → train + val when present)."""
        needed = STAGE_SPLITS.get(stage or "", SPLITS)
        for split in needed:
            path = self.split_file(split)
            if split == "val" and stage == "fit" and (path is None or not path.is_file()):
                continue  # fitting without validation
            self.dataset(split)

    # ------------------------------------------------------------------ loaders

    def _loader(self, split: str, batch_size: int, sampler: Sampler | None, shuffle: bool) -> DataLoader:
        workers = self.hparams.num_workers
        extra: dict[str, Any] = {"progress": self.train_progress} if split == "train" else {}
        return (ResumableDataLoader if split == "train" else DataLoader)(
            self.dataset(split),
            batch_size=batch_size,
            sampler=sampler,
            shuffle=shuffle if sampler is None else False,
            collate_fn=Seq2SeqCollator(self.pad_token_id, answer_task=self.hparams.answer_task),
            num_workers=workers,
            persistent_workers=workers > 0,
            **extra,
        )

    def train_dataloader(self) -> DataLoader:
        """Training batches: length buckets (or uniform shuffling), sharded by rank under DDP."""
        data = self.dataset("train")
        if not self.hparams.bucket_by_length:
            return self._loader("train", self.hparams.batch_size, None, shuffle=True)
        world, rank = self._world()
        sampler = LengthBucketSampler(
            data.lengths,
            self.hparams.batch_size,
            num_replicas=world,
            rank=rank,
            seed=int(os.environ.get("PL_GLOBAL_SEED", 0)),
        )
        return self._loader("train", self.hparams.batch_size, sampler, shuffle=False)

    def _eval_loader(self, split: str) -> DataLoader:
        return self._loader(split, self.hparams.eval_batch_size, self._eval_sampler(self.dataset(split)), shuffle=False)

    def val_dataloader(self) -> DataLoader | list:
        """Validation batches in file order (exactly one rank per question under DDP)."""
        path = self.split_file("val")
        if path is None or not path.is_file():
            return []
        return self._eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        """Test batches in file order (exactly one rank per question under DDP)."""
        return self._eval_loader("test")

    def predict_dataloader(self) -> DataLoader:
        """Prediction batches in file order (exactly one rank per question under DDP)."""
        return self._eval_loader("predict")

    def state_dict(self) -> dict[str, Any]:
        """The training loader's place in its epoch and the random states (the data and tokenizer are rebuilt).

        Lightning restores it before the loaders are built, so a run resumed from a mid-epoch
        checkpoint continues with the batch it had not trained on (see :mod:`.resumable`).
        """
        return {"train_loader": self.train_progress.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Hand a checkpoint's loader state to the next training pass."""
        self.train_progress.load_state_dict(state_dict.get("train_loader"))


__all__ = ["GenerationDataModule", "SPLITS"]
