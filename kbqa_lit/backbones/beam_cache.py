"""Encoder-decoder beam search: one cross-attention copy per example, and finished examples made known.

``generate`` expands the encoder output once per beam, so every beam of an example holds the same
cross-attention keys and values (its encoder output, repeated), and it decodes a batch until its last
example is done. Three costs follow, and all are removed here without changing the search's output
(tested against ``transformers``' own cache and attention):

- **the reorder**: beam search reorders the whole cache after every step
  (``EncoderDecoderCache.reorder_cache``), cross-attention included: ``2 x layers x rows x source_length x
  d_model`` floats copied per step. Beam search only moves a row to a beam of the same example, so
  :class:`BeamSearchCache` reorders the self-attention part alone (FC-KBQA's composer, 50 questions x 10
  beams x 320 source tokens: the step about 3.6x cheaper);
- **the reads**: each step's cross-attention reads every row's keys and values, ``num_beams`` copies of the
  same ones. :class:`SharedCrossCache` stores one row per example (the first beam's), and
  :func:`beam_grouped_attention` (a ``transformers`` attention function, on for the search only, by
  :func:`beam_search`) attends an example's beams' queries together against that one copy; attention
  whose keys are not shared (self-attention, the encoder) goes to ``sdpa`` as before;
- **finished examples' rows**: an example whose beams are final is decoded on while the batch goes on.
  :func:`beam_search` records ``generate``'s per-example stopping decision
  (:mod:`kbqa_lit.backbones.search_progress`): the grammar processor skips those rows and
  :meth:`BeamSearchCache.keep` drops them, so the model runs the others only (FC-KBQA's composer: 57 % of
  its rows; free 9.3 → 4.8 s, pair-constrained 22.3 → 10.7 s on 150 questions, the same beams).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from kbqa_lit.backbones.search_progress import SearchProgress, collector_paused, followed, switched

#: The name :func:`beam_grouped_attention` is registered under in ``transformers``' attention functions.
GROUPED = "kbqa_beam_grouped"


class BeamSearchCache(EncoderDecoderCache):
    """An :class:`EncoderDecoderCache` whose beam reordering moves only the self-attention part.

    With a :class:`SharedCrossCache` it can also hold fewer rows than the search has (:meth:`keep`):
    the rows of finished examples are dropped and the model runs on the others
    (:func:`~kbqa_lit.backbones.search_progress.followed`).
    """

    #: The search's rows this cache holds, in order (``None``: all of them).
    rows: torch.Tensor | None = None
    #: Each search row's position in this cache (``-1``: dropped); set with ``rows``.
    _place: torch.Tensor | None = None

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder the self-attention cache; the cross-attention cache is the same for every beam of an example."""
        if self.rows is not None and self._place is not None:  # a held row's parent is a held row of its example
            beam_idx = self._place[beam_idx.to(self.rows.device).index_select(0, self.rows)]
        self.self_attention_cache.reorder_cache(beam_idx)

    def keep(self, examples: list[int], num_beams: int, total_rows: int) -> None:
        """Hold only the rows of ``examples`` (ascending, a subset of those held now) from here on.

        Args:
            examples: The search's example indices to keep.
            num_beams: Rows per example (rows are ``example * num_beams + beam``).
            total_rows: The search's rows (batch x beams).
        """
        device = self.self_attention_cache.layers[0].keys.device
        ex = torch.as_tensor(examples, dtype=torch.long, device=device)
        rows = (ex[:, None] * num_beams + torch.arange(num_beams, device=device)).flatten()
        at = rows if self._place is None else self._place[rows]
        self.self_attention_cache.batch_select_indices(at)
        self.cross_attention_cache.batch_select_indices(at[::num_beams] // num_beams)
        place = torch.full((total_rows,), -1, dtype=torch.long, device=device)
        place[rows] = torch.arange(rows.numel(), device=device)
        self.rows, self._place = rows, place


class SharedCrossCache(DynamicCache):
    """A cross-attention cache that keeps one row per example: the first of its ``num_beams`` equal rows."""

    def __init__(self, num_beams: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.num_beams = int(num_beams)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store (and return) every ``num_beams``-th row of the keys and values."""
        step = self.num_beams
        return super().update(
            key_states[::step].contiguous(), value_states[::step].contiguous(), layer_idx, *args, **kwargs
        )


def _per_example(tensor: torch.Tensor | None, beams: int, queries: int) -> torch.Tensor | None:
    """A mask or bias of ``rows`` (or 1) leading rows, one row per example, its query axis for ``beams x queries``."""
    if tensor is None:
        return None
    if tensor.shape[0] > 1:
        tensor = tensor[::beams]
    if tensor.shape[2] == 1:
        return tensor
    return tensor.repeat(1, 1, beams, 1) if tensor.shape[2] == queries else tensor


def beam_grouped_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``sdpa`` attention, with queries of ``k x`` more rows than the keys grouped by example.

    ``query`` is ``(rows, heads, q, d)`` with rows example-major (``example * beams + beam``, as
    ``generate`` expands them); ``key``/``value`` ``(rows / beams, heads, s, d)``. The beams' queries of an
    example become one ``(heads, beams * q, d)`` query against its keys; the output is put back per row.
    Equal row counts go to ``sdpa`` unchanged.
    """
    rows, groups = query.shape[0], key.shape[0]
    if rows == groups:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    beams, (_, heads, queries, dim) = rows // groups, query.shape
    grouped = query.view(groups, beams, heads, queries, dim).transpose(1, 2).reshape(groups, heads, -1, dim)
    kwargs["position_bias"] = _per_example(kwargs.get("position_bias"), beams, queries)
    mask = _per_example(attention_mask, beams, queries)
    out, _ = sdpa_attention_forward(module, grouped, key, value, mask, **kwargs)  # (groups, beams * q, heads, d)
    return out.reshape(groups, beams, queries, heads, dim).reshape(rows, queries, heads, dim), None


AttentionInterface.register(GROUPED, beam_grouped_attention)
AttentionMaskInterface.register(GROUPED, sdpa_mask)  # the masks sdpa gets (padding, causality), not none


def beam_search_cache(model: Any, num_beams: int, shared_cross: bool = False) -> dict[str, Any]:
    """``generate`` keyword arguments that give an encoder-decoder's beam search a :class:`BeamSearchCache`.

    Args:
        model: The ``transformers`` model that will generate.
        num_beams: The search's beams.
        shared_cross: Keep one cross-attention row per example (:class:`SharedCrossCache`; only with
            :func:`beam_grouped_attention` on, as :func:`beam_search` does).

    Returns:
        ``{"past_key_values": BeamSearchCache(...)}`` for an encoder-decoder with its cache on and more than one
        beam, else ``{}`` (nothing to save: a decoder-only model has no cross-attention, greedy search reorders
        nothing).
    """
    if not _takes_cache(model, num_beams):
        return {}
    config = model.config
    cross = SharedCrossCache(num_beams, config=config) if shared_cross else DynamicCache(config=config)
    return {"past_key_values": BeamSearchCache(DynamicCache(config=config), cross)}


def _takes_cache(model: Any, num_beams: int) -> bool:
    """Whether the search is an encoder-decoder's beam search with its cache on (else there is nothing to save)."""
    config = getattr(model, "config", None)
    return num_beams > 1 and bool(getattr(config, "is_encoder_decoder", False) and getattr(config, "use_cache", True))


@contextmanager
def beam_search(model: Any, num_beams: int, processors: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
    """Within: the ``generate`` keyword arguments of :func:`beam_search_cache`, one cross-attention copy per example.

    A model that attends with ``sdpa`` (``transformers``' default) attends with
    :func:`beam_grouped_attention` inside the block and the cache keeps one cross-attention row per example;
    any other attention (``eager``, flash kernels) keeps its own and every row, as before. The logits
    ``processors`` of the search that can follow it (a ``follow_search(progress)`` method, such as
    :class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor`) are told which examples are finished
    (:class:`~kbqa_lit.backbones.search_progress.SearchProgress`) while it runs, and with the shared
    cross-attention cache the model stops computing finished examples' rows
    (:func:`~kbqa_lit.backbones.search_progress.followed`). The garbage collector leaves the objects
    that existed before the search alone while it runs
    (:func:`~kbqa_lit.backbones.search_progress.collector_paused`).
    """
    with collector_paused(), _beam_search(model, num_beams) as kwargs:
        cache = kwargs.get("past_key_values")
        shared = isinstance(cache, BeamSearchCache) and isinstance(cache.cross_attention_cache, SharedCrossCache)
        with followed(model, num_beams, processors, cache if shared else None):
            yield kwargs


@contextmanager
def _beam_search(model: Any, num_beams: int) -> Iterator[dict[str, Any]]:
    implementation = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if not (_takes_cache(model, num_beams) and implementation in ("sdpa", GROUPED)):
        yield beam_search_cache(model, num_beams)
        return

    def grouped_on() -> Callable[[], None] | None:
        try:
            model.set_attn_implementation(GROUPED)
        except (ValueError, KeyError, AttributeError):  # a model that takes no custom attention: as before
            return None
        return lambda: model.set_attn_implementation("sdpa")

    with switched(model, "grouped attention", grouped_on) as grouped:
        yield beam_search_cache(model, num_beams, shared_cross=grouped)


__all__ = [
    "GROUPED",
    "BeamSearchCache",
    "SearchProgress",
    "SharedCrossCache",
    "beam_grouped_attention",
    "beam_search",
    "beam_search_cache",
]
