"""Execution-guided answer selection: the first generated logical form that executes wins.

CoQ's inference (and TFS-KBQA's S1 step): a generator returns beams of *normalised*
S-expressions, best first. Each beam is denormalised (entity labels → ids, with a fuzzy fallback
over the question's candidates), converted to SPARQL and executed on a knowledge base, **in beam
order**; the first beam whose query executes with a non-empty answer gives the prediction. When
no beam executes, the generated answer text is the prediction (each `` | ``-separated part
mapped to KB ids by exact name where possible, kept as text otherwise).

Rules, all observable in :class:`Selection`:

- a beam that cannot be denormalised or converted (bad syntax, a label no entity matches) is
  skipped, never executed;
- beams are deduplicated: the same denormalised S-expression (or the same SPARQL text) is
  executed once, for its first beam;
- a query that fails (error, timeout — the store bounds each query) or returns no answer does
  not execute; a ``COUNT`` that returns ``0`` executes only with ``count_zero_is_executable``;
- with ``workers=1`` the beams are executed in chunks (``chunks``, default one beam at a time),
  each chunk in one ``execute_many`` (one round trip to the Oxigraph worker); the results of a
  chunk are read in beam order, so the selection is that of executing one beam at a time (beams
  after the winner in its chunk run for nothing, into the cache). Measured on MetaQA
  (``benchmarks/bench_execute_many.py``), batching beams does not pay on the embedded store: a
  question's first or second beam usually executes, and an extra query costs about what a saved
  round trip does; chunks such as ``(1, 4, 16)`` suit stores whose round trip dominates;
- with ``workers > 1`` queries run in a thread pool over a sliding window of the next distinct
  beams, but results are consumed in beam order, so the selection is exactly that of the
  sequential loop (later beams' leftover work is cancelled or finishes into the store's cache).

:class:`ExecutionGuidedSelector` keeps the thread pool between questions (the evaluation callback
uses one per process); :func:`select_answer` is the one-call form.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any

from kbqa_lit.errors import EndpointUnreachableError, SExprError, check_choice
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr
from kbqa_lit.kb.lf.iri import NAME_RELATION, NS
from kbqa_lit.kb.lf.sparql import SEMANTICS, sexpr_to_sparql
from kbqa_lit.kb.lf.terms import sparql_string
from kbqa_lit.kb.store import ExecutionResult, KnowledgeBase
from kbqa_lit.kb.store.execute import execute_many

#: Separator of several answers in a generated answer text.
ANSWER_SEPARATOR = " | "
#: Batch sizes of the beams executed together (``workers=1``): one at a time, measured fastest on
#: the embedded store (``benchmarks/bench_execute_many.py``).
DEFAULT_CHUNKS = (1,)


@dataclass
class Selection:
    """The prediction for one question and how it was chosen.

    Attributes:
        answers: Predicted answers: KB ids / literal values of the chosen beam, or the answer
            text's parts (ids where a name matched, text otherwise) on fallback.
        chosen_beam: Index (in the given beam list) of the beam whose answers won, or ``None``.
        chosen_sexpr: Its denormalised S-expression, or ``None``.
        sparql: Its SPARQL, or ``None``.
        executable: Whether a beam executed with a non-empty answer.
        fallback: Whether the answer text was used (no beam executed and a text was given).
        path_fallback: Whether the answers come from the KB-path fallback (no beam executed; see
            :mod:`kbqa_lit.pipelines.selection.path_fallback`): ``chosen_sexpr`` is then the chosen path's.
        path_override: Whether a KB path replaced the executable beam that was chosen (the path
            fallback's ``override_margin``); ``chosen_sexpr`` is then the path's.
        answer_type: Whether the answer-type check replaced the selection: its answers did not
            have the kind of thing the question's answer noun names and these do (see
            :mod:`kbqa_lit.pipelines.selection.type_guard`).
        beams_tried: Beams examined in order, up to and including the chosen one (all of them
            when none executed); duplicates and unmappable beams count.
        errors: Why each examined beam was rejected, as ``"beam i: reason"``, in beam order.

    """

    answers: list[str]
    chosen_beam: int | None
    chosen_sexpr: str | None
    sparql: str | None
    executable: bool
    fallback: bool
    beams_tried: int
    errors: list[str] = field(default_factory=list)
    path_fallback: bool = False
    path_override: bool = False
    answer_type: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class _Query:
    """One distinct executable candidate: the first beam that produced it."""

    beam: int
    sexpr: str
    sparql: str
    counting: bool


def _chunks(queries: Iterator[_Query], sizes: Sequence[int]) -> Iterator[list[_Query]]:
    """Cut the candidates into successive chunks of ``sizes`` (the last size repeats)."""
    k = 0
    while True:
        chunk = list(islice(queries, sizes[min(k, len(sizes) - 1)]))
        if not chunk:
            return
        yield chunk
        k += 1


def _is_count(sexpr: str) -> bool:
    return sexpr.lstrip().startswith("(COUNT")


def _candidates(
    beams: Sequence[str],
    semantics: str,
    label_to_ids: Mapping[str, Sequence[str]],
    candidates: Sequence[tuple[str, str]],
    errors: list[tuple[int, str]],
) -> Iterator[_Query]:
    """Yield the distinct convertible beams in order; record why the others are skipped."""
    seen_sexpr: dict[str, int] = {}
    seen_sparql: dict[str, int] = {}
    for i, beam in enumerate(beams):
        try:
            sexpr = denormalize_sexpr(beam, label_to_ids, candidates or None)
        except (SExprError, RecursionError) as exc:
            errors.append((i, f"unmappable: {exc}"))
            continue
        if sexpr in seen_sexpr:
            errors.append((i, f"duplicate of beam {seen_sexpr[sexpr]}"))
            continue
        seen_sexpr[sexpr] = i
        try:
            sparql = sexpr_to_sparql(sexpr, semantics=semantics)
        except (SExprError, RecursionError) as exc:
            errors.append((i, f"not convertible to SPARQL: {exc}"))
            continue
        if sparql in seen_sparql:
            errors.append((i, f"duplicate of beam {seen_sparql[sparql]}"))
            continue
        seen_sparql[sparql] = i
        yield _Query(i, sexpr, sparql, _is_count(sexpr))


def _safe_execute(kb: KnowledgeBase, sparql: str) -> ExecutionResult:
    """Execute, turning any exception of a non-conforming store into a failed result."""
    try:
        return kb.execute(sparql)
    except Exception as exc:  # stores must not raise; a wrapper or a plugin might
        return ExecutionResult([], False, f"{type(exc).__name__}: {exc}")


def _rejection(query: _Query, result: ExecutionResult, count_zero_is_executable: bool) -> str | None:
    """Why a result does not make its beam executable, or ``None`` when it does.

    Raises:
        EndpointUnreachableError: When the endpoint did not answer through its retry window: the
            beam was not run, so counting it as not executable would be a wrong figure.
    """
    if result.unreachable:
        raise EndpointUnreachableError(f"execution-guided selection stopped: {result.error}")
    if not result.ok:
        return result.error or "execution failed"
    if not result.answers:
        return "no answers"
    if query.counting and result.answers == ["0"] and not count_zero_is_executable:
        return "COUNT is 0"
    return None


def fallback_answers(answer_text: str, name_to_ids: Mapping[str, Sequence[str]] | None) -> list[str]:
    """Turn a generated answer text into answers: split on `` | ``, map exact names to KB ids.

    Args:
        answer_text: The generated text, e.g. ``"Paris | Lyon"``.
        name_to_ids: Exact name → KB ids (e.g. a :class:`KBNameLookup`); ``None`` keeps text.

    Returns:
        Distinct answers in order: the ids of each part whose name is known, else the part itself.

    """
    out: list[str] = []
    for part in answer_text.split(ANSWER_SEPARATOR):
        name = part.strip()
        if not name:
            continue
        ids: Sequence[str] = ()
        if name_to_ids is not None:
            try:
                ids = name_to_ids.get(name) or ()
            except EndpointUnreachableError:
                raise  # the endpoint is down past its retry window: keeping the text would be a wrong answer
            except Exception:  # a lookup that fails (e.g. a store hiccup) keeps the text
                ids = ()
        for value in ids or (name,):
            if value not in out:
                out.append(value)
    return out


def names_of(kb: KnowledgeBase, ids: Sequence[str], batch_size: int = 100) -> dict[str, str]:
    """``{id: name}`` of the entity ids that have a ``type.object.name`` (English or no language).

    For scoring against datasets whose gold answers are names (WebQSP's answer-names files). Ids
    without a name, literals and failed queries are left out; one query per ``batch_size`` ids.
    """
    wanted = [i for i in dict.fromkeys(ids) if i and not i.startswith(("http://", "https://", "_:", '"'))]
    wanted = [i for i in wanted if "." in i and " " not in i]  # entity ids look like m.0abc / g.11x
    out: dict[str, str] = {}
    for start in range(0, len(wanted), batch_size):
        values = " ".join(f"<{NS}{i}>" for i in wanted[start : start + batch_size])
        sparql = (
            f'SELECT (CONCAT(STR(?e), "\\t", STR(?n)) AS ?x) WHERE {{ VALUES ?e {{ {values} }} '
            f'?e <{NS}{NAME_RELATION}> ?n FILTER(lang(?n) = "" || langMatches(lang(?n), "en")) }}'
        )
        result = _safe_execute(kb, sparql)
        for row in result.answers if result.ok else ():
            iri_text, _, name = row.partition("\t")
            eid = iri_text[len(NS) :] if iri_text.startswith(NS) else iri_text
            out.setdefault(eid, name)
    return out


class KBNameLookup(Mapping[str, list[str]]):
    """Exact-name → entity ids, looked up lazily in a knowledge base (``type.object.name``).

    A read-only mapping for :func:`select_answer`'s ``name_to_ids``: ``lookup[name]`` runs one
    query (``"name"@en`` or the plain literal; cached by the store and here) and raises
    ``KeyError`` when no entity has that name (:class:`EndpointUnreachableError` when the endpoint
    is down past its retry window). Iteration covers the names found so far.

    Args:
        kb: The knowledge base.
        limit: At most this many ids per name.

    """

    def __init__(self, kb: KnowledgeBase, limit: int = 10) -> None:
        self.kb = kb
        self.limit = int(limit)
        self._found: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def query(self, name: str) -> str:
        """Return the SPARQL that finds the entities named exactly ``name``."""
        lit = sparql_string(name)
        rel = f"<{NS}{NAME_RELATION}>"
        return (
            f'SELECT DISTINCT ?e WHERE {{ {{ ?e {rel} "{lit}"@en }} UNION {{ ?e {rel} "{lit}" }} }} LIMIT {self.limit}'
        )

    def __getitem__(self, name: str) -> list[str]:
        with self._lock:
            if name in self._found:
                return list(self._found[name])
        if not isinstance(name, str) or not name:
            raise KeyError(name)
        result = _safe_execute(self.kb, self.query(name))
        if result.unreachable:
            raise EndpointUnreachableError(f"name lookup stopped: {result.error}")
        ids = [a for a in result.answers if not a.startswith(("http://", "https://", "_:"))] if result.ok else []
        if not ids:
            raise KeyError(name)
        with self._lock:
            self._found[name] = ids
        return list(ids)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._found))

    def __len__(self) -> int:
        return len(self._found)


class ExecutionGuidedSelector:
    """Execution-guided selection against one knowledge base, with a reusable thread pool.

    Args:
        kb: The knowledge base (its own cache makes repeated queries cheap).
        workers: Queries in flight at once (``1``: a plain sequential loop). Use at most as many
            as the store serves concurrently (``OxigraphStore(workers=...)``; an endpoint: any).
        count_zero_is_executable: Whether a ``COUNT`` returning ``0`` counts as executable.
        max_beams: Consider only the first ``max_beams`` beams (``None``: all).
        chunks: With ``workers=1``, the sizes of the successive batches in which a question's
            beams are denormalised, converted and executed (one ``execute_many`` each: one round
            trip to the Oxigraph worker); the last size repeats. The default ``(1,)`` (one beam
            at a time) is measured fastest on the embedded store (``benchmarks/bench_execute_many.py``).

    Attributes:
        execute_seconds: Seconds spent waiting for query results (all questions so far); the
            rest of :meth:`select` is denormalisation, conversion and bookkeeping.

    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        workers: int = 1,
        count_zero_is_executable: bool = False,
        max_beams: int | None = None,
        chunks: Sequence[int] = DEFAULT_CHUNKS,
    ) -> None:
        self.kb = kb
        self.workers = max(1, int(workers))
        self.count_zero_is_executable = count_zero_is_executable
        self.max_beams = max_beams
        self.chunks = tuple(int(c) for c in chunks)
        if not self.chunks or min(self.chunks) < 1:
            raise ValueError(f"chunks must be positive sizes, got {chunks!r}")
        self._pool: ThreadPoolExecutor | None = None
        self.execute_seconds = 0.0

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="kbqa-exec")
        return self._pool

    def close(self) -> None:
        """Stop the thread pool (queued work is cancelled; running queries end within the store's timeout)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ExecutionGuidedSelector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:  # the pool does not pickle; a copy starts its own
        state = dict(self.__dict__)
        state["_pool"] = None
        return state

    def _first_executable(
        self, queries: Iterator[_Query], errors: list[tuple[int, str]]
    ) -> tuple[_Query, ExecutionResult] | None:
        """Run queries in order (sequentially or through the window); return the first that executes."""
        if self.workers == 1:
            for chunk in _chunks(queries, self.chunks):
                start = time.perf_counter()
                results = execute_many(self.kb, [q.sparql for q in chunk])
                self.execute_seconds += time.perf_counter() - start
                for q, result in zip(chunk, results, strict=True):
                    reason = _rejection(q, result, self.count_zero_is_executable)
                    if reason is None:
                        return q, result
                    errors.append((q.beam, reason))
            return None
        pool = self._executor()
        window: deque[tuple[_Query, Future[ExecutionResult]]] = deque()

        def fill() -> None:
            while len(window) < self.workers:
                q = next(queries, None)
                if q is None:
                    return
                window.append((q, pool.submit(_safe_execute, self.kb, q.sparql)))

        try:
            fill()
            while window:
                q, future = window.popleft()
                start = time.perf_counter()
                result = future.result()
                self.execute_seconds += time.perf_counter() - start
                reason = _rejection(q, result, self.count_zero_is_executable)
                if reason is None:
                    return q, result
                errors.append((q.beam, reason))
                fill()
            return None
        finally:
            for _, pending in window:
                pending.cancel()

    def select(
        self,
        beams: Sequence[str],
        *,
        semantics: str,
        label_to_ids: Mapping[str, Sequence[str]],
        candidates: Sequence[tuple[str, str]] = (),
        answer_text: str | None = None,
        name_to_ids: Mapping[str, Sequence[str]] | None = None,
    ) -> Selection:
        """Choose the answers of one question (see :func:`select_answer` for the arguments)."""
        if isinstance(beams, str):
            raise TypeError("beams must be a sequence of strings, not one string")
        check_choice("answer semantics", semantics, SEMANTICS)
        beams = list(beams if self.max_beams is None else beams[: self.max_beams])
        errors: list[tuple[int, str]] = []
        queries = _candidates(beams, semantics, label_to_ids, candidates, errors)
        found = self._first_executable(queries, errors)
        if found is not None:
            q, result = found
            return Selection(
                answers=list(result.answers),
                chosen_beam=q.beam,
                chosen_sexpr=q.sexpr,
                sparql=q.sparql,
                executable=True,
                fallback=False,
                beams_tried=q.beam + 1,
                errors=[f"beam {i}: {why}" for i, why in sorted(errors) if i < q.beam],
            )
        fallback = answer_text is not None
        return Selection(
            answers=fallback_answers(answer_text, name_to_ids) if answer_text is not None else [],
            chosen_beam=None,
            chosen_sexpr=None,
            sparql=None,
            executable=False,
            fallback=fallback,
            beams_tried=len(beams),
            errors=[f"beam {i}: {why}" for i, why in sorted(errors)],
        )


def select_answer(
    beams: Sequence[str],
    kb: KnowledgeBase,
    *,
    semantics: str,
    label_to_ids: Mapping[str, Sequence[str]],
    candidates: Sequence[tuple[str, str]] = (),
    answer_text: str | None = None,
    name_to_ids: Mapping[str, Sequence[str]] | None = None,
    count_zero_is_executable: bool = False,
    workers: int = 1,
    max_beams: int | None = None,
    chunks: Sequence[int] = DEFAULT_CHUNKS,
) -> Selection:
    """Pick a question's answers: the first beam that executes, else the generated answer text.

    Args:
        beams: Normalised S-expressions in beam order (best first).
        kb: The knowledge base to execute on.
        semantics: Answer semantics of the question (``KBQAExample.semantics``).
        label_to_ids: Entity label → ids for denormalisation
            (``invert_labels(example.entity_labels())``).
        candidates: Further ``(id, label)`` pairs for the fuzzy fallback (linked candidates).
        answer_text: The generated answer text (parts separated by `` | ``), used when no beam
            executes; ``None``: no fallback (empty prediction).
        name_to_ids: Exact name → KB ids for the fallback (e.g. :class:`KBNameLookup`); names
            not found are kept as text.
        count_zero_is_executable: Whether a ``COUNT`` returning ``0`` counts as executable.
        workers: Queries in flight at once; the selection equals that of ``workers=1``.
        max_beams: Consider only the first ``max_beams`` beams.
        chunks: Batch sizes of beams executed together (see :class:`ExecutionGuidedSelector`).

    Returns:
        The :class:`Selection`.

    """
    with ExecutionGuidedSelector(
        kb, workers=workers, count_zero_is_executable=count_zero_is_executable, max_beams=max_beams, chunks=chunks
    ) as selector:
        return selector.select(
            beams,
            semantics=semantics,
            label_to_ids=label_to_ids,
            candidates=candidates,
            answer_text=answer_text,
            name_to_ids=name_to_ids,
        )
