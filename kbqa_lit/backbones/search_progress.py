"""What a running beam search knows of its examples, made available to those who can use it.

``generate``'s beam search decodes a batch until its last example is done. After every step it
decides, per example, whether a running beam can still beat that example's finished ones (its
``_check_early_stop_heuristic``); once not, the example's finished beams are final, and its rows are
decoded on only because the batch goes on. On FC-KBQA's composer (50 questions a batch, 10 beams) a
search runs to its 96-token budget while 57 % of its rows belong to finished examples.

:func:`followed` records that decision for the length of one search in a :class:`SearchProgress`:

- logits processors with a ``follow_search(progress)`` method (the grammar processor) skip the work
  of finished examples' rows;
- with a cache that can drop rows (:class:`~kbqa_lit.backbones.beam_cache.BeamSearchCache` over a
  shared cross-attention cache) the model runs on the rows of unfinished examples only; the others
  get zero logits, which no longer reach the output.

The search returns the same beams: a finished example's beams are frozen by ``generate`` whatever
its running rows are given (tested against plain ``generate`` on models whose examples finish early).
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from transformers.modeling_outputs import BaseModelOutput

_SWITCH = threading.Lock()
_ON: dict[tuple[int, str], list[Any]] = {}  # (model id, what) -> [searches using it now, how to switch it off]
_LOCAL = threading.local()  # .progress: this thread's followed searches, innermost last
_ABSENT = object()


@contextmanager
def switched(model: Any, what: str, switch_on: Callable[[], Callable[[], None] | None]) -> Iterator[bool]:
    """Within: ``what`` is on for ``model``, switched on by the first search that asks, off by the last to end.

    Searches at once on one model (threads, nested searches) share it. ``switch_on`` switches it on
    and returns how to switch it off, or ``None`` when the model refuses it (then nothing changes).

    Yields:
        Whether it is on.
    """
    key = (id(model), what)
    with _SWITCH:
        entry = _ON.get(key)
        if entry is None:
            off = switch_on()
            entry = None if off is None else _ON.setdefault(key, [0, off])
        if entry is not None:
            entry[0] += 1
    if entry is None:
        yield False
        return
    try:
        yield True
    finally:
        with _SWITCH:
            entry[0] -= 1
            if not entry[0]:
                del _ON[key]
                entry[1]()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Within: the objects that existed before are left out of the cyclic garbage collector's passes.

    A constrained search builds many small objects (the grammar's states and caches), and every so
    often the collector's oldest generation scans every object of the process — the model's framework
    included. :func:`gc.freeze` sets the older objects aside for the length of the search (new objects
    are collected as usual; the older ones return with :func:`gc.unfreeze` when the last search at once
    ends). On the quickstart's validation it took the collector's time inside the schema-constrained
    searches from 0.40 s to 0.04 s (benchmarks/README.md). A process that froze objects itself (a
    server after ``fork``) keeps them as they are: nothing is frozen or unfrozen then.
    """

    def freeze() -> Callable[[], None] | None:
        if gc.get_freeze_count():
            return None  # someone else's: unfreezing afterwards would release theirs too
        gc.freeze()
        return gc.unfreeze

    with switched(gc, "objects set aside", freeze):
        yield


class SearchProgress:
    """Which examples of a running beam search are finished (``generate``'s stopping heuristic holds).

    Args:
        num_beams: The search's beams (rows are ``example * num_beams + beam``).
        cache: A cache that can drop finished examples' rows (``keep``), or ``None``.
    """

    def __init__(self, num_beams: int, cache: Any = None) -> None:
        self.num_beams = int(num_beams)
        self.cache = cache
        self._unfinished: torch.Tensor | None = None
        self._finished: frozenset[int] = frozenset()

    @property
    def unfinished(self) -> torch.Tensor | None:
        """``[batch]`` booleans after the last step (``None`` before the first): whose beams may still change."""
        return self._unfinished

    @unfinished.setter
    def unfinished(self, flags: torch.Tensor | None) -> None:
        self._unfinished = flags  # read once per step here, for every reader of finished()
        self._finished = frozenset() if flags is None else frozenset(i for i, on in enumerate(flags.tolist()) if not on)

    def finished(self, batch: int) -> frozenset[int]:
        """The finished examples of a ``batch``-example search (none when unknown or of another size)."""
        flags = self._unfinished
        return self._finished if flags is not None and flags.numel() == batch else frozenset()


def _innermost() -> SearchProgress | None:
    stack = getattr(_LOCAL, "progress", None)
    return stack[-1] if stack else None


