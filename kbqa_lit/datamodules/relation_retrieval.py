"""``RelationRetrievalDataModule``: (question, relation) groups for the relation cross-encoder.

Per question, the positives are the gold relations of its gold S-expression
(:func:`~kbqa_lit.kb.lf.sexpr.schema_items`); each positive makes one training group
``[positive, negative_1 .. negative_K]`` whose negatives come from the relation inventory:
``round(hard_negative_ratio * K)`` BM25-hard ones (the inventory's best BM25 matches of the
question that are not gold) and random ones for the rest, drawn with a generator seeded by
``(seed, qid, positive)`` — the same groups on every run and every rank. An inventory smaller
than ``K + 1`` gives shorter groups (the module pads the softmax).

Validation and test rows hold every candidate of a question — the whole inventory, or its BM25
top ``eval_candidates`` when it is larger — with 0/1 labels and the count of gold relations
(gold relations outside the candidates count as misses in recall@k).

Batches (dynamic padding): ``input_ids``, ``attention_mask``, [``token_type_ids``] of the
flattened pairs, ``group_sizes`` (pairs per group/question), ``labels`` (1 for gold), ``n_gold``
and ``index`` (row positions in :meth:`examples` of the split).

The inventory comes from, in order: ``inventory_file``; ``store`` (a store directory or endpoint
URL, cached next to it); the ``kb.nt`` of ``data_dir`` (the synthetic world, built on first use
with ``synthetic_seed``); else the gold relations of the training examples.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader

from kbqa_lit.backbones.encoders import MINILM, build_encoder_tokenizer
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.split_files import SplitFilesDataModule, canonical_split
from kbqa_lit.datamodules.tokenizer_sizes import TokenizerSizesMixin
from kbqa_lit.errors import DataFormatError, KBQAError, UserInputError
from kbqa_lit.kb.index.relation_inventory import BM25RelationRanker, RelationInventory, load_inventory
from kbqa_lit.kb.lf.sexpr import schema_items

log = logging.getLogger(__name__)


def gold_schema_items(ex: KBQAExample, kind: str, path: object = "") -> list[str]:
    """The ``relations``/``classes``/``entities`` of an example's gold S-expression, in order ([] without one).

    Raises:
        DataFormatError: When the S-expression does not parse (naming the file and the qid).
    """
    if not ex.s_expression:
        return []
    try:
        return list(getattr(schema_items(ex.s_expression), kind))
    except KBQAError as exc:
        raise DataFormatError(path or "<examples>", ex.qid, f"bad gold S-expression: {exc}") from None


def gold_relations(ex: KBQAExample, path: object = "") -> list[str]:
    """The relations of an example's gold S-expression, in order of first occurrence ([] without one).

    Raises:
        DataFormatError: When the S-expression does not parse (naming the file and the qid).
    """
    return gold_schema_items(ex, "relations", path)


class PairCollator:
    """Tokenise the (question, item text) pairs of rows into one padded batch.

    Args:
        tokenizer: The encoder's tokenizer.
        inventory: Gives each relation's words (the default item text).
        max_length: Pair length limit in tokens.
        text_of: The text of an item (default ``inventory.words``; FC-KBQA's extractors pass
            their ``[D] ... [N] ... [R] ...`` items).
    """

    def __init__(
        self,
        tokenizer: Any,
        inventory: RelationInventory,
        max_length: int,
        text_of: Callable[[str], str] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.inventory = inventory
        self.max_length = max_length
        self.text_of = text_of or inventory.words

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        """Flatten the rows' pairs, pad them dynamically and add the group bookkeeping."""
        questions = [r["question"] for r in rows for _ in r["relations"]]
        texts = [self.text_of(rel) for r in rows for rel in r["relations"]]
        enc = self.tokenizer(
            questions, texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
        )
        batch = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        batch["group_sizes"] = torch.tensor([len(r["relations"]) for r in rows], dtype=torch.long)
        batch["labels"] = torch.tensor([x for r in rows for x in r["labels"]], dtype=torch.float)
        batch["n_gold"] = torch.tensor([r["n_gold"] for r in rows], dtype=torch.long)
        batch["index"] = torch.tensor([r["index"] for r in rows], dtype=torch.long)
        return batch


