"""``StoreChain``: the answer chain on an opened knowledge base, one question (a ``KBQAExample``) at a time.

An evaluation that answers from generated logical forms needs, once per process, the store (built
from triple files on first use), an :class:`~kbqa_lit.pipelines.selection.execution_guided.ExecutionGuidedSelector`
over it, optionally a lookup of answer texts by KB name, and the
:class:`~kbqa_lit.pipelines.selection.chain.AnswerChain` with the extensions that are on.
:class:`StoreChain` holds them: :meth:`StoreChain.open` and :meth:`StoreChain.close` bracket a
run, :meth:`StoreChain.select` answers one example from its ranked candidates. CoQ's execution-guided
evaluation callback answers with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.store import StoreSpec
from kbqa_lit.pipelines.selection.chain import AnswerChain
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, KBNameLookup, Selection
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard


class StoreChain:
    """The store, the selector over it, the name lookup and the answer chain (see the module docstring).

    Args:
        spec: Which knowledge base to open (and build on first use).
        paths: The KB-path fallback, or ``None`` (off).
        types: The answer-type check, or ``None`` (off).
        workers: Queries in flight at once (the selector's thread pool).
        count_zero_is_executable: Whether a ``COUNT`` query that returns 0 counts as executable.
        map_answers_by_name: On fallback to an answer text, map its parts to KB ids by exact
            ``type.object.name``.
    """

    def __init__(
        self,
        spec: StoreSpec,
        paths: PathFallback | None = None,
        types: TypeGuard | None = None,
        *,
        workers: int = 2,
        count_zero_is_executable: bool = False,
        map_answers_by_name: bool = True,
    ) -> None:
        self.spec = spec
        self.paths, self.types = paths, types
        self.workers = max(1, int(workers))
        self.count_zero_is_executable = bool(count_zero_is_executable)
        self.map_answers_by_name = bool(map_answers_by_name)
        self.kb: Any = None
        self.selector: ExecutionGuidedSelector | None = None
        self.names: KBNameLookup | None = None
        self._chain: AnswerChain | None = None

    def open(self) -> None:
        """Open the store and start the selector (once; a second call does nothing)."""
        if self.kb is not None:
            return
        self.kb = self.spec.open()
        self.selector = ExecutionGuidedSelector(
            self.kb, workers=self.workers, count_zero_is_executable=self.count_zero_is_executable
        )
        self.names = KBNameLookup(self.kb) if self.map_answers_by_name else None
        self._chain = AnswerChain(self.selector, self.paths, self.types)

    def close(self) -> None:
        """Stop the selector's thread pool and the store's worker processes."""
        if self.selector is not None:
            self.selector.close()
        if self.kb is not None:
            self.kb.close()
        self.kb, self.selector, self.names, self._chain = None, None, None, None

    def __getstate__(self) -> dict[str, Any]:
        """The settings without the open store, thread pool and lookup (a copy opens its own)."""
        return {**self.__dict__, "kb": None, "selector": None, "names": None, "_chain": None}

    def select(self, ex: KBQAExample, candidates: Sequence[str], answer_text: str | None = None) -> Selection:
        """Answer ``ex`` from its ranked candidates, then the fallbacks that are on, then ``answer_text``.

        Args:
            ex: The question as inference sees it (linked entities, candidates, semantics).
            candidates: Normalised S-expressions with entity labels, best first.
            answer_text: A generated answer text, the last resort.

        Raises:
            RuntimeError: Before :meth:`open`.
        """
        if self._chain is None:
            raise RuntimeError("StoreChain.select needs open() first")
        return self._chain.select(
            candidates,
            question=ex.question,
            linked={str(e): str(n) for e, n in ex.topic_entities.items()},
            semantics=ex.semantics,
            label_to_ids=invert_labels(ex.entity_labels()),
            entity_candidates=tuple((str(e), str(n)) for e, n in (ex.meta.get("entity_candidates") or {}).items()),
            answer_text=answer_text,
            name_to_ids=self.names,
        )

    def execute_seconds(self) -> float:
        """Seconds the selector has spent executing queries (0 before :meth:`open`)."""
        return self.selector.execute_seconds if self.selector is not None else 0.0

    def cache_counts(self) -> tuple[int, int]:
        """The store's execution-cache ``(hits, misses)`` so far (``(0, 0)`` without a cache)."""
        info = self.kb.cache_info() if self.kb is not None and hasattr(self.kb, "cache_info") else {}
        return int(info.get("hits", 0)), int(info.get("misses", 0))


__all__ = ["StoreChain"]
