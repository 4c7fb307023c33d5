"""Load a LightningModule checkpoint for a tool, or fail with one line naming the file and what was expected.

``kbqa retrieve relations`` needs a ``CrossEncoderRetriever`` checkpoint and ``kbqa lora export`` a
``LoraCausalLM`` one; the loader lives in :mod:`kbqa_lit.modules.checkpoint_loading` (a floor the
callbacks may import too: ``ExecutionGuidedEval(answer_model=...)`` loads its second generator with it).
"""

from __future__ import annotations

from kbqa_lit.modules.checkpoint_loading import load_module_checkpoint

__all__ = ["load_module_checkpoint"]
