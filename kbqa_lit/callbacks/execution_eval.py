"""``ExecutionGuidedEval``: generate beams, execute them on the KB, score, log, write predictions.

The callback is where a generator meets the knowledge base (modules never call stores). On each
validation / test / predict batch it asks the module for beams of normalised S-expressions
(``pl_module.generate_lf``, grammar-constrained with ``constrained``: :mod:`kbqa_lit.callbacks.constrained_decoding`)
and an answer text (``pl_module.generate_answer``, or a separately trained ``answer_model``:
:mod:`kbqa_lit.callbacks.answer_source`), answers each question with the shared
:class:`~kbqa_lit.pipelines.selection.chain.AnswerChain` (first executable beam, then the KB-path
fallback and the answer-type check when on, else the answer text), scores it and keeps one row per
question (:func:`~kbqa_lit.callbacks.eval_rows.prediction_row`). At the end of the epoch it logs
``{val,test}/f1``, ``hit1``, ``hit1_any``, ``em``, ``executable``, ``fallback_rate``... (torchmetrics
sum states synced across ranks, the same value on every rank), gathers the rows of every rank and, on
rank 0, writes ONE complete ``{val,test,predict}_predictions_epoch{E}.jsonl`` (atomically) and a W&B
table; rank 0 also logs the epoch's time per part (:mod:`kbqa_lit.callbacks.eval_timing`).

The module provides ``generate_lf(batch, num_beams=, num_return_sequences=, max_new_tokens=)`` (and
optionally ``generate_answer``); the datamodule ``examples(split)`` and batches with ``batch["index"]``.
The examples are what inference may see (linked, never gold, entities); with gold inputs (an oracle)
metrics and files are named ``oracle/...`` (:func:`~kbqa_lit.callbacks.eval_stages.metric_prefix`).
Under DDP each index should reach one rank; duplicates are dropped with a warning. Details:
``docs/training.md``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_warn

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.backbones.common import MINILM
from kbqa_lit.callbacks.answer_source import SeparateAnswerModel
from kbqa_lit.callbacks.constrained_decoding import ConstrainedDecoding
from kbqa_lit.callbacks.eval_form import AnsweringForm
from kbqa_lit.callbacks.eval_generation import generate_for_batch
from kbqa_lit.callbacks.eval_rows import (
    SelectionCounts,
    comparable_answers,
    gather_rows,
    lf_em,
    log_wandb_table,
    metrics_from_rows,
    prediction_row,
    unique_sorted,
)
from kbqa_lit.callbacks.eval_stages import LOGGED, STAGES, ResyncAdviceFilter, metric_prefix
from kbqa_lit.callbacks.eval_timing import EpochTimer, log_timing
from kbqa_lit.data.entity_slots import unmask_lf
from kbqa_lit.data.gold import gold_parses
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import check_choice
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.store import StoreSpec
from kbqa_lit.metrics.answer_metrics import AnswerMetrics
from kbqa_lit.metrics.functional import QuestionScore, score_question
from kbqa_lit.metrics.lf_match import load_reverse_properties
from kbqa_lit.pipelines.batch_hooks import EvalBatchCallback
from kbqa_lit.pipelines.selection.chain import AnswerChain
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, KBNameLookup, Selection

#: The generation limit of a module that does not say how long its targets were.
DEFAULT_MAX_NEW_TOKENS = 128


class ExecutionGuidedEval(EvalBatchCallback):
    """Execution-guided evaluation of a logical-form generator (CoQ's inference) with metrics and files.

    Args:
        store: The knowledge base: an Oxigraph store directory or an http(s) SPARQL endpoint URL.
        num_beams: Beam size of the logical-form search (the CoQ paper uses 50).
        num_return_sequences: Beams returned per question and executed in order (default: ``num_beams``).
        max_new_tokens: Generation length limit for logical forms and answer texts (default: the
            module's ``hparams.max_target_length``, the longest target it was trained to write, else
            128). A constrained search runs to this limit in most batches (``generate``'s stopping
            heuristic), so a limit past the training targets costs time and no accuracy.
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
        constrained: Grammar-constrained beam search (``None``: from ``extensions``): ``none``;
            ``grammar`` (well-formed normalised S-expressions only); ``schema`` (also only the store's relations and
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
        system: Which system answers (``coq``, ``fc``, ``keqing``, ``tfs``): decides what ``form``
            switches on (:mod:`kbqa_lit.pipelines.selection.forms`).
        form: ``paper`` (the default without ``extensions``: the paper's method) or ``extended``
            (every extension ``system`` offers). Rows carry ``form`` and ``extensions``; the test
            logs them as hyper-parameters (``answering/form``, ``answering/extensions``).
        extensions: An explicit list instead of the preset (``[path_fallback]``: the paper plus
            one). CoQ offers ``constrained_decoding`` (``constrained`` then defaults to
            ``schema``; an explicit mode other than ``none`` counts as it), ``path_fallback``
            (:mod:`~kbqa_lit.pipelines.selection.path_fallback`; rows record ``path_fallback``,
            ``path_fallback_rate`` is logged) and ``answer_type``
            (:mod:`~kbqa_lit.pipelines.selection.type_guard`; rows record ``answer_type``,
            ``answer_type_rate`` is logged).
        path_encoder: The sentence encoder of the path fallback (all-MiniLM-L6-v2 offline).
        path_max_hops: Longest relation path of the path fallback (1 or 2).
        path_override_margin: With the ``path_fallback`` extension, also replace a chosen beam that is a plain
            join chain when the best path's similarity exceeds the chain's own by more than this
            (``None``: never). Rows record ``path_override``; ``path_override_rate`` is logged.
        answer_type_threshold: The cosine between the noun and a class's words that counts as
            that kind.
        early_stopping: When the beam search stops (``generate``'s ``early_stopping``): ``True``
            once ``num_beams`` beams have finished, ``False`` by its heuristic (until no running
            beam can beat the finished ones), ``"never"``; ``None`` (default): ``True`` for free
            decoding, ``False`` for constrained decoding. Under constraints ``True`` is about
            3x cheaper and may cut off a longer, better-scoring beam (benchmarks/README.md).

    Raises:
        UserInputError: When ``answer_model`` is not a file, or for an unknown form or extension.

    """

    def __init__(
        self,
        store: str,
        num_beams: int = 5,
        num_return_sequences: int | None = None,
        max_new_tokens: int | None = None,
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
        constrained: Literal["none", "grammar", "schema", "connected", "datamodule"] | None = None,
        lf_generation: bool = True,
        answer_model: str | None = None,
        system: Literal["coq", "fc", "keqing", "tfs"] = "coq",
        form: Literal["paper", "extended"] | None = None,
        extensions: Sequence[str] | None = None,
        path_encoder: str = MINILM,
        path_max_hops: int = 2,
        path_override_margin: float | None = None,
        answer_type_threshold: float = 0.8,
        early_stopping: bool | Literal["never"] | None = None,
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
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
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
        self.system, self.form, self.extensions = system, form, None if extensions is None else list(extensions)
        self.answering = AnsweringForm.build(
            system,
            form,
            extensions,
            encoder=path_encoder,
            max_hops=int(path_max_hops),
            override_margin=path_override_margin,
            type_threshold=float(answer_type_threshold),
        )
        constrained = self.answering.default_constraint() if constrained is None else constrained
        self._decoding = ConstrainedDecoding(constrained, self.num_beams, self.max_new_tokens or DEFAULT_MAX_NEW_TOKENS)
        self.constrained = constrained
        self.lf_generation = bool(lf_generation)
        self.answer_model = None if answer_model is None else str(answer_model)
        self._answers = None if answer_model is None else SeparateAnswerModel(answer_model)
        self.path_encoder = path_encoder
        self.path_max_hops = int(path_max_hops)
        self.path_override_margin = path_override_margin
        self.answer_type_threshold = float(answer_type_threshold)
        self.early_stopping = check_choice("early_stopping", early_stopping, (None, True, False, "never"))
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
        self._quiet = ResyncAdviceFilter()

    # -- life cycle ----------------------------------------------------------------------
    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Open the store (once per process) and resolve the prediction directory on every rank."""
        needed = {"fit": "validate", "validate": "validate", "test": "test", "predict": "predict"}.get(stage)
        if needed not in self.stages:
            return
        if self.kb is None:
            self.kb = StoreSpec(
                self.store_spec, self.build_from, self.build_format, self.timeout, self.workers, self.disk_cache
            ).open()
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
        self._quiet.remove()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Lightning has collected the epoch's logged values: warnings are back as they were."""
        self._quiet.remove()

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Lightning has collected the epoch's logged values: warnings are back as they were."""
        self._quiet.remove()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(kb=None, selector=None, names=None, _quiet=ResyncAdviceFilter())
        state["_decoding"] = ConstrainedDecoding(
            self.constrained, self.num_beams, self.max_new_tokens or DEFAULT_MAX_NEW_TOKENS
        )
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
        """Reset the epoch's state and log the form the test answers in."""
        if "test" in self.stages:
            self._start("test", pl_module)
            self.answering.log(trainer, self.constrained)

    def on_predict_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Reset the epoch's state."""
        if "predict" in self.stages:
            self._start("predict", pl_module)

    def eval_batch_end(
        self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any
    ) -> None:
        """Generate, select and score the batch's questions (in ``predict``: generate and select)."""
        if stage in self.stages:
            self._batch(stage, trainer, pl_module, outputs, batch)

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
        given = isinstance(outputs, Mapping) and "beams" in outputs
        processor = None
        limit = self.generation_limit(pl_module)
        if self.lf_generation and not given:
            processor = self._decoder(limit).processor(pl_module, batch, examples, self.kb)
        return generate_for_batch(
            pl_module,
            outputs,
            batch,
            processor=processor,
            lf_generation=self.lf_generation,
            num_beams=self.num_beams,
            num_return_sequences=self.num_return_sequences,
            max_new_tokens=limit,
            answers=self._answers,
            early_stopping=self.early_stopping,
        )

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
            predicted = comparable_answers(self.kb, sel.answers, ex)
            score = score_question(
                predicted, gold_parses(ex), em=lf_em(sel, ex, self._reverse), executable=sel.executable
            )
            scores.append(score)
            fallbacks += int(sel.fallback)
            row = prediction_row(i, ex, ex_beams, None if texts is None else texts[k], sel, score)
            row["constrained"] = constrained
            row.update(self.answering.recorded(constrained).record())
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
        return AnswerChain(self.selector, self.answering.paths, self.answering.types).select(
            beams,
            question=ex.question,
            linked={str(e): str(n) for e, n in ex.topic_entities.items()},
            semantics=ex.semantics,
            label_to_ids=invert_labels(ex.entity_labels()),
            entity_candidates=tuple((str(e), str(n)) for e, n in (ex.meta.get("entity_candidates") or {}).items()),
            answer_text=text,
            name_to_ids=self.names,
        )

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
        if self.answering.paths is None:  # logged only when the path fallback is on
            values.pop("path_fallback_rate", None)
            values.pop("path_override_rate", None)
        if self.answering.types is None:  # logged only when the answer-type check is on
            values.pop("answer_type_rate", None)
        self.last_metrics, self.last_rows, self.last_duplicates = values, rows, duplicates
        if stage != "predict":
            self._quiet.install()
            for key in LOGGED:
                if key in values:
                    pl_module.log(f"{prefix}/{key}", values[key], sync_dist=False, prog_bar=key in ("f1", "hit1"))
        self.last_timing = self._timer.summary(self._execute_seconds())
        if not trainer.sanity_checking:
            self.last_path = self._out_path(prefix, trainer)
            if trainer.is_global_zero:
                write_jsonl_atomic(rows, self.last_path)
                log_wandb_table(trainer, f"{prefix}/predictions", rows[: max(self.log_table_rows, 0)])
                log_timing(trainer, prefix, self.last_timing, to_loggers=stage != "predict")
        self._rows = []
        self._examples = None
        self._metrics.reset()
        self._counts.reset()

    def generation_limit(self, pl_module: L.LightningModule) -> int:
        """``max_new_tokens``, or the module's ``max_target_length`` when it is not set (else 128)."""
        if self.max_new_tokens is not None:
            return self.max_new_tokens
        trained = getattr(getattr(pl_module, "hparams", None), "max_target_length", None)
        return int(trained) if isinstance(trained, int) and trained > 0 else DEFAULT_MAX_NEW_TOKENS

    def _decoder(self, limit: int) -> ConstrainedDecoding:
        """The constrained-decoding helper for the current settings (rebuilt when they were changed)."""
        d = self._decoding
        if (d.mode, d.num_beams, d.max_new_tokens) != (self.constrained, self.num_beams, limit):
            self._decoding = ConstrainedDecoding(self.constrained, self.num_beams, limit)
        return self._decoding

    def _execute_seconds(self) -> float:
        return self.selector.execute_seconds if self.selector is not None else 0.0

    def _out_path(self, prefix: str, trainer: L.Trainer) -> Path:
        out_dir = self._out_dir or Path(trainer.default_root_dir)
        return out_dir / f"{prefix.replace('/', '_')}_predictions_epoch{trainer.current_epoch}.jsonl"
