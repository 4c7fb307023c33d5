"""Where a datamodule's splits live: common-schema JSON-lines files, or the synthetic world built on first use.

:class:`SplitFilesDataModule` declares the file arguments the datamodules share (``data_dir``, the
split files, ``synthetic_seed``/``synthetic_size``) once; a subclass takes its own arguments and
hands the rest on with ``super().__init__(**kwargs)`` (LightningCLI and ``--print_config`` still
list every argument: jsonargparse follows ``**kwargs`` into this class's signature).
:class:`LinkedSplitFilesDataModule` adds the ``linking`` arguments the same way.
:class:`SplitFilesMixin` holds the behaviour: it expects ``self.data_dir`` (a :class:`~pathlib.Path`
or ``None``), ``self._files`` (split → given file or ``None``), ``self._examples = {}`` and
hyper-parameters ``synthetic_seed`` / ``synthetic_size``, all of which
:meth:`SplitFilesMixin._init_split_files` sets.
"""

from __future__ import annotations

import logging
from collections.abc import Sized
from pathlib import Path
from typing import Any, Literal

from lightning.pytorch import LightningDataModule
from lightning.pytorch.utilities import rank_zero_warn

from kbqa_lit.data.linking import (
    IndexLinker,
    Linker,
    check_linking,
    inference_view,
    linking_recall,
    oracle_inputs,
)
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.datamodules.samplers import UnrepeatedDistributedSampler
from kbqa_lit.errors import UserInputError, check_choice

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test", "predict")
SPLIT_ALIASES = {"dev": "val", "valid": "val", "validation": "val", "validate": "val"}
_DEFAULT_NAMES = {"train": ("train.jsonl",), "val": ("dev.jsonl", "val.jsonl"), "test": ("test.jsonl",)}
STAGE_SPLITS = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",), "predict": ("predict",)}


def canonical_split(split: str) -> str:
    """The split name a datamodule uses for ``split`` (``dev``/``valid``/``validation``/``validate`` → ``val``)."""
    return SPLIT_ALIASES.get(split, split)


