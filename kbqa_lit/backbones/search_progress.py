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
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from transformers.modeling_outputs import BaseModelOutput

_SWITCH = threading.Lock()
_LOCAL = threading.local()  # .progress: this thread's followed searches, innermost last
_INSTALLED: dict[int, list[Any]] = {}  # model id -> [followed searches on it now, its own instance attributes]
_ABSENT = object()


class SearchProgress:
    """Which examples of a running beam search are finished (``generate``'s stopping heuristic holds).

    Args:
        num_beams: The search's beams (rows are ``example * num_beams + beam``).
        cache: A cache that can drop finished examples' rows (``keep``), or ``None``.
    """

    def __init__(self, num_beams: int, cache: Any = None) -> None:
        self.num_beams = int(num_beams)
        self.cache = cache
        self.unfinished: torch.Tensor | None = None  # [batch] booleans after the last step; None before the first

    def finished(self, batch: int) -> frozenset[int]:
        """The finished examples of a ``batch``-example search (none when unknown or of another size)."""
        flags = self.unfinished
        if flags is None or flags.numel() != batch:
            return frozenset()
        return frozenset(i for i, going in enumerate(flags.tolist()) if not going)


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
    with _SWITCH:
        installed = _INSTALLED.get(id(model))
        if installed is None:  # instance attributes over the class's; an instance's own (a device-map hook) wrapped
            own = {name: model.__dict__.get(name, _ABSENT) for name in ("_check_early_stop_heuristic", "forward")}
            model._check_early_stop_heuristic = _recording(model._check_early_stop_heuristic)
            model.forward = _compacting(model.forward)
            installed = _INSTALLED[id(model)] = [0, own]
        installed[0] += 1
    stack = _LOCAL.__dict__.setdefault("progress", [])
    stack.append(progress)
    for p in followers:
        p.follow_search(progress)
    try:
        yield
    finally:
        for p in followers:
            p.follow_search(None)
        stack.remove(progress)
        with _SWITCH:
            installed = _INSTALLED[id(model)]
            installed[0] -= 1
            if not installed[0]:
                del _INSTALLED[id(model)]
                for name, value in installed[1].items():  # the instance's own attributes back, or none
                    if value is _ABSENT:
                        model.__dict__.pop(name, None)
                    else:
                        setattr(model, name, value)


__all__ = ["SearchProgress", "followed"]
