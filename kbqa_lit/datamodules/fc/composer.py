"""``ComposerDataModule``: FC-KBQA's composer as seq2seq rows (composer input → normalised S-expression).

Sources are :func:`~kbqa_lit.data.fc.composer_examples.composer_row` texts — the question, the
KB-connected pairs, the linked entities and the top-2 skeletons, in the ``input_format`` of
:mod:`~kbqa_lit.data.fc.composer_inputs` (``paper``, the default: §4.5, no relation–entity pairs;
``entity-pairs``: ours, with them); targets the normalised gold S-expression (slots ``[E0]``...
with ``mask_entities``), what the project's generator writes and the grammar-constrained decoder
follows.

- **Training** (``train_components``): ``detected`` (the default, the paper's) reads each training
  question's own ``meta["fc"]`` as ``kbqa fc detect`` wrote it — the same reader, order and size
  as evaluation (:func:`~kbqa_lit.data.fc.composer_examples.detected_training_components`), so
  ``train_file`` must be a detected file (a question without it is an error naming the file);
  ``gold+distractors`` (ours) reads the gold components plus sampled distractor pairs
  (:func:`~kbqa_lit.data.fc.composer_examples.training_components`) from any training file.
- **Validation, test, predict** read what the FC pipeline detected and wrote into
  ``meta["fc"]`` (:func:`~kbqa_lit.data.fc.composer_examples.predicted_components`); a split
  where no example has it is an error (run the FC pipeline on it first), an example without it
  gets the question and its linked entities only (counted in :attr:`ComposerDataModule.missing`).
  The views' ``topic_entities`` become the detected entities, so the execution-guided callback
  puts the same labels back into slot-masked beams.
- ``oracle: components`` builds evaluation inputs from the gold components and distractors (as
  ``train_components: gold+distractors`` trains); ``oracle: linking`` keeps the predicted pairs and
  skeletons with the gold entities. Either labels the run an oracle run (:meth:`oracle_inputs`).

Ablations (settings): ``knowledge: components`` (−knowledge pairs: the detected relations and
classes without their pairing), ``knowledge: none`` (−knowledge: skeletons and entities only),
``use_skeletons: false`` (−logical skeleton).

Constrained decoding at evaluation: :meth:`ComposerDataModule.decoding_rules` gives an example's
pair rules (:func:`~kbqa_lit.data.fc.decoding.pair_rules`, mode ``pair_constraint``), which the
execution-guided callback adds to its grammar under ``constrained: datamodule``.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Literal

from kbqa_lit.data.entity_slots import topic_slots
from kbqa_lit.data.fc.composer_examples import (
    FC_META,
    KNOWLEDGE,
    TRAIN_COMPONENTS,
    Components,
    DistractorPool,
    composer_row,
    detected_training_components,
    predicted_components,
    training_components,
)
from kbqa_lit.data.fc.composer_inputs import check_input_format
from kbqa_lit.data.fc.decoding import pair_rules
from kbqa_lit.data.linking import inference_view
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.fc.seq2seq import FCSeq2SeqDataModule
from kbqa_lit.datamodules.split_files import canonical_split
from kbqa_lit.decoding.pairs import PAIR_MODES, PAIR_PARTNERS
from kbqa_lit.errors import UserInputError, check_choice

log = logging.getLogger(__name__)


class ComposerDataModule(FCSeq2SeqDataModule):
    """Composer rows for the seq2seq generator (see the module docstring).

    Args:
        knowledge: ``pairs`` (the KB-connected pairs), ``components`` (bare relations and classes) or ``none``.
        input_format: ``paper`` (§4.5: no relation–entity pairs, every entity as ``[ENT]e``) or
            ``entity-pairs`` (ours: with relation–entity pairs); training and evaluation alike.
        train_components: ``detected`` (the paper's: ``train_file``'s ``meta["fc"]`` from ``kbqa fc
            detect``) or ``gold+distractors`` (ours: gold components plus sampled distractors).
        use_skeletons: Write the skeleton candidates into the inputs.
        mask_entities: Entities as slots ``[E0]``... in inputs and targets.
        num_distractors: Distractor pairs per kind (``gold+distractors`` and ``oracle: components``).
        seed: Distractor sampling seed.
        max_input_words: The inputs' length limit in words (pairs cut, worst first); ``None``: none.
        pair_constraint: Mode of :meth:`decoding_rules`: ``bag`` (the paper's bag of words) or ``trie``
            (exact items; ours).
        chain_heads: Relations this many pairs from an entity's are allowed first (0: the paper's start
            set; see :class:`~kbqa_lit.decoding.pairs.PairRules`).
        pair_partners: After a component, ``last`` (the paper's: only the partners of the last one
            written) or ``any`` (ours: the partners of any written before).
        **kwargs: The arguments of :class:`~kbqa_lit.datamodules.fc.seq2seq.FCSeq2SeqDataModule`;
            ``oracle`` is ``none``, ``linking`` or ``components``.
    """

    ORACLES = ("none", "linking", "components")

    def __init__(
        self,
        knowledge: Literal["pairs", "components", "none"] = "pairs",
        input_format: Literal["paper", "entity-pairs"] = "paper",
        train_components: Literal["detected", "gold+distractors"] = "detected",
        use_skeletons: bool = True,
        mask_entities: bool = True,
        num_distractors: int = 3,
        seed: int = 0,
        max_input_words: int | None = None,
        pair_constraint: Literal["trie", "bag"] = "bag",
        chain_heads: int = 0,
        pair_partners: Literal["last", "any"] = "last",
        **kwargs: Any,
    ) -> None:
        if num_distractors < 0:
            raise UserInputError(f"num_distractors must be >= 0, got {num_distractors}")
        check_choice("knowledge", knowledge, KNOWLEDGE)
        check_input_format(input_format)
        check_choice("train_components", train_components, TRAIN_COMPONENTS)
        check_choice("pair_constraint", pair_constraint, PAIR_MODES)
        check_choice("pair_partners", pair_partners, PAIR_PARTNERS)
        self._pool: DistractorPool | None = None
        self._views: dict[str, list[KBQAExample]] = {}
        self._detected_train: list[Components] | None = None
        #: Evaluation examples per split that had no ``meta["fc"]`` (question and entities only).
        self.missing: dict[str, int] = {}
        super().__init__(**kwargs)

    @property
    def pool(self) -> DistractorPool:
        """The training split's gold pairs (built once)."""
        if self._pool is None:
            self._pool = DistractorPool(self.gold_examples("train"))
        return self._pool

    def _training(self, ex: KBQAExample) -> Components | None:
        """Gold components and distractors (``gold+distractors`` and ``oracle: components``)."""
        hp = self.hparams
        return training_components(ex, self.pool, hp.num_distractors, hp.seed)

    def detected_training(self) -> list[Components]:
        """The training questions' own ``meta["fc"]``, in file order (``train_components: detected``).

        Raises:
            UserInputError: When the training file is missing or a question has no ``meta["fc"]``.
        """
        if self._detected_train is None:
            self._ensure_data()
            path, given = self.split_file("train"), self.hparams.train_file
            if path is None or not path.is_file():
                where = str(path)
                if given and self.data_dir is not None and not Path(given).is_absolute():
                    where = f"{self.data_dir / given} (nor {given} from the working folder)"
                raise UserInputError(
                    f"no detected training file {where}: train_components: detected trains on what kbqa fc detect "
                    "wrote; run it on the training file and give its output as train_file, or set "
                    "train_components: gold+distractors"
                )
            self._detected_train = detected_training_components(self.gold_examples("train"), str(path))
        return self._detected_train

    def examples(self, split: str) -> list[KBQAExample]:
        """Examples as the stage sees them; evaluation views carry the detected entities as ``topic_entities``."""
        split = canonical_split(split)
        if split == "train" or self.hparams.oracle != "none":
            return super().examples(split)
        if split not in self._views:
            # the FC linker's entities are in meta["fc"]: the views need no linker of their own, only no gold
            views = [inference_view(ex, self.linking) for ex in self.gold_examples(split)]
            found = [predicted_components(v) for v in views]
            if views and not any(c is not None for c in found):
                raise UserInputError(
                    f"no example of {self.split_file(split)} has meta[{FC_META!r}] (the detected pairs, entities and "
                    "skeletons): run the FC pipeline on it first, or set oracle: components for an oracle run"
                )
            self.missing[split] = sum(c is None for c in found)
            if self.missing[split]:
                log.warning("%s: %d examples without meta[%r]", split, self.missing[split], FC_META)
            self._views[split] = [
                v if c is None else dataclasses.replace(v, topic_entities=dict(c.entities))
                for v, c in zip(views, found, strict=True)
            ]
        return self._views[split]

    def _components(self, split: str, view: KBQAExample, gold: KBQAExample) -> Components:
        oracle = self.hparams.oracle
        if oracle == "components" or (split == "train" and self.hparams.train_components == "gold+distractors"):
            return self._training(gold) or Components(entities=dict(gold.topic_entities))
        found = predicted_components(view) or Components(entities=dict(view.topic_entities))
        if oracle == "linking":  # predicted pairs and skeletons, gold entities
            found = dataclasses.replace(found, entities=dict(gold.topic_entities))
        return found

    def decoding_rules(self, ex: KBQAExample) -> list[Any]:
        """The pair rules of an evaluation example (one of :meth:`examples`), ``[]`` when it has no components."""
        hp = self.hparams
        found = self._training(ex) if hp.oracle == "components" else predicted_components(ex)
        if found is None:
            return []
        found = dataclasses.replace(found, entities=dict(ex.topic_entities))
        slots = [slot for slot, _ in topic_slots(ex)] if hp.mask_entities else []
        return [pair_rules(found, slots, hp.pair_constraint, hp.chain_heads, hp.pair_partners)]

    def row_texts(self, split: str) -> list[tuple[str, str | None]]:
        """``(composer input, normalised gold S-expression)`` per example of ``split``."""
        split = canonical_split(split)
        hp = self.hparams
        detected = split == "train" and hp.train_components == "detected"
        found = self.detected_training() if detected else None
        golds = self.gold_examples(split)
        views = golds if split == "train" else self.examples(split)
        return [
            composer_row(
                view,
                found[k] if found is not None else self._components(split, view, gold),
                gold=gold,
                knowledge=hp.knowledge,
                use_skeletons=hp.use_skeletons,
                mask_entities=hp.mask_entities,
                max_tokens=hp.max_input_words,
                input_format=hp.input_format,
            )
            for k, (view, gold) in enumerate(zip(views, golds, strict=True))
        ]


__all__ = ["ComposerDataModule"]