class SplitFilesMixin:
    """Split files, the synthetic world on first use, examples per split, and the process's place in DDP."""

    data_dir: Path | None
    _files: dict[str, str | None]
    _examples: dict[str, list[KBQAExample]]
    hparams: Any

    def _init_split_files(
        self,
        data_dir: str | None,
        train_file: str | None,
        val_file: str | None,
        test_file: str | None,
        predict_file: str | None,
        synthetic_seed: int | None,
    ) -> None:
        """Check and keep the constructor's file arguments (call from ``__init__``).

        Raises:
            UserInputError: Without ``data_dir`` and without any split file, or for
                ``synthetic_seed`` without ``data_dir``.
        """
        files = {"train": train_file, "val": val_file, "test": test_file, "predict": predict_file}
        if data_dir is None and all(f is None for f in files.values()):
            raise UserInputError(f"{type(self).__name__} needs data_dir or at least one split file")
        if synthetic_seed is not None and data_dir is None:
            raise UserInputError("synthetic_seed needs data_dir (where the world is built)")
        self.data_dir = Path(data_dir).expanduser() if data_dir else None
        self._files = files
        self._examples = {}
        self._gold: dict[str, list[KBQAExample]] = {}
        if not hasattr(self, "linking"):
            self._init_linking("gold", None, None, 3)  # hosts without a linking setting: files as they are

    def _home(self) -> Path:
        """Folder for the tokenizer and cache when ``data_dir`` is not given."""
        if self.data_dir is not None:
            return self.data_dir
        for name in SPLITS:
            path = self.split_file(name)
            if path is not None:
                return path.parent
        raise UserInputError("no data_dir and no split file")

    def split_file(self, split: str) -> Path | None:
        """The file of ``split`` (``train``/``val``/``test``/``predict``), or ``None`` if it has none."""
        split = canonical_split(split)
        check_choice("split", split, SPLITS)
        given = self._files[split]
        if given is not None:
            path = Path(given).expanduser()
            if not path.is_absolute() and self.data_dir is not None and (self.data_dir / path).exists():
                return self.data_dir / path
            return path
        if split == "predict":
            return self.split_file("test")
        if self.data_dir is None:
            return None
        names = _DEFAULT_NAMES[split]
        return next((self.data_dir / n for n in names if (self.data_dir / n).is_file()), self.data_dir / names[0])

    def _has(self, split: str) -> bool:
        path = self.split_file(split)
        return path is not None and path.is_file()

    def _ensure_data(self) -> None:
        """Build the synthetic world into ``data_dir`` when asked to and its files are missing."""
        if self.hparams.synthetic_seed is None or self.data_dir is None:
            return
        if all(self._has(s) for s in ("train", "val", "test")):
            return
        from filelock import FileLock

        from kbqa_lit.data.synthetic import build_world

        self.data_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.data_dir / ".build_world.lock")):
            if not all(self._has(s) for s in ("train", "val", "test")):
                log.info("building the synthetic world (seed %s) in %s", self.hparams.synthetic_seed, self.data_dir)
                build_world(self.data_dir, seed=self.hparams.synthetic_seed, size=self.hparams.synthetic_size)

    def gold_examples(self, split: str) -> list[KBQAExample]:
        """The examples of ``split`` as read from the file (gold fields included), in file order.

        Raises:
            UserInputError: When the split has no file or the file is missing.
        """
        split = canonical_split(split)
        if split not in self._gold:
            self._ensure_data()
            path = self.split_file(split)
            if path is None or not path.is_file():
                raise UserInputError(f"no {split} file: {path if path is not None else '(none configured)'}")
            self._gold[split] = list(read_jsonl(path))
        return self._gold[split]

    def examples(self, split: str) -> list[KBQAExample]:
        """The examples of ``split`` in file order, as the stage may see them; ``batch["index"]`` indexes this list.

        Training examples are the file's. Validation, test and predict examples are
        :func:`~kbqa_lit.data.linking.inference_view` copies under the ``linking`` setting: no gold
        entity reaches them unless ``linking`` is ``gold`` (see :mod:`kbqa_lit.data.linking`).

        Raises:
            UserInputError: When the split has no file or the file is missing.
        """
        split = canonical_split(split)
        if split not in self._examples:
            gold = self.gold_examples(split)
            mode = self.linking
            if split == "train" or mode == "gold":
                self._examples[split] = gold
            else:
                linker = self._linker() if mode == "predicted" else None
                self._examples[split] = [inference_view(ex, mode, linker) for ex in gold]
                recall = linking_recall(self._examples[split], gold)
                if recall is not None:
                    log.info("%s: linking %s finds %.3f of the gold topic entities", split, mode, recall)
                if gold and not any(v.topic_entities for v in self._examples[split]):
                    rank_zero_warn(
                        f"{type(self).__name__}: linking {mode!r} gave no entity to any of the {len(gold)} {split} "
                        "questions: set linking_store (the KB whose names are linked), give the examples "
                        "meta.entity_candidates, or choose linking: dataset-given where the dataset names them"
                    )
        return self._examples[split]

    # ------------------------------------------------------------------ linking

    def _init_linking(
        self, linking: str, linking_store: str | None, linking_build_from: list[str] | None, linking_top_k: int
    ) -> None:
        """Check and keep the linking settings (call from ``__init__``; see :mod:`kbqa_lit.data.linking`)."""
        self.linking = check_linking(linking)
        if linking_top_k < 1:
            raise UserInputError(f"linking_top_k must be at least 1, got {linking_top_k}")
        self._linking_store = linking_store
        self._linking_build_from = list(linking_build_from or [])
        self._linking_top_k = int(linking_top_k)
        self._linker_cache: Linker | None = None

    def linking_key(self) -> dict[str, Any]:
        """What the evaluation inputs depend on (part of the tokenised cache's key)."""
        return {"linking": self.linking, "linking_store": self._linking_store, "linking_top_k": self._linking_top_k}

    def oracle_inputs(self) -> list[str]:
        """The gold inputs validation, test and predict see (``[]`` for an honest run).

        ``linking: gold`` hands the evaluation the gold topic entities (and the dataset's own
        decompositions); a host may add its own (the generator's ``patterns: gold``). A run with
        any of them logs its metrics under ``oracle/`` and names them in its run name.
        """
        return oracle_inputs(self.linking)

    def _linker(self) -> Linker | None:
        """The surface-name linker over ``linking_store`` (built once; ``None`` without a store)."""
        if self._linker_cache is None and self._linking_store:
            from kbqa_lit.kb.index.entity_index import EntityIndex
            from kbqa_lit.kb.store import StoreSpec

            # one-off index build: full scans, hence the long timeout
            store = StoreSpec(self._linking_store, self._linking_build_from or [], timeout=600.0).open()
            try:
                index = EntityIndex.for_store(store)
            finally:
                store.close()
            self._linker_cache = IndexLinker(index, top_k=self._linking_top_k)
        return self._linker_cache

    def _eval_sampler(self, data: Sized) -> UnrepeatedDistributedSampler | None:
        """Under DDP, the sampler that hands each row of ``data`` to exactly one rank, in order; else ``None``."""
        world, rank = self._world()
        return UnrepeatedDistributedSampler(data, world, rank) if world > 1 else None  # type: ignore[arg-type]

    def _world(self) -> tuple[int, int]:
        """``(world_size, global_rank)`` of the attached trainer, ``(1, 0)`` without one."""
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return 1, 0
        return int(trainer.world_size), int(trainer.global_rank)


