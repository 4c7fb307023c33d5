"""CoQ step 1: progressive question decomposition by an LLM.

- :mod:`~kbqa_lit.decompose.prompts`: the few-shot prompt and its per-dataset case files;
- :mod:`~kbqa_lit.decompose.backends`: the backend interface; :mod:`~kbqa_lit.decompose.hf_backend`
  (a local causal LM) and :mod:`~kbqa_lit.decompose.openai_backend` (an OpenAI-compatible server);
- :mod:`~kbqa_lit.decompose.parser`: model text → :class:`Decomposition`, and back;
- :mod:`~kbqa_lit.decompose.variants`: ``full``, ``placeholders``, ``none`` and the ``gold`` source;
- :mod:`~kbqa_lit.decompose.cache` and :mod:`~kbqa_lit.decompose.runner`: the on-disk cache and
  the resumable file runner behind ``kbqa decompose``.
"""

from kbqa_lit.decompose.parser import Decomposition, parse_decomposition

__all__ = ["Decomposition", "parse_decomposition"]
