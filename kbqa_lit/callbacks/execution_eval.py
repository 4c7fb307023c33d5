"""``ExecutionGuidedEval``: generate beams, answer from the KB, score, log, write predictions (CoQ's inference).

Per validation / test / predict batch: the module's beams of normalised S-expressions
(``pl_module.generate_lf``, grammar-constrained with ``constrained``) and answer texts
(:mod:`~kbqa_lit.callbacks.eval_generation`); per question the shared answer chain on the store
(:class:`~kbqa_lit.pipelines.selection.store_chain.StoreChain`: first executable beam, the
extensions that are on, else the answer text), a score and a row. Per epoch
(:class:`~kbqa_lit.callbacks.eval_epoch.EvalEpoch`): ``{val,test}/f1``, ``hit1``, ``executable``,
... synced across ranks, ONE prediction file ``{val,test,predict}_predictions_epoch{E}.jsonl``
(written atomically by rank 0), a W&B table and the time per part. With gold inputs (an oracle)
metrics and files are named ``oracle/...``. Details: ``docs/training.md``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import lightning as L
import torch

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.backbones.common import MINILM
from kbqa_lit.callbacks.answer_source import SeparateAnswerModel
from kbqa_lit.callbacks.constrained_decoding import MODES, ConstrainedDecoding
from kbqa_lit.callbacks.eval_epoch import EvalEpoch
from kbqa_lit.callbacks.eval_form import AnsweringForm
from kbqa_lit.callbacks.eval_generation import datamodule_examples, generate_for_batch, generation_limit
from kbqa_lit.callbacks.eval_rows import comparable_answers, lf_em, log_wandb_table, prediction_row
from kbqa_lit.callbacks.eval_stages import LOGGED, STAGES, ResyncAdviceFilter, metric_prefix
from kbqa_lit.callbacks.eval_timing import log_timing
from kbqa_lit.data.entity_slots import unmask_lf
from kbqa_lit.data.gold import gold_parses
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import check_choice
from kbqa_lit.kb.store import StoreSpec
from kbqa_lit.metrics.functional import score_question
from kbqa_lit.metrics.lf_match import load_reverse_properties
from kbqa_lit.pipelines.batch_hooks import EvalBatchCallback
from kbqa_lit.pipelines.selection.store_chain import StoreChain


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
            ``grammar`` (well-formed S-expressions); ``schema`` (also only the store's relations and
            classes and the linked entities); ``connected`` (``schema``, an entity only in a join
            along one of its KB edges); ``datamodule`` (its ``decoding_rules(example)``, e.g. FC-KBQA's pairs).
        lf_generation: False runs no logical-form beam search: every prediction is the module's
            answer text (CoQ's "w/o LF generation" ablation, with a generator trained with
            ``lf_weight: 0``).
        answer_model: A separately trained answer generator (``.ckpt`` of the module's class,
            trained with ``lf_weight: 0``) whose answer texts replace the module's: CoQ's
            "separately trained" pair, the beams coming from the module under test. Loaded in
            ``setup``, which refuses a checkpoint of another class or tokenizer.
        system: Which system answers (``coq``, ``fc``, ``keqing``, ``tfs``): decides what ``form``
            switches on (:mod:`kbqa_lit.pipelines.selection.forms`).
        form: ``paper`` (the default without ``extensions``: the paper's method) or ``extended``
            (``system``'s preset, :data:`~kbqa_lit.pipelines.selection.forms.EXTENDED`). Rows carry
            ``form`` and ``extensions``; the test logs them as hyper-parameters (``answering/form``,
            ``answering/extensions``).
        extensions: An explicit list instead of the preset (``[path_fallback]``: the paper plus
            one). CoQ offers ``constrained_decoding`` (``constrained`` then defaults to ``schema``;
            any mode but ``none`` counts as it), ``path_fallback``, ``path_constraints`` (not in its
            preset) and ``answer_type`` (rows record
            each; ``path_fallback_rate``/``answer_type_rate`` are logged).
        path_encoder: The sentence encoder of the path fallback (all-MiniLM-L6-v2 offline).
        path_max_hops: Longest relation path of the path fallback (1 or 2).
        path_override_margin: With the ``path_fallback`` extension, also replace a chosen beam that is a plain
            join chain when the best path's similarity exceeds the chain's own by more than this
            (``None``: never). Rows record ``path_override``; ``path_override_rate`` is logged.
        answer_type_threshold: The cosine between the noun and a class's words that counts as
            that kind.
        early_stopping: ``generate``'s stopping rule: ``True`` once ``num_beams`` beams finished,
            ``False`` by its heuristic, ``"never"``; ``None``: the module's default (``False`` for
            ``generate_lf``, free or constrained: ``True`` is cheaper but cuts off longer, better beams).

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
        self.constrained = check_choice(
            "constrained", self.answering.default_constraint() if constrained is None else constrained, MODES
        )
        self._decoding: ConstrainedDecoding | None = None  # built for the module's generation limit
        self.lf_generation = bool(lf_generation)
        self.answer_model = None if answer_model is None else str(answer_model)
        self._answers = None if answer_model is None else SeparateAnswerModel(answer_model)
        self.path_encoder = path_encoder
        self.path_max_hops = int(path_max_hops)
        self.path_override_margin = path_override_margin
        self.answer_type_threshold = float(answer_type_threshold)
        self.early_stopping = check_choice("early_stopping", early_stopping, (None, True, False, "never"))
        spec = StoreSpec(self.store_spec, self.build_from, self.build_format, self.timeout, self.workers, disk_cache)
        self.chain = StoreChain(
            spec,
            self.answering.paths,
            self.answering.types,
            workers=self.workers,
            count_zero_is_executable=self.count_zero_is_executable,
            map_answers_by_name=map_answers_by_name,
        )
        self._reverse: dict[str, str] | None = None
        self._out_dir: Path | None = None
        self._epoch = EvalEpoch()
        self._examples: list[KBQAExample] | None = None
        #: Metrics of the last finished epoch (floats), its gathered rows and file (for callers, tests).
        self.last_metrics: dict[str, float] = {}
        self.last_rows: list[dict[str, Any]] = []
        self.last_path: Path | None = None
        self.last_duplicates = 0
        #: Seconds per part of the last finished epoch on this process (see the module docstring).
        self.last_timing: dict[str, float] = {}
        self._quiet = ResyncAdviceFilter()

    @property
    def kb(self) -> Any:
        """The open knowledge base (``None`` outside ``setup`` ... ``teardown``)."""
        return self.chain.kb

    # -- life cycle ----------------------------------------------------------------------
    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Open the store (once per process) and resolve the prediction directory on every rank."""
        needed = {"fit": "validate", "validate": "validate", "test": "test", "predict": "predict"}.get(stage)
        if needed not in self.stages:
            return
        self.chain.open()
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
        self.chain.close()
        self._quiet.remove()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Lightning has collected the epoch's logged values: warnings are back as they were."""
        self._quiet.remove()

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Lightning has collected the epoch's logged values: warnings are back as they were."""
        self._quiet.remove()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_quiet=ResyncAdviceFilter(), _decoding=None)  # the chain drops its own open store
        return state

    # -- epoch hooks ---------------------------------------------------------------------
    def eval_epoch_start(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Reset the epoch's state (and, for the test, log the form it answers in)."""
        if stage not in self.stages:
            return
        device = pl_module.device if pl_module.device.type == "cuda" else torch.device("cpu")
        self._epoch.start(device, self.chain.cache_counts(), self.chain.execute_seconds())
        self._examples = None
        if stage == "test":
            self.answering.log(trainer, self.constrained)

    def eval_batch_end(
        self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any
    ) -> None:
        """Generate, select and score the batch's questions (in ``predict``: generate and select)."""
        if stage in self.stages:
            self._batch(stage, trainer, pl_module, outputs, batch)

    def eval_epoch_end(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Sync metrics, log them (not in ``predict``), write the prediction file and table."""
        if stage in self.stages:
            self._finish(stage, trainer, pl_module)

    # -- per batch -----------------------------------------------------------------------
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
        if self._examples is None:
            self._examples = datamodule_examples(trainer, STAGES[stage][1])
        examples = self._examples
        index = batch["index"]
        indices = [int(i) for i in (index.tolist() if isinstance(index, torch.Tensor) else index)]
        start = time.perf_counter()
        beams, texts = self._generate(pl_module, outputs, batch, [examples[i] for i in indices])
        generated = time.perf_counter()
        constrained = self.constrained if not (isinstance(outputs, Mapping) and "beams" in outputs) else "none"
        if len(beams) != len(indices) or (texts is not None and len(texts) != len(indices)):
            raise ValueError(
                f"the module generated for {len(beams)} questions (answers: "
                f"{None if texts is None else len(texts)}) but the batch has {len(indices)}"
            )
        recorded = self.answering.recorded(constrained).record()
        rows, scores, selections, selecting = [], [], [], 0.0
        for k, i in enumerate(indices):
            ex, text = examples[i], None if texts is None else texts[k]
            ex_beams = [unmask_lf(b, ex) for b in beams[k]]  # topic-entity slots [E0]... → labels
            before = time.perf_counter()
            sel = self.chain.select(ex, ex_beams, text)
            selecting += time.perf_counter() - before
            predicted = comparable_answers(self.kb, sel.answers, ex)
            em = lf_em(sel, ex, self._reverse)
            score = score_question(predicted, gold_parses(ex), em=em, executable=sel.executable)
            row = prediction_row(i, ex, ex_beams, text, sel, score)
            row["constrained"] = constrained
            row.update(recorded)
            row["answer_source"] = self.answer_model or "module"
            rows.append(row)
            scores.append(score)
            selections.append(sel)
        seconds = (generated - start, selecting, time.perf_counter() - generated - selecting)
        self._epoch.add(rows, scores, selections, seconds)

    # -- epoch end -----------------------------------------------------------------------
    def _finish(self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        prefix = metric_prefix(stage, trainer)
        result = self._epoch.finish(
            self.chain.cache_counts(),
            self.chain.execute_seconds(),
            paths=self.answering.paths is not None,
            types=self.answering.types is not None,
            owner=type(self).__name__,
        )  # collectives
        values, rows = result.values, result.rows
        self.last_metrics, self.last_rows, self.last_duplicates = values, rows, result.duplicates
        if stage != "predict":
            self._quiet.install()
            for key in LOGGED:
                if key in values:
                    pl_module.log(f"{prefix}/{key}", values[key], sync_dist=False, prog_bar=key in ("f1", "hit1"))
        self.last_timing = result.timing
        if not trainer.sanity_checking:
            self.last_path = self._out_path(prefix, trainer)
            if trainer.is_global_zero:
                write_jsonl_atomic(rows, self.last_path)
                log_wandb_table(trainer, f"{prefix}/predictions", rows[: max(self.log_table_rows, 0)])
                log_timing(trainer, prefix, self.last_timing, to_loggers=stage != "predict")
        self._examples = None

    def generation_limit(self, pl_module: L.LightningModule) -> int:
        """``max_new_tokens``, or the module's ``max_target_length`` when it is not set (else 128)."""
        return generation_limit(self.max_new_tokens, pl_module)

    def _decoder(self, limit: int) -> ConstrainedDecoding:
        """The constrained-decoding helper for the current settings (rebuilt when they were changed)."""
        d = self._decoding
        if d is None or (d.mode, d.num_beams, d.max_new_tokens) != (self.constrained, self.num_beams, limit):
            self._decoding = ConstrainedDecoding(self.constrained, self.num_beams, limit)
        return self._decoding

    def _out_path(self, prefix: str, trainer: L.Trainer) -> Path:
        out_dir = self._out_dir or Path(trainer.default_root_dir)
        return out_dir / f"{prefix.replace('/', '_')}_predictions_epoch{trainer.current_epoch}.jsonl"
