"""``PredictionWriter``: execution-guided predictions of ``kbqa predict`` written as JSON lines.

The same selection and rows as :class:`~kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval`,
acting on ``predict`` only: every question of ``trainer.datamodule.examples("predict")`` that a
rank predicts becomes one row of ``predict_predictions_epoch0.jsonl`` (written once, complete, by
rank 0, sorted by example index). Rows carry scores too; they are meaningful only when the
predicted questions have gold answers.
"""

from __future__ import annotations

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval


class PredictionWriter(ExecutionGuidedEval):
    """Write execution-guided predictions in ``predict`` (see :class:`ExecutionGuidedEval`).

    Args:
        store: The knowledge base: an Oxigraph store directory or an http(s) SPARQL endpoint URL.
        num_beams: Beam size of the logical-form search.
        num_return_sequences: Beams returned per question and executed in order (default: ``num_beams``).
        max_new_tokens: Generation length limit for logical forms and answer texts.
        count_zero_is_executable: Whether a ``COUNT`` query that returns 0 counts as executable.
        workers: Queries in flight at once per process.
        timeout: Seconds a query may run before its beam is marked non-executable.
        disk_cache: SQLite file of the shared execution cache (``None``: memory only).
        predictions_dir: Where the file goes (default: ``trainer.log_dir``, else ``default_root_dir``).
        map_answers_by_name: On fallback, map answer-text parts to KB ids by exact name.
        answer_model: A separately trained answer generator's checkpoint whose answer texts replace
            the module's (CoQ's "separately trained" pair; see :class:`ExecutionGuidedEval`).

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
        map_answers_by_name: bool = True,
        answer_model: str | None = None,
    ) -> None:
        super().__init__(
            store,
            num_beams=num_beams,
            num_return_sequences=num_return_sequences,
            max_new_tokens=max_new_tokens,
            count_zero_is_executable=count_zero_is_executable,
            workers=workers,
            timeout=timeout,
            disk_cache=disk_cache,
            predictions_dir=predictions_dir,
            log_table_rows=0,
            stages=["predict"],
            map_answers_by_name=map_answers_by_name,
            answer_model=answer_model,
        )
