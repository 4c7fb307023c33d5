"""``ExecutionGuidedEval``: generate beams, execute them on the KB, score, log, write predictions.

The callback is where a generator meets the knowledge base (modules never call stores). On each
validation / test / predict batch it asks the module for beams of normalised S-expressions
(``pl_module.generate_lf``) and an answer text (``pl_module.generate_answer``), selects each
question's answers with :class:`~kbqa_lit.pipelines.selection.execution_guided.ExecutionGuidedSelector`
(first executable beam in order, else the answer text), scores them and keeps one row per
question. At the end of the epoch it

- computes :class:`~kbqa_lit.metrics.AnswerMetrics` (torchmetrics: sum states synced across
  ranks) and logs ``{val,test}/f1``, ``hit1``, ``hit1_any``, ``em`` (when gold S-expressions
  exist), ``executable``, ``fallback_rate`` and ``exec_cache_hit_rate`` — the same synced value
  on every rank, with ``sync_dist=False``, so ``ModelCheckpoint``/``EarlyStopping`` can monitor
  them on every rank;
- gathers the rows of every rank (``torch.distributed.all_gather_object``) and, on rank 0, writes
  ONE complete ``{val,test,predict}_predictions_epoch{E}.jsonl`` (rows sorted by example index,
  written atomically) and, with a ``WandbLogger``, a W&B table of the first rows.

What the module and the datamodule must provide:

- ``pl_module.generate_lf(batch, num_beams=, num_return_sequences=, max_new_tokens=)`` →
  ``list[list[str]]`` (normalised S-expressions per example, beam order) and optionally
  ``pl_module.generate_answer(batch, max_new_tokens=)`` → ``list[str]``. A step may instead
  return a mapping with ``"beams"`` (and ``"answer_texts"``) to avoid generating twice.
- ``trainer.datamodule.examples(split)`` → ``list[KBQAExample]`` for ``"val"``, ``"test"``,
  ``"predict"``, and batches with ``batch["index"]`` (row indices into that list).

The examples are what inference may see: the datamodules that declare a ``linking`` setting
(:mod:`kbqa_lit.data.linking`) hand out views whose ``topic_entities`` are the *linked* entities,
so the topic-entity slots and the label map of denormalisation never read gold entities. With
``linking: gold`` (an oracle) every metric is logged as ``oracle/{val,test}/...`` and the files are
named ``oracle_{val,test}_predictions_epoch{E}.jsonl``; each row records its ``linking`` and the
``linked`` entities.

Constrained decoding (``constrained``: ``grammar``, ``schema``, ``connected`` or ``datamodule``)
passes a :class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor` to ``generate_lf``; the rule sets
of each mode are in :mod:`kbqa_lit.callbacks.constrained_decoding` (never gold fields). Each row
records its ``constrained`` mode.

Separately trained generators (``answer_model``): the LF beams come from the module under test and
the answer texts from a second generator checkpoint (CoQ's "separately trained" ablation: an
LF-only and an answer-only model); see :mod:`kbqa_lit.callbacks.answer_source`. Each row records its
``answer_source`` (``module`` or the checkpoint's path).

Timing: rank 0 logs, per validation/test epoch and straight to the loggers (not as synced
metrics, so DDP equality of the metrics and rows is untouched), ``{val,test}/time_generate_s``
(beam search and answer text), ``time_denormalise_s`` (denormalisation, conversion to SPARQL,
selection), ``time_execute_s`` (waiting for the store), ``time_bookkeeping_s`` (scoring, rows),
``time_total_s`` (the epoch's wall time) and ``questions_per_s`` of its own questions; the same
dict is in ``last_timing``.

Under DDP each index should reach exactly one rank (an unrepeated sampler). If the gathered rows
show an index twice (e.g. Lightning's padding ``DistributedSampler``), the duplicates are
dropped and the metrics recomputed from the unique rows, with a warning.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_warn
from lightning.pytorch.utilities.warnings import PossibleUserWarning
from transformers import LogitsProcessorList

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.callbacks.answer_source import SeparateAnswerModel
from kbqa_lit.callbacks.constrained_decoding import ConstrainedDecoding
from kbqa_lit.callbacks.eval_rows import (
    SelectionCounts,
    atomic_write_jsonl,
    gather_rows,
    log_wandb_table,
    metrics_from_rows,
    unique_sorted,
)
from kbqa_lit.callbacks.eval_timing import EpochTimer, log_timing
from kbqa_lit.data.entity_slots import unmask_lf
from kbqa_lit.data.gold import gold_parses, gold_sexprs
from kbqa_lit.data.linking import ORACLE_PREFIX
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.store import is_endpoint, open_store
from kbqa_lit.kb.store.cache import ExecutionCache
from kbqa_lit.kb.store.loaders import ensure_store
from kbqa_lit.metrics.answer_metrics import AnswerMetrics
from kbqa_lit.metrics.functional import QuestionScore, score_question
from kbqa_lit.metrics.lf_match import load_reverse_properties, logical_form_em
from kbqa_lit.pipelines.selection.answer_type import AnswerTypes
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, KBNameLookup, Selection, names_of
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard

#: Trainer stage → (metric prefix, datamodule split).
STAGES: dict[str, tuple[str, str]] = {
    "validate": ("val", "val"),
    "test": ("test", "test"),
    "predict": ("predict", "predict"),
}
#: Metrics logged per stage (``em`` only when measured).
LOGGED = (
    "f1",
    "hit1",
    "hit1_any",
    "em",
    "executable",
    "fallback_rate",
    "path_fallback_rate",
    "path_override_rate",
    "answer_type_rate",
    "exec_cache_hit_rate",
)
#: Beams and errors kept per row of the prediction file.
ROW_BEAMS = 5
ROW_ERRORS = 5
_ERROR_CHARS = 300


class ExecutionGuidedEval(L.Callback):
    """Execution-guided evaluation of a logical-form generator (CoQ's inference) with metrics and files.

    Args:
        store: The knowledge base: an Oxigraph store directory or an http(s) SPARQL endpoint URL.
        num_beams: Beam size of the logical-form search (the CoQ paper uses 50).
        num_return_sequences: Beams returned per question and executed in order (default: ``num_beams``).
        max_new_tokens: Generation length limit for logical forms and answer texts.
        count_zero_is_executable: Whether a ``COUNT`` query that returns 0 counts as executable.
        workers: Queries in flight at once per process (thread pool; an Oxigraph store gets as
            many worker processes). Selection results equal those of one worker.
        timeout: Seconds a query may run before its beam is marked non-executable.
        disk_cache: SQLite file of the execution cache shared by ranks and runs (``None``: memory only).
        predictions_dir: Where the prediction files go (default: ``trainer.log_dir``, else
            ``trainer.default_root_dir``).
        log_table_rows: Rows of the W&B table logged with a ``WandbLogger`` (0: no table).
        stages: Trainer stages to act on: any of ``"validate"`` (also inside ``fit``), ``"test"``,
            ``"predict"``.
        reverse_properties: Ontology ``reverse_properties`` file, so logical-form EM identifies
            ``(R r)`` with the reverse of ``r`` (``None``: relations compared as written).
        map_answers_by_name: On fallback, map each answer-text part to KB ids by exact
            ``type.object.name`` (one cached query per part); otherwise keep the text.
        build_from: Triple files to build the embedded store from when ``store`` holds none yet
            (e.g. the synthetic world's ``kb.nt``; built once, by global rank 0).
        build_format: Format of ``build_from``: ``nt``, ``tsv``, ``metaqa`` or ``pathquestion``.
        constrained: Grammar-constrained beam search: ``none``; ``grammar`` (well-formed
            normalised S-expressions only); ``schema`` (also only the store's relations and
            classes and the question's linked entity labels and slots); ``connected`` (``schema``,
            and a linked entity only as the argument of a join whose edge it has in the KB);
            ``datamodule`` (the datamodule's ``decoding_rules(example)``, e.g. FC-KBQA's pairs).
            See the module docstring.
        lf_generation: False runs no logical-form beam search: every prediction is the module's
            answer text (CoQ's "w/o LF generation" ablation, with a generator trained with
            ``lf_weight: 0``).
        answer_model: A second, separately trained generator checkpoint (``.ckpt`` of the same
            class as the module under test, trained with ``lf_weight: 0``) whose answer texts are
            the fallback instead of the module's: CoQ's "separately trained" pair, with the LF
            beams from the module under test (an LF-only generator, ``alpha: 0``). Loaded once in
            ``setup``; a missing file raises :class:`~kbqa_lit.errors.UserInputError` here, a file
            that is not such a checkpoint (or whose tokenizer differs from the data's) in ``setup``.
        path_fallback: When no beam executes, answer with the best-ranked relation path of the
            linked entities (:mod:`kbqa_lit.pipelines.selection.path_fallback`: the KB's one- and two-hop
            paths, ranked by a pretrained sentence encoder's similarity to the question) before
            the answer text. Rows record ``path_fallback``; ``path_fallback_rate`` is logged.
        path_encoder: The sentence encoder of the path fallback (all-MiniLM-L6-v2 offline).
        path_max_hops: Longest relation path of the path fallback (1 or 2).
        path_override_margin: With ``path_fallback``, also replace a chosen beam that is a plain
            join chain when the best path's similarity exceeds the chain's own by more than this
            (``None``: never). Rows record ``path_override``; ``path_override_rate`` is logged.
        answer_type: After the selection, check the answers' kind against the question's answer
            noun (*which country*, *how many countries*; :mod:`kbqa_lit.pipelines.selection.type_guard`):
            a disagreeing choice gives way to the next beam, else KB path (up to three hops
            through a mediator, ranked by ``path_encoder``), whose answers agree. Rows record
            ``answer_type``; ``answer_type_rate`` is logged.
        answer_type_threshold: The cosine between the noun and a class's words that counts as
            that kind.

    Raises:
        UserInputError: When ``answer_model`` is not a file.

    """

    def __init__(
        self,
        store: str,
        num_beams: int = 5,
        num_return_sequences: int | None = None,
        max_new_tokens: int = 128,
        count_zero_is_executable: bool = False,
        workers: int = 2,
        timeout: float = 10.0,
        disk_cache: str | None = None,
        predictions_dir: str | None = None,
        log_table_rows: int = 100,
        stages: Sequence[str] = ("validate", "test"),
        reverse_properties: str | None = None,
        map_answers_by_name: bool = True,
        build_from: Sequence[str] | None = None,
        build_format: str = "nt",
        constrained: Literal["none", "grammar", "schema", "connected", "datamodule"] = "none",
        lf_generation: bool = True,
        answer_model: str | None = None,
        path_fallback: bool = False,
        path_encoder: str = MINILM,
        path_max_hops: int = 2,
        path_override_margin: float | None = None,
        answer_type: bool = False,
        answer_type_threshold: float = 0.8,
    ) -> None:
        super().__init__()
        stages = [stages] if isinstance(stages, str) else list(stages)
        unknown = [s for s in stages if s not in STAGES]
        if unknown:
            raise ValueError(f"unknown stages {unknown}; expected some of {list(STAGES)}")
        if num_beams < 1:
            raise ValueError("num_beams must be >= 1")
        num_return_sequences = num_beams if num_return_sequences is None else num_return_sequences
        if not 1 <= num_return_sequences <= num_beams:
            raise ValueError("num_return_sequences must be between 1 and num_beams")
        self.store_spec = str(store)
        self.num_beams = int(num_beams)
        self.num_return_sequences = int(num_return_sequences)
        self.max_new_tokens = int(max_new_tokens)
        self.count_zero_is_executable = bool(count_zero_is_executable)
        self.workers = max(1, int(workers))
        self.timeout = float(timeout)
        self.disk_cache = disk_cache
        self.predictions_dir = predictions_dir
        self.log_table_rows = int(log_table_rows)
        self.stages = stages
        self.reverse_properties = reverse_properties
        self.map_answers_by_name = map_answers_by_name
        self.build_from = [build_from] if isinstance(build_from, str) else list(build_from or [])
        self.build_format = build_format
        self._decoding = ConstrainedDecoding(constrained, self.num_beams, self.max_new_tokens)
        self.constrained = constrained
        self.lf_generation = bool(lf_generation)
        self.answer_model = None if answer_model is None else str(answer_model)
        self._answers = None if answer_model is None else SeparateAnswerModel(answer_model)
        self.path_fallback = bool(path_fallback)
        self.path_encoder = path_encoder
        self.path_max_hops = int(path_max_hops)
        self.path_override_margin = path_override_margin
        self._paths = (
            PathFallback(path_encoder, path_max_hops, override_margin=path_override_margin)
            if self.path_fallback
            else None
        )
        self.answer_type = bool(answer_type)
        self.answer_type_threshold = float(answer_type_threshold)
        self._types = (
            TypeGuard(AnswerTypes(path_encoder, answer_type_threshold), self._paths or PathFallback(path_encoder))
            if self.answer_type
            else None
        )
        self.kb: Any = None
        self.selector: ExecutionGuidedSelector | None = None
        self.names: KBNameLookup | None = None
        self._reverse: dict[str, str] | None = None
        self._out_dir: Path | None = None
        self._metrics = AnswerMetrics(ordered=False)
        self._counts = SelectionCounts()
        self._rows: list[dict[str, Any]] = []
        self._examples: list[KBQAExample] | None = None
        self._cache_start = (0, 0)
        #: Metrics of the last finished epoch (floats), its gathered rows and file (for callers, tests).
        self.last_metrics: dict[str, float] = {}
        self.last_rows: list[dict[str, Any]] = []
        self.last_path: Path | None = None
        self.last_duplicates = 0
        #: Seconds per part of the last finished epoch on this process (see the module docstring).
        self.last_timing: dict[str, float] = {}
        self._timer = EpochTimer()
        self._quiet: warnings.catch_warnings | None = None

    # -- life cycle ----------------------------------------------------------------------
    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Open the store (once per process) and resolve the prediction directory on every rank."""
        needed = {"fit": "validate", "validate": "validate", "test": "test", "predict": "predict"}.get(stage)
        if needed not in self.stages:
            return
        if self.kb is None:
            if self.build_from:
                ensure_store(self.store_spec, self.build_from, self.build_format)
            disk = ExecutionCache(self.disk_cache) if self.disk_cache else None
            kwargs: dict[str, Any] = {"timeout": self.timeout, "disk_cache": disk}
            if not is_endpoint(self.store_spec):
                kwargs["workers"] = self.workers  # Oxigraph: one worker process per query in flight
            self.kb = open_store(self.store_spec, **kwargs)
            self.selector = ExecutionGuidedSelector(
                self.kb, workers=self.workers, count_zero_is_executable=self.count_zero_is_executable
            )
            self.names = KBNameLookup(self.kb) if self.map_answers_by_name else None
        if self.reverse_properties and self._reverse is None:
            self._reverse = load_reverse_properties(self.reverse_properties)
        if self._answers is not None:
            dm = getattr(trainer, "datamodule", None)
            self._answers.load(pl_module, getattr(dm, "tokenizer", None) or getattr(pl_module, "tokenizer", None))
        if self.predictions_dir:
            self._out_dir = Path(self.predictions_dir)
        else:
            log_dir = trainer.log_dir  # a collective (broadcast): every rank must ask
            self._out_dir = Path(log_dir or trainer.default_root_dir)

    def teardown(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Stop the thread pool and the store's worker processes."""
        if self.selector is not None:
            self.selector.close()
        if self.kb is not None:
            self.kb.close()
        self.kb, self.selector, self.names = None, None, None
        self._restore_warnings()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Lightning has collected the epoch's logged values: warnings are back as they were."""
        self._restore_warnings()

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Lightning has collected the epoch's logged values: warnings are back as they were."""
        self._restore_warnings()

    def _hide_resync_advice(self) -> None:
        """Until the loop ends, hide Lightning's advice to sync the logged values (they are synced already).

        Lightning gives it under DDP when it collects epoch-level values logged with
        ``sync_dist=False``, after the epoch-end hooks; the filter lives from the epoch-end log to
        ``on_{validation,test}_end`` and is then removed, so no other warning is touched.
        """
        if self._quiet is None:
            self._quiet = warnings.catch_warnings()
            self._quiet.__enter__()
            warnings.filterwarnings(
                "ignore",
                message=r"It is recommended to use `self\.log\('(val|test)/(" + "|".join(LOGGED) + r")'",
                category=PossibleUserWarning,
            )

    def _restore_warnings(self) -> None:
        if self._quiet is not None:
            self._quiet.__exit__(None, None, None)
            self._quiet = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(kb=None, selector=None, names=None, _quiet=None)
        state["_decoding"] = ConstrainedDecoding(self.constrained, self.num_beams, self.max_new_tokens)
        return state

    # -- epoch hooks ---------------------------------------------------------------------
    def _start(self, stage: str, pl_module: L.LightningModule) -> None:
        self._metrics.reset()
        self._counts.reset()
        device = pl_module.device if pl_module.device.type == "cuda" else torch.device("cpu")
        self._metrics.to(device)  # NCCL collectives need CUDA tensors
        self._counts.to(device)
        self._rows = []
        self._examples = None
        info = self.kb.cache_info() if self.kb is not None and hasattr(self.kb, "cache_info") else {}
        self._cache_start = (int(info.get("hits", 0)), int(info.get("misses", 0)))
        self._timer.start(self._execute_seconds())

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Reset the epoch's state."""
        if "validate" in self.stages:
            self._start("validate", pl_module)

    def on_test_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Reset the epoch's state."""
        if "test" in self.stages:
            self._start("test", pl_module)

    def on_predict_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Reset the epoch's state."""
        if "predict" in self.stages:
            self._start("predict", pl_module)

    def on_validation_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Generate, select and score the batch's questions."""
        if "validate" in self.stages:
            self._batch("validate", trainer, pl_module, outputs, batch)

    def on_test_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Generate, select and score the batch's questions."""
        if "test" in self.stages:
            self._batch("test", trainer, pl_module, outputs, batch)

    def on_predict_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Generate and select the batch's answers."""
        if "predict" in self.stages:
            self._batch("predict", trainer, pl_module, outputs, batch)

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Sync metrics, log them, write the prediction file and table."""
        if "validate" in self.stages:
            self._finish("validate", trainer, pl_module)

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Sync metrics, log them, write the prediction file and table."""
        if "test" in self.stages:
            self._finish("test", trainer, pl_module)

    def on_predict_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Write the prediction file (no logging: Lightning does not log in predict)."""
        if "predict" in self.stages:
            self._finish("predict", trainer, pl_module)

    # -- per batch -----------------------------------------------------------------------
    def _examples_for(self, trainer: L.Trainer, split: str) -> list[KBQAExample]:
        if self._examples is None:
            dm = getattr(trainer, "datamodule", None)
            if dm is None or not callable(getattr(dm, "examples", None)):
                raise RuntimeError(
                    "ExecutionGuidedEval needs a LightningDataModule with examples(split) -> "
                    "list[KBQAExample] (pass datamodule=... to the Trainer call)"
                )
            self._examples = list(dm.examples(split))
        return self._examples

    def _generate(
        self, pl_module: L.LightningModule, outputs: Any, batch: Any, examples: Sequence[KBQAExample] = ()
    ) -> tuple[list[list[str]], list[str] | None]:
        if isinstance(outputs, Mapping) and "beams" in outputs:
            beams = [list(b) for b in outputs["beams"]]
            texts = outputs.get("answer_texts")
            if self._answers is not None:
                texts = self._answers.texts(batch, pl_module.device, self.max_new_tokens)
            return beams, None if texts is None else [str(t) for t in texts]
        processor = self._decoder().processor(pl_module, batch, examples, self.kb) if self.lf_generation else None
        extra = {} if processor is None else {"logits_processor": LogitsProcessorList([processor])}
        with torch.no_grad():
            if self.lf_generation:
                beams = pl_module.generate_lf(
                    batch,
                    num_beams=self.num_beams,
                    num_return_sequences=self.num_return_sequences,
                    max_new_tokens=self.max_new_tokens,
                    **extra,
                )
            else:  # "w/o LF generation": no beams, so every prediction is the answer text
                beams = [[] for _ in range(len(batch["index"]))]
            texts = None
            if self._answers is not None:  # the separately trained answer generator's, not the module's
                texts = self._answers.texts(batch, pl_module.device, self.max_new_tokens)
            elif callable(getattr(pl_module, "generate_answer", None)):
                # [] when the batches have no answer task (answer_task: false): no fallback text
                texts = pl_module.generate_answer(batch, max_new_tokens=self.max_new_tokens) or None
        return [list(b) for b in beams], None if texts is None else [str(t) for t in texts]

    def _batch(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any) -> None:
        assert self.selector is not None, "setup() opens the store"
        examples = self._examples_for(trainer, STAGES[stage][1])
        index = batch["index"]
        indices = [int(i) for i in (index.tolist() if isinstance(index, torch.Tensor) else index)]
        start = time.perf_counter()
        beams, texts = self._generate(pl_module, outputs, batch, [examples[i] for i in indices])
        generated = time.perf_counter()
        selecting = 0.0
        constrained = self.constrained if not (isinstance(outputs, Mapping) and "beams" in outputs) else "none"
        if len(beams) != len(indices) or (texts is not None and len(texts) != len(indices)):
            raise ValueError(
                f"the module generated for {len(beams)} questions (answers: "
                f"{None if texts is None else len(texts)}) but the batch has {len(indices)}"
            )
        scores: list[QuestionScore] = []
        fallbacks = path_fallbacks = path_overrides = retyped = 0
        for k, i in enumerate(indices):
            ex = examples[i]
            ex_beams = [unmask_lf(b, ex) for b in beams[k]]  # topic-entity slots [E0]... → labels
            before = time.perf_counter()
            sel = self._select(ex, ex_beams, None if texts is None else texts[k])
            selecting += time.perf_counter() - before
            path_fallbacks += int(sel.path_fallback)
            path_overrides += int(sel.path_override)
            retyped += int(sel.answer_type)
            predicted = self._comparable(sel.answers, ex)
            score = score_question(predicted, gold_parses(ex), em=self._em(sel, ex), executable=sel.executable)
            scores.append(score)
            fallbacks += int(sel.fallback)
            row = self._row(i, ex, ex_beams, None if texts is None else texts[k], sel, score)
            row["constrained"] = constrained
            row["answer_source"] = self.answer_model or "module"
            self._rows.append(row)
        self._metrics.update(scores=scores)
        self._counts.update(
            fallback=fallbacks,
            path_fallback=path_fallbacks,
            path_override=path_overrides,
            answer_type=retyped,
            n=len(indices),
        )
        self._timer.add_batch(generated - start, selecting, time.perf_counter() - generated - selecting, len(indices))

    def _select(self, ex: KBQAExample, beams: list[str], text: str | None) -> Selection:
        """The question's selection: beams in order, then the path fallback (when on), then the text."""
        assert self.selector is not None, "setup() opens the store"
        kwargs: dict[str, Any] = {
            "semantics": ex.semantics,
            "label_to_ids": invert_labels(ex.entity_labels()),
            "candidates": tuple((str(e), str(n)) for e, n in (ex.meta.get("entity_candidates") or {}).items()),
            "answer_text": text,
            "name_to_ids": self.names,
        }
        linked = {str(e): str(n) for e, n in ex.topic_entities.items()}
        if self._paths is None:
            sel = self.selector.select(beams, **kwargs)
        else:
            sel = self._paths.select(self.selector, beams, question=ex.question, linked=linked, **kwargs)
        if self._types is None or sel.fallback:  # an answer text is not re-typed
            return sel
        return self._types.after(
            self.selector, sel, beams, question=ex.question, linked=linked, semantics=ex.semantics,
            label_to_ids=kwargs["label_to_ids"],
        )  # fmt: skip

    def _comparable(self, answers: list[str], ex: KBQAExample) -> list[str]:
        """The answers in the gold's terms: KB ids, or their names where the gold has names only.

        WebQSP's answer-names files (``meta["answers_by_name"]``) give the gold answers as names;
        predicted ids are mapped to their ``type.object.name`` (ids without one stay ids).
        """
        if not ex.meta.get("answers_by_name") or self.kb is None:
            return answers
        names = names_of(self.kb, answers)
        return [names.get(a, a) for a in answers]

    def _em(self, sel: Selection, ex: KBQAExample) -> float | None:
        golds = gold_sexprs(ex)
        if not golds:
            return None
        if sel.chosen_sexpr is None:
            return 0.0
        try:
            return 1.0 if any(logical_form_em(sel.chosen_sexpr, g, self._reverse) for g in golds) else 0.0
        except SExprError as exc:
            rank_zero_warn(f"question {ex.qid}: the gold S-expression does not parse ({exc}); EM not measured")
            return None

    @staticmethod
    def _row(
        index: int, ex: KBQAExample, beams: list[str], text: str | None, sel: Selection, score: QuestionScore
    ) -> dict[str, Any]:
        return {
            "index": index,
            "qid": ex.qid,
            "question": ex.question,
            "gold": [a.id for a in ex.answers],
            "gold_names": [a.name for a in ex.answers],
            "gold_sexpr": ex.s_expression,
            "linking": ex.meta.get("linking", "gold"),
            "linked": dict(ex.topic_entities),
            "beams": beams[:ROW_BEAMS],
            "num_beams": len(beams),
            "chosen_beam": sel.chosen_beam,
            "chosen_sexpr": sel.chosen_sexpr,
            "sparql": sel.sparql,
            "answers": sel.answers,
            "answer_text": text,
            "f1": score.f1,
            "precision": score.precision,
            "recall": score.recall,
            "hit1": score.hit1,
            "hit1_any": score.hit1_any,
            "em": score.em,
            "executable": sel.executable,
            "fallback": sel.fallback,
            "path_fallback": sel.path_fallback,
            "path_override": sel.path_override,
            "answer_type": sel.answer_type,
            "beams_tried": sel.beams_tried,
            "errors": [e[:_ERROR_CHARS] for e in sel.errors[:ROW_ERRORS]],
        }

    # -- epoch end -----------------------------------------------------------------------
    def _finish(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        prefix = metric_prefix(stage, trainer)
        info = self.kb.cache_info() if self.kb is not None and hasattr(self.kb, "cache_info") else {}
        hits = int(info.get("hits", 0)) - self._cache_start[0]
        misses = int(info.get("misses", 0)) - self._cache_start[1]
        self._metrics.update(scores=[])  # every rank has updated once, even one without batches
        self._counts.update(cache_hits=hits, cache_misses=misses)
        values = {k: float(v) for k, v in self._metrics.compute().items()}  # collective
        values.update({k: float(v) for k, v in self._counts.compute().items()})  # collective
        rows = gather_rows(self._rows)  # collective
        rows, duplicates = unique_sorted(rows)
        if duplicates:
            rank_zero_warn(
                f"ExecutionGuidedEval: {duplicates} question(s) were evaluated on more than one rank "
                "(a padding DistributedSampler?); metrics are recomputed from the unique questions. "
                "Use an unrepeated sampler so every question reaches exactly one rank."
            )
            values.update(metrics_from_rows(rows))
        if self._paths is None:  # logged only when the path fallback is on
            values.pop("path_fallback_rate", None)
            values.pop("path_override_rate", None)
        if self._types is None:  # logged only when the answer-type check is on
            values.pop("answer_type_rate", None)
        self.last_metrics, self.last_rows, self.last_duplicates = values, rows, duplicates
        if stage != "predict":
            self._hide_resync_advice()
            for key in LOGGED:
                if key in values:
                    pl_module.log(f"{prefix}/{key}", values[key], sync_dist=False, prog_bar=key in ("f1", "hit1"))
        self.last_timing = self._timer.summary(self._execute_seconds())
        if not trainer.sanity_checking:
            self.last_path = self._out_path(prefix, trainer)
            if trainer.is_global_zero:
                atomic_write_jsonl(rows, self.last_path)
                log_wandb_table(trainer, f"{prefix}/predictions", rows[: max(self.log_table_rows, 0)])
                log_timing(trainer, prefix, self.last_timing, to_loggers=stage != "predict")
        self._rows = []
        self._examples = None
        self._metrics.reset()
        self._counts.reset()

    def _decoder(self) -> ConstrainedDecoding:
        """The constrained-decoding helper for the current settings (rebuilt when they were changed)."""
        d = self._decoding
        if (d.mode, d.num_beams, d.max_new_tokens) != (self.constrained, self.num_beams, self.max_new_tokens):
            self._decoding = ConstrainedDecoding(self.constrained, self.num_beams, self.max_new_tokens)
        return self._decoding

    def _execute_seconds(self) -> float:
        return self.selector.execute_seconds if self.selector is not None else 0.0

    def _out_path(self, prefix: str, trainer: L.Trainer) -> Path:
        out_dir = self._out_dir or Path(trainer.default_root_dir)
        return out_dir / f"{prefix.replace('/', '_')}_predictions_epoch{trainer.current_epoch}.jsonl"


def metric_prefix(stage: str, trainer: L.Trainer) -> str:
    """``val``/``test``/``predict``, under ``oracle/`` when the datamodule feeds evaluation gold inputs.

    Gold inputs are what the datamodule's ``oracle_inputs()`` names (gold linking, oracle
    patterns); a datamodule without that method is an oracle when its ``linking`` is ``gold``.
    """
    prefix = STAGES[stage][0]
    dm = getattr(trainer, "datamodule", None)
    oracle_inputs = getattr(dm, "oracle_inputs", None)
    oracle = bool(oracle_inputs()) if callable(oracle_inputs) else getattr(dm, "linking", None) == "gold"
    return ORACLE_PREFIX + prefix if oracle else prefix
