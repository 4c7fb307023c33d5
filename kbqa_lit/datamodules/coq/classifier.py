"""``SchemaDataModule``: items of CoQ's joint relation/entity classifier from common-schema files.

Per example (see :mod:`kbqa_lit.datamodules.coq.classifier_inputs` for the texts and candidates) the
module builds one *relation item* per candidate relation and one *entity item* per candidate
entity, labelled 1 when the item is gold::

    Relation Classification: q ; D ; r words                      → 1 if r is a gold relation
    Entity Classification: q ; D ; label | r1 words | r2 words     → 1 if e is a gold entity

Candidates: ``candidates="meta"`` reads the retrieval stage's ``meta["relation_candidates"]``,
``meta["entity_candidates"]`` and ``meta["entity_relations"]`` (1-hop relations missing there are
looked up in the store, batched and cached); ``"sampled"`` builds gold + negatives from the KB;
``"auto"`` (default) uses the meta when the example has it, else samples — except at predict time,
where an example without retrieved candidates is an error (sampled candidates hold the gold items,
and predictions feed later stages); sampled validation/test figures warn that they are an upper
bound. Training always
includes the gold items (up to ``num_candidates`` per kind; more only when there are more gold).

Relations listed in an entity item (``entity_item_relations``): its 1-hop relations among

- training: gold ∪ ``meta["refined_relations"]`` (``gold``, the default), or only the *predicted*
  ``meta["refined_relations"]`` (``predicted``: what the classifier sees at inference; written by
  a cross-fold pass — ``num_folds``/``fold`` train on the other folds and predict the held-out
  one — and read back from ``refined_relations_files``; an example without them lists its
  candidate relations);
- validation and test: the predicted ``meta["refined_relations"]``, else the candidate relations
  — never gold, unless ``entity_item_relations: oracle`` (gold ∪ refined in every split, an
  upper bound);
- predict: the relations the classifier keeps
  (:class:`~kbqa_lit.modules.coq.schema_classifier.SchemaClassifier` scores the relations first).

Batches (train/val/test) are dicts of tensors: ``input_ids``, ``attention_mask`` (padded to the
longest item of the batch), ``labels`` (float 0/1), ``task`` (0 relation, 1 entity), ``index``
(example row in :meth:`examples`). Predict batches are lists of per-example dicts
(``index``, ``qid``, ``question``, ``decomposition``, ``relations``, ``entities`` as
``[[id, label, [1-hop relations]], ...]``) that the classifier scores in two stages.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from lightning.pytorch.utilities import rank_zero_warn
from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase

from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.linking import inference_decomposition
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.coq.classifier_inputs import (
    ENT_PREFIX,
    ENT_TASK,
    REL_PREFIX,
    REL_TASK,
    Candidates,
    ItemCollator,
    SchemaKB,
    entity_item_relations,
    entity_text,
    gold_entities,
    gold_relations,
    in_fold,
    meta_candidates,
    read_refined_relations,
    refined_relations_of,
    relation_text,
    sampled_candidates,
    with_gold,
)
from kbqa_lit.datamodules.samplers import LengthBucketSampler
from kbqa_lit.datamodules.split_files import STAGE_SPLITS, SplitFilesDataModule, canonical_split
from kbqa_lit.datamodules.tokenizer_sizes import TokenizerSizesMixin
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.lf.normalize import schema_to_words
from kbqa_lit.kb.store import is_endpoint
from kbqa_lit.kb.store.loaders import ensure_store
from kbqa_lit.kb.store.oxigraph_runner import STORE_MARKER

log = logging.getLogger(__name__)

CANDIDATE_MODES = ("auto", "meta", "sampled")
#: What an entity item lists (see the module docstring).
ENTITY_ITEM_RELATION_MODES = ("gold", "predicted", "oracle")


def _as_list(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(batch)


class SchemaDataModule(TokenizerSizesMixin, SplitFilesDataModule):
    """Data for :class:`~kbqa_lit.modules.coq.schema_classifier.SchemaClassifier` (CoQ step 2b).

    Takes the file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`
    (``data_dir``, the split files, ``synthetic_seed``, ``synthetic_size``) as keywords;
    ``data_dir`` is also the default home of the embedded store.

    Args:
        store: The KB for sampled candidates and missing 1-hop relations: an Oxigraph store folder
            or an http(s) SPARQL endpoint. ``None``: ``<data_dir>/kb_store``, built from
            ``<data_dir>/kb.nt`` on first use when that file exists.
        relations_file: Relation inventory for sampled negatives (``schema.json`` with
            ``relations``, or one id per line); ``None``: ``<data_dir>/schema.json`` when present,
            else ``SELECT DISTINCT ?p`` on the store (small KBs only).
        candidates: ``meta`` (the retrieval stage's meta fields), ``sampled`` (gold + KB
            negatives) or ``auto`` (meta when present, else sampled).
        num_candidates: ``l``, candidates per kind and example (10 in the paper).
        negative_seed: Seed of the sampled negatives (per example with the qid; deterministic).
        use_decomposition: Put the decomposition ``D`` in the items (false: "w/o decomposition").
            Validation, test and predict items carry only a decomposition a predictor wrote
            (``meta.decomposition_status: ok``), never the dataset's own or a gold-source one.
        max_entity_relations: At most this many relations listed in an entity item.
        tokenizer_name_or_path: Hub name or folder of the tokenizer (``t5-base``); ``None`` trains
            a BPE tokenizer on the training items, cached under ``<data_dir>/.tokenizer``.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_length: Items are truncated to this many tokens.
        batch_size: Training items per batch (per device); relation and entity items mixed.
        eval_batch_size: Validation/test items per batch.
        predict_batch_size: Examples per predict batch (each scored in two stages).
        num_workers: DataLoader worker processes.
        bucket_by_length: Draw training batches from buckets of items of similar length (less
            padding; order fixed by ``PL_GLOBAL_SEED`` and the epoch); false shuffles uniformly.
        entity_item_relations: The relations an entity item lists: ``gold`` (training: gold ∪
            ``meta.refined_relations``; evaluation: predicted only), ``predicted`` (training too:
            the predicted ``meta.refined_relations`` of a cross-fold pass, as at inference) or
            ``oracle`` (gold ∪ refined in every split, validation and test included: an upper
            bound).
        refined_relations_files: JSON-lines files whose rows' ``meta.refined_relations`` (by qid)
            replace the training examples' (the held-out-fold predictions of the cross-fold pass).
        num_folds: Cross-fold pass: split the training file into this many folds (by a hash of the
            qid); with ``fold``, train on the other folds and predict only fold ``fold`` of the
            predict file. ``None``: no folds.
        fold: The held-out fold (``0 <= fold < num_folds``).
        **kwargs: The file arguments of :class:`~kbqa_lit.datamodules.split_files.SplitFilesDataModule`.
    """

    def __init__(
        self,
        store: str | None = None,
        relations_file: str | None = None,
        candidates: Literal["auto", "meta", "sampled"] = "auto",
        num_candidates: int = 10,
        negative_seed: int = 0,
        use_decomposition: bool = True,
        max_entity_relations: int = 8,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        max_length: int = 256,
        batch_size: int = 32,
        eval_batch_size: int = 64,
        predict_batch_size: int = 8,
        num_workers: int = 0,
        bucket_by_length: bool = True,
        entity_item_relations: Literal["gold", "predicted", "oracle"] = "gold",
        refined_relations_files: list[str] | None = None,
        num_folds: int | None = None,
        fold: int | None = None,
        **kwargs: Any,
    ) -> None:
        check_choice("candidates", candidates, CANDIDATE_MODES)
        check_choice("entity_item_relations", entity_item_relations, ENTITY_ITEM_RELATION_MODES)
        if (num_folds is None) != (fold is None) or (
            num_folds is not None and (num_folds < 2 or not 0 <= int(fold or 0) < num_folds)
        ):
            raise UserInputError(f"give num_folds >= 2 and 0 <= fold < num_folds together, got {num_folds}, {fold}")
        if num_candidates < 1:
            raise UserInputError(f"num_candidates must be >= 1, got {num_candidates}")
        super().__init__(**kwargs)  # keeps the files and saves the hyper-parameters
        self._items: dict[str, list[dict[str, Any]]] = {}
        self._candidates: dict[tuple[str, int], Candidates] = {}
        self._warned_sampled = False
        self._warned_unrefined = False
        self._kb: SchemaKB | None = None
        self.tokenizer: PreTrainedTokenizerBase = self._build_tokenizer()

    # ------------------------------------------------------------------ the KB

    @property
    def store_spec(self) -> str:
        """The store folder or endpoint URL this datamodule (and the pattern writer, by default) uses."""
        if self.hparams.store:
            return str(self.hparams.store)
        return str(self._home() / "kb_store")

    def _ensure_store(self) -> None:
        spec = self.store_spec
        if self.hparams.store or is_endpoint(spec):
            return
        if (Path(spec) / STORE_MARKER).is_file():
            return
        self._ensure_data()
        source = self._home() / "kb.nt"
        if not source.is_file():
            raise UserInputError(f"no store at {spec} and no {source} to build it from; set `store`")
        if ensure_store(spec, [source], "nt"):
            log.info("built the embedded store %s from %s", spec, source)

    @property
    def kb(self) -> SchemaKB:
        """The cached KB lookups (opens the store, building the embedded one on first use)."""
        if self._kb is None:
            from kbqa_lit.kb.store import open_store

            self._ensure_store()
            rel_file = self.hparams.relations_file
            if rel_file is None and self.data_dir is not None and (self.data_dir / "schema.json").is_file():
                rel_file = str(self.data_dir / "schema.json")
            self._kb = SchemaKB(open_store(self.store_spec), relations_file=rel_file)
        return self._kb

    # ------------------------------------------------------------------ examples (folds, refined relations)

    def gold_examples(self, split: str) -> list[KBQAExample]:
        """The file's examples, cut to the cross-fold pass's folds, with its refined relations.

        Under ``num_folds``/``fold`` the training split holds the other folds and predict the
        held-out fold; training examples carry the ``refined_relations_files``' relations.
        """
        split = canonical_split(split)
        if split not in self._gold:
            rows = super().gold_examples(split)
            k, fold = self.hparams.num_folds, self.hparams.fold
            if k is not None and split in ("train", "predict"):
                rows = in_fold(rows, k, int(fold), held_out=split == "predict")
            if split == "train" and self.hparams.refined_relations_files:
                refined = read_refined_relations(self.hparams.refined_relations_files)
                rows = [
                    replace(ex, meta={**ex.meta, "refined_relations": refined[ex.qid]}) if ex.qid in refined else ex
                    for ex in rows
                ]
            self._gold[split] = rows
        return self._gold[split]

    # ------------------------------------------------------------------ candidates and items

    def candidates(self, split: str, index: int) -> Candidates:
        """The candidates of example ``index`` of ``split`` (gold included when training or sampled)."""
        split = canonical_split(split)
        key = (split, index)
        if key not in self._candidates:
            ex = self.examples(split)[index]
            limit = self.hparams.num_candidates
            mode = self.hparams.candidates
            cands = meta_candidates(ex) if mode in ("auto", "meta") else None
            if cands is None:
                if mode == "meta" or (mode == "auto" and split == "predict"):
                    raise UserInputError(
                        f"{split} example {ex.qid!r} has no meta['relation_candidates'] (candidates: {mode}); "
                        "sampled candidates include the gold items, so predictions never use them: run the "
                        "retrieval stage on this file first"
                    )
                if split != "train" and not self._warned_sampled:
                    self._warned_sampled = True
                    rank_zero_warn(
                        f"SchemaDataModule: {split} examples without retrieved candidates get sampled ones, which "
                        "include every gold item: their figures are an upper bound, not a prediction"
                    )
                cands = sampled_candidates(ex, self.kb, limit, seed=self.hparams.negative_seed)
            elif split == "train":
                cands = with_gold(cands, ex, limit)
            else:
                cands = Candidates(
                    cands.relations[:limit], dict(list(cands.entities.items())[:limit]), cands.entity_relations
                )
            missing = [e for e in cands.entities if e not in cands.entity_relations]
            if missing:
                cands.entity_relations.update(self.kb.one_hop_relations(missing))
            self._candidates[key] = cands
        return self._candidates[key]

    def _decomposition(self, ex: KBQAExample, split: str) -> str | None:
        """``D`` of an item: the file's own in training, only a predicted one at evaluation and predict.

        See :func:`~kbqa_lit.data.linking.inference_decomposition`: a gold decomposition never
        reaches validation, test or predict items.
        """
        if not self.hparams.use_decomposition:
            return None
        return ex.decomposition if canonical_split(split) == "train" else inference_decomposition(ex)

    def example_texts(self, split: str, index: int) -> list[tuple[str, float, int]]:
        """``(text, label, task)`` of every item of one example: relations first, then entities."""
        ex = self.examples(split)[index]
        cands = self.candidates(split, index)
        d = self._decomposition(ex, split)
        gold_r, gold_e = set(gold_relations(ex)), set(gold_entities(ex))
        out = [(relation_text(ex.question, d, r), float(r in gold_r), REL_TASK) for r in cands.relations]
        refined = self.listed_relations(ex, split, cands)
        limit = self.hparams.max_entity_relations
        for e, label in cands.entities.items():
            rels = entity_item_relations(cands.entity_relations.get(e, []), refined, limit)
            out.append((entity_text(ex.question, d, label, rels), float(e in gold_e), ENT_TASK))
        return out

    def listed_relations(self, ex: KBQAExample, split: str, cands: Candidates) -> list[str]:
        """The relations an entity item may list (those among its 1-hop relations are listed).

        Gold ∪ ``meta.refined_relations`` for ``oracle``, and for ``gold`` in training; otherwise
        only predicted relations: ``meta.refined_relations``, else the candidate relations.
        """
        mode = self.hparams.entity_item_relations
        if mode == "oracle" or (mode == "gold" and canonical_split(split) == "train"):
            return list(dict.fromkeys(gold_relations(ex) + refined_relations_of(ex)))
        if "refined_relations" in ex.meta:
            return refined_relations_of(ex)
        if canonical_split(split) == "train" and not self._warned_unrefined:
            self._warned_unrefined = True
            rank_zero_warn(
                "SchemaDataModule(entity_item_relations: predicted): training examples without "
                "meta.refined_relations list their candidate relations; run the cross-fold pass "
                "(num_folds/fold, then refined_relations_files)"
            )
        return list(cands.relations)

    def items(self, split: str) -> list[dict[str, Any]]:
        """The tokenised items of ``split`` (built once)."""
        split = canonical_split(split)
        if split not in self._items:
            rows: list[tuple[str, float, int, int]] = []
            for i in range(len(self.examples(split))):
                rows.extend((t, y, k, i) for t, y, k in self.example_texts(split, i))
            enc = self.tokenizer(
                [r[0] for r in rows], truncation=True, max_length=self.hparams.max_length, add_special_tokens=True
            )
            self._items[split] = [
                {"input_ids": ids, "label": y, "task": k, "index": i}
                for ids, (_, y, k, i) in zip(enc["input_ids"], rows, strict=True)
            ]
        return self._items[split]

    def predict_records(self) -> list[dict[str, Any]]:
        """Per predict example: the raw inputs the classifier scores in two stages."""
        out = []
        for i, ex in enumerate(self.examples("predict")):
            cands = self.candidates("predict", i)
            out.append(
                {
                    "index": i,
                    "qid": ex.qid,
                    "question": ex.question,
                    "decomposition": self._decomposition(ex, "predict"),
                    "relations": list(cands.relations),
                    "entities": [
                        [e, lab, list(cands.entity_relations.get(e, []))] for e, lab in cands.entities.items()
                    ],
                }
            )
        return out

    # ------------------------------------------------------------------ tokenizer

    def _build_tokenizer(self) -> PreTrainedTokenizerBase:
        name = self.hparams.tokenizer_name_or_path
        if name is not None:
            return build_tokenizer(name)
        self._ensure_data()
        splits = [s for s in ("train", "val", "test", "predict") if self._has(s)]
        if not splits:
            raise UserInputError("no examples to train a tokenizer on; set tokenizer_name_or_path or the files")
        split = splits[0]
        texts = [REL_PREFIX, ENT_PREFIX]
        for ex in self.examples(split):
            texts.append(ex.question)
            if ex.decomposition:
                texts.append(ex.decomposition)
            texts.extend(schema_to_words(r) for r in gold_relations(ex))
            texts.extend(ex.entity_labels().values())
        texts.extend(schema_to_words(r) for r in self._inventory_for_tokenizer())
        return build_tokenizer(
            train_texts=texts, vocab_size=self.hparams.vocab_size, cache_dir=self._home() / ".tokenizer"
        )

    def _inventory_for_tokenizer(self) -> list[str]:
        """The relation inventory when a file gives it (the store is not opened for the tokenizer)."""
        path = self.hparams.relations_file
        if path is None and self.data_dir is not None and (self.data_dir / "schema.json").is_file():
            path = self.data_dir / "schema.json"
        return SchemaKB(None, relations_file=path).relation_inventory() if path else []

    # ------------------------------------------------------------------ stages and loaders

    def prepare_data(self) -> None:
        """Build the synthetic world and the embedded store if asked to (rank 0 only)."""
        self._ensure_data()
        if self.hparams.candidates != "meta":
            self.kb  # noqa: B018  (opens the store, building it on first use)

    def setup(self, stage: str | None = None) -> None:
        """Build the items the stage needs (``fit`` → train + val when present)."""
        for split in STAGE_SPLITS.get(stage or "", ("train", "val", "test")):
            if split == "predict":
                continue  # predict records are cheap and built by the loader
            if split == "val" and not self._has("val"):
                continue
            self.items(split)

    def _ordered_loader(self, data: list[dict[str, Any]], batch_size: int, collate_fn: Any, **extra: Any) -> DataLoader:
        """``data`` in order, each row on exactly one rank under DDP."""
        return DataLoader(
            data,  # type: ignore[arg-type]
            batch_size=batch_size,
            sampler=self._eval_sampler(data),
            shuffle=False,
            collate_fn=collate_fn,
            **extra,
        )

    def _eval_loader(self, split: str) -> DataLoader:
        return self._ordered_loader(
            self.items(split),
            self.hparams.eval_batch_size,
            ItemCollator(self.pad_token_id),
            num_workers=self.hparams.num_workers,
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled batches mixing relation and entity items, by length buckets, sharded by rank under DDP."""
        data = self.items("train")
        sampler = None
        if self.hparams.bucket_by_length:
            world, rank = self._world()
            lengths = [len(it["input_ids"]) for it in data]
            seed = int(os.environ.get("PL_GLOBAL_SEED", 0))
            sampler = LengthBucketSampler(lengths, self.hparams.batch_size, num_replicas=world, rank=rank, seed=seed)
        return DataLoader(
            data,  # type: ignore[arg-type]
            batch_size=self.hparams.batch_size,
            sampler=sampler,
            shuffle=sampler is None,
            collate_fn=ItemCollator(self.pad_token_id),
            num_workers=self.hparams.num_workers,
        )

    def val_dataloader(self) -> DataLoader | list:
        """Validation items in file order (each on exactly one rank under DDP)."""
        return self._eval_loader("val") if self._has("val") else []

    def test_dataloader(self) -> DataLoader:
        """Test items in file order."""
        return self._eval_loader("test")

    def predict_dataloader(self) -> DataLoader:
        """Lists of per-example records (see the module docstring), each example on one rank."""
        return self._ordered_loader(self.predict_records(), self.hparams.predict_batch_size, _as_list)


__all__ = ["CANDIDATE_MODES", "ENTITY_ITEM_RELATION_MODES", "ItemCollator", "SchemaDataModule"]
