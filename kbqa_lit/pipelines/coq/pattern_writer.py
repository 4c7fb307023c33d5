"""``PatternWriter``: ``kbqa predict`` of the schema classifier → examples with refined items and patterns.

For every predicted example (:meth:`SchemaClassifier.predict_step` gives the probabilities of its
candidate relations and entities) the writer

1. refines: keeps the items whose probability reaches ``threshold`` (best first; at least the
   ``min_refined`` best of each kind), written as ``meta["refined_relations"]`` and
   ``meta["refined_entities"]`` (``[[id, prob], ...]``);
2. selects patterns (:class:`~kbqa_lit.pipelines.coq.patterns.PatternSelector`): the KB-connected
   pairs of the top-l candidate relations × the top-l candidate entities (``pairs="candidates"``,
   the paper; ``pairs="refined"``: only refined relations × refined entities, the older
   behaviour), scored over the decomposition's sub-chains with the same classifier (entity items
   list the refined relations, as the classifier saw them), top-k → ``meta["patterns"]``
   (``[{"relation", "entity", "label", "score"}]``);
3. writes the examples, every other field kept, as JSON lines to ``out`` once all ranks are done
   (rank 0, atomically, in file order) — ready for ``GenerationDataModule(patterns="predicted")`` —
   and prints the stage's end-to-end figures (:mod:`kbqa_lit.pipelines.coq.stage_figures`) and logs
   them to the trainer's loggers as ``predict/patterns_per_question``, ``predict/with_gold_pattern``,
   ``predict/rel_{precision,recall,f1,retrieved}_e2e`` and ``predict/ent_..._e2e``.

Entity labels met on the way (candidates' labels) are added to ``meta["entity_candidates"]`` only
when the example has none there, so denormalisation of generated S-expressions can use them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import lightning as L
import torch.distributed as dist
from lightning.pytorch.utilities import rank_zero_info

from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.errors import check_choice
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.batch_hooks import EvalBatchCallback
from kbqa_lit.pipelines.coq.patterns import PATTERN_SELECTION_MODES, PatternSelector
from kbqa_lit.pipelines.coq.stage_figures import figure_metrics, schema_stage_figures

log = logging.getLogger(__name__)

#: Where the pattern pairs come from (see :class:`PatternWriter`).
PAIR_SOURCES = ("candidates", "refined")


def refine(scored: list[list[Any]], threshold: float, min_refined: int = 0) -> list[list[Any]]:
    """``[[id, prob], ...]`` at or above ``threshold``, best first; at least the ``min_refined`` best."""
    ranked = sorted(([str(i), float(p)] for i, p in scored), key=lambda x: -x[1])
    return [x for n, x in enumerate(ranked) if x[1] >= threshold or n < min_refined]


class PatternWriter(EvalBatchCallback):
    """Write refined relations/entities and top-k patterns of ``kbqa predict`` into the examples.

    Args:
        store: The KB for connectivity: an Oxigraph store folder or an http(s) SPARQL endpoint;
            ``None`` uses the datamodule's ``store_spec``.
        out: Output JSON-lines file; ``None`` writes ``<default_root_dir>/patterns.jsonl``.
        top_k: Patterns kept per example (5 CWQ, 3 WebQSP).
        threshold: Refinement threshold; ``None`` uses the classifier's ``threshold``.
        mode: ``scored`` (the paper), ``random`` (a seeded sample of the pair source's entities'
            1-hop relations, KB-connected by construction) or ``oracle`` (gold pairs). Each row
            records it in ``meta["patterns_mode"]``; ``patterns: predicted`` refuses ``oracle`` rows.
        seed: Seed of ``random``.
        pairs: Where the pairs come from: ``candidates`` (all top-l candidate relations × top-l
            candidate entities, the paper) or ``refined`` (refined relations × refined entities).
        min_refined: Keep at least this many relations and entities per example, even below the
            threshold (0: strictly the threshold).
    """

    def __init__(
        self,
        store: str | None = None,
        out: str | None = None,
        top_k: int = 5,
        threshold: float | None = None,
        mode: Literal["scored", "random", "oracle"] = "scored",
        seed: int = 0,
        min_refined: int = 1,
        pairs: Literal["candidates", "refined"] = "candidates",
    ) -> None:
        super().__init__()
        check_choice("mode", mode, PATTERN_SELECTION_MODES)
        check_choice("pairs", pairs, PAIR_SOURCES)
        self.pairs = pairs
        self.store_spec, self.out = store, out
        self.top_k, self.threshold, self.mode, self.seed = top_k, threshold, mode, seed
        self.min_refined = min_refined
        self._selector: PatternSelector | None = None
        self._kb: Any = None
        self._rows: dict[int, KBQAExample] = {}
        #: The file written by the last predict run (``None`` before).
        self.written: Path | None = None
        #: End-to-end figures of the last run (:func:`~kbqa_lit.pipelines.coq.stage_figures.schema_stage_figures`).
        self.figures: dict[str, Any] | None = None

    def on_predict_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Open the store and reset the collected rows."""
        spec = self.store_spec
        if spec is None and self.mode != "oracle":
            spec = getattr(trainer.datamodule, "store_spec", None)
        self._kb = open_store(spec) if spec is not None else None
        self._selector = PatternSelector(
            self._kb,
            top_k=self.top_k,
            mode=self.mode,
            seed=self.seed,
            max_entity_relations=int(getattr(pl_module.hparams, "max_entity_relations", 8)),
        )
        self._rows = {}

    def _examples(self, trainer: L.Trainer) -> list[KBQAExample]:
        return trainer.datamodule.examples("predict")  # type: ignore[union-attr]

    def eval_batch_end(
        self, stage: str, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any
    ) -> None:
        """Refine and select the patterns of each example of a ``predict`` batch."""
        if stage != "predict":
            return
        assert self._selector is not None
        examples = self._examples(trainer)
        threshold = self.threshold if self.threshold is not None else float(pl_module.hparams.threshold)
        use_d = bool(getattr(trainer.datamodule, "hparams", {}).get("use_decomposition", True))
        for rec in outputs:
            ex = examples[int(rec["index"])]
            rels = refine(rec["relations"], threshold, self.min_refined)
            ents = refine(rec["entities"], threshold, self.min_refined)
            refined_r = [r for r, _ in rels]
            if self.pairs == "candidates":
                pair_r, pair_e = [str(r) for r, _ in rec["relations"]], [str(e) for e, _ in rec["entities"]]
            else:
                pair_r, pair_e = refined_r, [e for e, _ in ents]
            patterns = self._selector.select(
                ex,
                pair_r,
                pair_e,
                scorer=pl_module,  # type: ignore[arg-type]
                entity_labels=rec.get("entity_labels"),
                entity_relations=rec.get("entity_relations"),
                use_decomposition=use_d,
                refined_relations=refined_r,
            )
            meta = dict(ex.meta)
            meta["refined_relations"] = rels
            meta["refined_entities"] = ents
            meta["patterns"] = patterns
            meta["patterns_mode"] = self.mode  # oracle: gold pairs, which patterns: predicted refuses
            if not meta.get("entity_candidates") and rec.get("entity_labels"):
                meta["entity_candidates"] = dict(rec["entity_labels"])
            self._rows[int(rec["index"])] = replace(ex, meta=meta)

    def on_predict_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Gather the rows of every rank and write them in file order (rank 0)."""
        rows = self._rows
        if trainer.world_size > 1 and dist.is_available() and dist.is_initialized():
            gathered: list[Any] = [None] * trainer.world_size
            dist.all_gather_object(gathered, rows)
            rows = {k: v for part in gathered for k, v in part.items()}
        if trainer.is_global_zero:
            out = Path(self.out) if self.out else Path(trainer.default_root_dir) / "patterns.jsonl"
            ordered = [rows[i] for i in sorted(rows)]
            n = write_jsonl(ordered, out)
            log.info("wrote %d examples with patterns to %s", n, out)
            self.figures = schema_stage_figures(ordered)
            rank_zero_info(f"end-to-end stage figures (gold from the S-expressions): {json.dumps(self.figures)}")
            metrics = figure_metrics(self.figures)
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=trainer.global_step)
            self.written = out
        if self._kb is not None:
            self._kb.close()
        self._kb, self._selector = None, None


__all__ = ["PAIR_SOURCES", "PatternWriter", "refine"]