def _recording(check: Any) -> Any:
    """``generate``'s stopping heuristic, its per-example answer also kept by this thread's innermost search."""

    def recorded(*args: Any, **kwargs: Any) -> torch.Tensor:
        unfinished = check(*args, **kwargs)
        progress = _innermost()
        if progress is not None:
            progress.unfinished = unfinished.reshape(-1).detach()
        return unfinished

    return recorded


def _held_rows(progress: SearchProgress, rows: int) -> torch.Tensor | None:
    """The rows the model must run this step (``None``: all), dropping finished examples from the cache.

    Rows are dropped when at least an eighth of the held examples are finished (each drop copies the
    cache's held rows once); the last example is never dropped.
    """
    cache, beams = progress.cache, progress.num_beams
    if cache is None or rows % beams:
        return None
    finished = progress.finished(rows // beams)
    held = list(range(rows // beams)) if cache.rows is None else (cache.rows[::beams] // beams).tolist()
    done = [e for e in held if e in finished]
    if done and len(done) >= max(1, len(held) // 8) and len(done) < len(held):
        cache.keep([e for e in held if e not in finished], beams, rows)
    return cache.rows


def _compacting(forward: Any) -> Any:
    """The model's ``forward``, run on the held rows of this thread's innermost search (logits scattered back)."""

    @functools.wraps(forward)  # generate reads forward's signature
    def run(*args: Any, **kwargs: Any) -> Any:
        progress = _innermost()
        ids = kwargs.get("decoder_input_ids")
        asks_more = kwargs.get("output_attentions") or kwargs.get("output_hidden_states")  # row-shaped extras
        if args or asks_more or progress is None or ids is None or kwargs.get("past_key_values") is not progress.cache:
            return forward(*args, **kwargs)
        rows = ids.shape[0]
        held = _held_rows(progress, rows)
        if held is None:
            return forward(**kwargs)
        held = held.to(ids.device)
        sub = {k: v.index_select(0, held) if torch.is_tensor(v) and v.dim() and v.shape[0] == rows else v
               for k, v in kwargs.items()}  # fmt: skip
        encoded = kwargs.get("encoder_outputs")
        if encoded is not None:  # read for its shape only: the cross-attention keys and values are in the cache
            hidden = encoded[0]
            shaped = hidden[:1].expand(held.numel(), *hidden.shape[1:])
            sub["encoder_outputs"] = BaseModelOutput(last_hidden_state=shaped)
        out = forward(**sub)
        logits = out.logits.new_zeros((rows, *out.logits.shape[1:]))
        out.logits = logits.index_copy_(0, held, out.logits)
        return out

    return run


@contextmanager
def followed(model: Any, num_beams: int, processors: Sequence[Any] = (), cache: Any = None) -> Iterator[None]:
    """Within: ``model``'s beam searches in this thread tell ``processors`` (and ``cache``) their finished examples.

    Args:
        model: The ``transformers`` model that will search (its instance gets the recorder, and with
            ``cache`` the row-dropping ``forward``, until the last followed search on it ends).
        num_beams: The search's beams (nothing is followed for one).
        processors: Logits processors; those with ``follow_search`` get the :class:`SearchProgress`
            at the start and ``None`` at the end.
        cache: The search's :class:`~kbqa_lit.backbones.beam_cache.BeamSearchCache` over a shared
            cross-attention cache, to drop finished examples' rows from; ``None``: the model runs every row.
    """
    followers = [p for p in processors if callable(getattr(p, "follow_search", None))]
    check = getattr(model, "_check_early_stop_heuristic", None)
    if num_beams <= 1 or check is None or not (followers or cache is not None):
        yield
        return
    progress = SearchProgress(num_beams, cache)
    stack = _LOCAL.__dict__.setdefault("progress", [])
    with switched(model, "followed", lambda: _install(model)):
        stack.append(progress)
        for p in followers:
            p.follow_search(progress)
        try:
            yield
        finally:
            for p in followers:
                p.follow_search(None)
            stack.remove(progress)


def _install(model: Any) -> Callable[[], None]:
    """The recorder and the row-dropping ``forward`` as instance attributes; returns how to remove them.

    They go over the class's methods, or wrap the instance's own (a device-map hook's ``forward``),
    which are given back after.
    """
    own = {name: model.__dict__.get(name, _ABSENT) for name in ("_check_early_stop_heuristic", "forward")}
    model._check_early_stop_heuristic = _recording(model._check_early_stop_heuristic)
    model.forward = _compacting(model.forward)

    def remove() -> None:
        for name, value in own.items():
            if value is _ABSENT:
                model.__dict__.pop(name, None)
            else:
                setattr(model, name, value)

    return remove


__all__ = ["SearchProgress", "collector_paused", "followed", "switched"]
