"""Sizes of the tiny models the tests build from configs (overrides on the package's backbone factories).

The factories in ``kbqa_lit.backbones`` build a small model when no name is given; these dicts make it
smaller still, so a test trains in well under a second a step. Nothing is downloaded.
"""

from __future__ import annotations

#: T5 (the CoQ generator, the schema classifier's encoder): 2 layers, d_model 32.
TINY_T5 = {"d_model": 32, "d_ff": 64, "num_layers": 2, "num_heads": 2, "d_kv": 16, "dropout_rate": 0.0}
#: A one-layer T5, for tests that only need the code path.
ONE_LAYER_T5 = {"d_model": 32, "d_ff": 64, "num_layers": 1, "num_heads": 2, "d_kv": 16}
#: BERT (the cross-encoder retriever): 2 layers, hidden 32.
TINY_BERT = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