class RelationRetrievalDataModule(TokenizerSizesMixin, SplitFilesDataModule):
    """Data for :class:`~kbqa_lit.modules.cross_encoder.CrossEncoderRetriever` (CoQ step 2a).

    Takes the file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`
    (``data_dir``, the split files, ``synthetic_seed``, ``synthetic_size``) as keywords; this
    module has no predict stage, so ``predict_file`` is unused.

    Args:
        store: Store directory or endpoint URL whose relations form the inventory.
        inventory_file: A relation inventory file (JSON or one id per line); wins over ``store``.
        tokenizer_name_or_path: The encoder's tokenizer (hub name, folder, or
            ``all-MiniLM-L6-v2``); ``None`` trains a WordPiece tokenizer on the training
            questions and the relation words (for a BERT built from a config).
        vocab_size: Vocabulary size of a trained tokenizer.
        num_negatives: Negatives per positive in a training group.
        hard_negative_ratio: Share of the negatives taken from the BM25 ranking (the rest random).
        eval_candidates: Validation/test candidates per question: the BM25 top-N when the
            inventory is larger (0: always the whole inventory).
        max_length: Pair length limit in tokens.
        batch_size: Training groups per batch (each ``1 + num_negatives`` pairs).
        eval_batch_size: Questions per validation/test batch.
        num_workers: DataLoader worker processes.
        seed: Seed of the negative sampling and of the training order.
        **kwargs: The file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`.
    """

    def __init__(
        self,
        store: str | None = None,
        inventory_file: str | None = None,
        tokenizer_name_or_path: str | None = MINILM,
        vocab_size: int = 2000,
        num_negatives: int = 15,
        hard_negative_ratio: float = 0.5,
        eval_candidates: int = 100,
        max_length: int = 64,
        batch_size: int = 8,
        eval_batch_size: int = 8,
        num_workers: int = 0,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)  # keeps the files and saves the hyper-parameters
        if num_negatives < 1 or not 0.0 <= hard_negative_ratio <= 1.0:
            raise UserInputError("num_negatives must be >= 1 and hard_negative_ratio within [0, 1]")
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self.inventory = self._load_inventory()
        self.bm25 = BM25RelationRanker(self.inventory, top_n=eval_candidates)
        self.tokenizer = self._build_tokenizer()

    # ------------------------------------------------------------------ inventory and tokenizer

    def _load_inventory(self) -> RelationInventory:
        hp = self.hparams
        if hp.inventory_file:
            return RelationInventory.from_file(hp.inventory_file)
        if hp.store:
            return load_inventory(hp.store)
        self._ensure_data()
        if self.data_dir is not None and (self.data_dir / "kb.nt").is_file():
            return RelationInventory.from_ntriples(self.data_dir / "kb.nt")
        rels = [
            r
            for split in ("train", "val", "test")
            if self._has(split)
            for ex in self.examples(split)
            for r in gold_relations(ex)
        ]
        log.warning("no store or inventory file: the inventory is the %d gold relations of the splits", len(set(rels)))
        inv = RelationInventory.from_relations(rels, source="gold relations")
        if not len(inv):
            raise UserInputError("no relation inventory: set store or inventory_file")
        return inv

    def _build_tokenizer(self) -> Any:
        name = self.hparams.tokenizer_name_or_path
        if name is not None:
            return build_encoder_tokenizer(name)
        return build_encoder_tokenizer(
            None,
            train_texts=self._tokenizer_texts(),
            vocab_size=self.hparams.vocab_size,
            cache_dir=self._home() / ".tokenizer",
        )

    def _tokenizer_texts(self) -> list[str]:
        """What a trained tokenizer learns: the first split's questions and the inventory's texts."""
        splits = [s for s in ("train", "val", "test") if self._has(s)]
        return [ex.question for s in splits[:1] for ex in self.examples(s)] + self.inventory.texts

    # ------------------------------------------------------------------ rows

    def negatives(self, ex: KBQAExample, positive: str, gold: Sequence[str]) -> list[str]:
        """The sampled negatives of one training group (deterministic given ``seed``)."""
        k = min(self.hparams.num_negatives, len(self.inventory) - len(set(gold) & set(self.inventory)))
        excluded = set(gold)
        n_hard = round(self.hparams.hard_negative_ratio * k)
        hard = [r for r, _ in self.bm25.rank(ex.question, n_hard + len(excluded)) if r not in excluded][:n_hard]
        rest = [r for r in self.inventory.relations if r not in excluded and r not in hard]
        rng = random.Random(f"{self.hparams.seed}:{ex.qid}:{positive}")
        return hard + rng.sample(rest, min(k - len(hard), len(rest)))

    def gold_items(self, ex: KBQAExample, path: object = "") -> list[str]:
        """The gold items of an example the groups are built from: its gold relations (subclasses: others)."""
        return gold_relations(ex, path)

    def rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a split: training groups, or one all-candidates row per question."""
        split = canonical_split(split)
        if split in self._rows:
            return self._rows[split]
        path = self.split_file(split)
        rows: list[dict[str, Any]] = []
        missing = 0
        for i, ex in enumerate(self.examples(split)):
            gold = self.gold_items(ex, path)
            if split == "train":
                for pos in gold:
                    if pos not in self.inventory:
                        missing += 1
                        continue
                    rels = [pos, *self.negatives(ex, pos, gold)]
                    rows.append(
                        {
                            "index": i,
                            "question": ex.question,
                            "relations": rels,
                            "n_gold": 1,
                            "labels": [1] + [0] * (len(rels) - 1),
                        }
                    )
            else:
                cands = self.bm25.prefilter(ex.question)
                golds = set(gold)
                rows.append(
                    {
                        "index": i,
                        "question": ex.question,
                        "relations": cands,
                        "n_gold": len(golds),
                        "labels": [int(r in golds) for r in cands],
                    }
                )
        if missing:
            log.warning("%s: %d gold relations are not in the inventory (%s)", split, missing, self.inventory.source)
        if split == "train" and not rows:
            raise UserInputError(f"no training groups in {path}: no example has a gold relation in the inventory")
        self._rows[split] = rows
        return rows

    # ------------------------------------------------------------------ Lightning hooks

    def prepare_data(self) -> None:
        """Build the synthetic world if asked to."""
        self._ensure_data()

    def setup(self, stage: str | None = None) -> None:
        """Build the rows of the stage's splits."""
        splits = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",)}.get(
            stage or "", ("train", "val", "test")
        )
        for split in splits:
            if self._has(split):
                self.rows(split)

    def _collator(self) -> PairCollator:
        return PairCollator(self.tokenizer, self.inventory, self.hparams.max_length)

    def train_dataloader(self) -> DataLoader:
        """Training groups in a seeded random order."""
        gen = torch.Generator().manual_seed(int(self.hparams.seed))
        workers = self.hparams.num_workers
        return DataLoader(
            self.rows("train"),
            batch_size=self.hparams.batch_size,
            shuffle=True,
            generator=gen,
            collate_fn=self._collator(),
            num_workers=workers,
            persistent_workers=workers > 0,
        )

    def _eval_loader(self, split: str) -> DataLoader:
        rows = self.rows(split)
        return DataLoader(
            rows,
            batch_size=self.hparams.eval_batch_size,
            sampler=self._eval_sampler(rows),
            shuffle=False,
            collate_fn=self._collator(),
            num_workers=self.hparams.num_workers,
        )

    def val_dataloader(self) -> DataLoader | list:
        """All candidates of each validation question ([] without a validation file)."""
        return self._eval_loader("val") if self._has("val") else []

    def test_dataloader(self) -> DataLoader:
        """All candidates of each test question."""
        return self._eval_loader("test")


__all__ = ["PairCollator", "RelationRetrievalDataModule", "gold_relations"]