class SplitFilesDataModule(SplitFilesMixin, LightningDataModule):
    """A datamodule over common-schema split files; the file arguments its subclasses share.

    A subclass checks its own arguments, then calls ``super().__init__(**kwargs)`` with the rest:
    this ``__init__`` keeps the files (:meth:`SplitFilesMixin._init_split_files`) and calls
    :meth:`save_hyperparameters`, which saves the arguments of every ``__init__`` in the chain,
    these at their defaults included. So a subclass sets up anything its own checks need before
    that call, and does not call :meth:`save_hyperparameters` itself.

    Args:
        data_dir: Folder of the split files (``train.jsonl``, ``dev.jsonl`` or ``val.jsonl``,
            ``test.jsonl``); also home of what the subclass builds from them (a trained tokenizer
            in ``.tokenizer/``, its caches, an embedded store).
        train_file: Training file (JSON lines, common schema); default ``<data_dir>/train.jsonl``.
            A relative path is looked up in ``data_dir`` first.
        val_file: Validation file; default ``<data_dir>/dev.jsonl`` (or ``val.jsonl``).
        test_file: Test file; default ``<data_dir>/test.jsonl``.
        predict_file: File for ``predict`` (e.g. an earlier stage's output); default the test file.
        synthetic_seed: When set and the split files are missing, build the synthetic world
            (``build_world(data_dir, seed)``) into ``data_dir`` on first use.
        synthetic_size: Size of that world: ``small``, ``medium`` or ``large``.

    Raises:
        UserInputError: Without ``data_dir`` and without any split file, or for
            ``synthetic_seed`` without ``data_dir``.
    """

    def __init__(
        self,
        *,
        data_dir: str | None = None,
        train_file: str | None = None,
        val_file: str | None = None,
        test_file: str | None = None,
        predict_file: str | None = None,
        synthetic_seed: int | None = None,
        synthetic_size: Literal["small", "medium", "large"] = "small",
    ) -> None:
        super().__init__()
        self._init_split_files(data_dir, train_file, val_file, test_file, predict_file, synthetic_seed)
        self.save_hyperparameters()


class LinkedSplitFilesDataModule(SplitFilesDataModule):
    """A :class:`SplitFilesDataModule` whose evaluation examples follow a ``linking`` setting.

    Validation, test and predict see :meth:`~SplitFilesMixin.examples`, the inference views of
    :mod:`kbqa_lit.data.linking`; training always sees the gold. A subclass passes these and the
    file arguments on with ``super().__init__(**kwargs)``, as for :class:`SplitFilesDataModule`.

    Args:
        linking: Which entities validation, test and predict may use (see
            :mod:`kbqa_lit.data.linking`): ``predicted`` (the pipeline's refined or linked
            entities, else the surface-name index of ``linking_store`` over the question),
            ``dataset-given`` (MetaQA's bracketed entity, PathQuestion's path head) or ``gold``
            (an oracle: metrics are logged under ``oracle/``).
        linking_store: The knowledge base whose names ``predicted`` linking searches (an
            Oxigraph store directory or an endpoint URL); without it, only the entities the
            examples carry (``meta.refined_entities``/``entity_candidates``) are used.
        linking_build_from: Triple files to build ``linking_store`` from when it holds none yet.
        linking_top_k: Linked entities kept per question (ambiguous names give several).
        **kwargs: The file arguments of :class:`SplitFilesDataModule`.

    Raises:
        UserInputError: For an unknown ``linking`` or ``linking_top_k`` below 1.
    """

    def __init__(
        self,
        *,
        linking: Literal["predicted", "dataset-given", "gold"] = "predicted",
        linking_store: str | None = None,
        linking_build_from: list[str] | None = None,
        linking_top_k: int = 3,
        **kwargs: Any,
    ) -> None:
        self._init_linking(linking, linking_store, linking_build_from, linking_top_k)
        super().__init__(**kwargs)
