"""The outcome of executing one query: :class:`ExecutionResult`, what every knowledge-base store returns.

Its own file so that the caches (:mod:`kbqa_lit.kb.store.cache`), the batch rules
(:mod:`kbqa_lit.kb.store.batch`) and the stores can all name it without importing each other.
Import it from :mod:`kbqa_lit.kb.store` like the rest of the store API.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ExecutionResult:
    """The outcome of executing one query.

    Attributes:
        answers: KB ids (Freebase namespace stripped; other IRIs whole) or literal lexical values
            of the first projected variable, deduplicated in order; ``["true"]``/``["false"]`` for ASK.
        ok: Whether the query executed.
        error: Why it did not (``None`` when ok).
        elapsed: Wall-clock seconds spent in :meth:`KnowledgeBase.execute`.
        cached: Whether the result came from a cache.
        unreachable: The query did not run because the endpoint did not answer (connection refused
            or reset, HTTP 502–504) within its retries: a fact about the endpoint, not the query.
            A caller that scores results should stop rather than count it as a failed query.

    """

    answers: list[str] = field(default_factory=list)
    ok: bool = True
    error: str | None = None
    elapsed: float = 0.0
    cached: bool = False
    unreachable: bool = False


__all__ = ["ExecutionResult"]
