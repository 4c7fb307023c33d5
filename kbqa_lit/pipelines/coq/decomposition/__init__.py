"""CoQ step 1: progressive question decomposition by an LLM.

- :mod:`~kbqa_lit.pipelines.coq.decomposition.few_shot`: the few-shot prompt and its per-dataset case files;
- :mod:`~kbqa_lit.llm.backends`: the backend interface; :mod:`~kbqa_lit.llm.hf_backend`
  (a local causal LM) and :mod:`~kbqa_lit.llm.openai_backend` (an OpenAI-compatible server);
- :mod:`~kbqa_lit.pipelines.coq.decomposition.parser`: model text → :class:`Decomposition`, and back;
- :mod:`~kbqa_lit.pipelines.coq.decomposition.variants`: ``full``, ``placeholders``, ``none`` and the ``gold`` source;
- :mod:`~kbqa_lit.llm.response_cache` and :mod:`~kbqa_lit.pipelines.coq.decomposition.decompose`: the on-disk cache and
  the resumable file runner behind ``kbqa decompose``.
"""

from kbqa_lit.pipelines.coq.decomposition.parser import Decomposition, parse_decomposition

__all__ = ["Decomposition", "parse_decomposition"]
