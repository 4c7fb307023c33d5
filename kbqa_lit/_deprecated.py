"""Old module paths from before the per-system layout, importable for one release with a warning.

YAML files and scripts written for kbqa_lit 0.1 name classes by their old module paths
(``kbqa_lit.modules.multitask_generator.MultitaskGenerator``). Importing such a path imports the
module's new home, warns once with a :class:`DeprecationWarning` naming it, and returns the same
module object, so ``isinstance`` checks and pickled objects keep working.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: Old dotted module path → its new home (removed in kbqa_lit 0.3).
MOVED_MODULES: dict[str, str] = {
    "kbqa_lit.modules.backbones": "kbqa_lit.backbones.seq2seq",
    "kbqa_lit.modules.causal_backbones": "kbqa_lit.backbones.causal",
    "kbqa_lit.decompose": "kbqa_lit.pipelines.coq.decomposition",
    "kbqa_lit.decompose.backends": "kbqa_lit.llm.backends",
    "kbqa_lit.decompose.hf_backend": "kbqa_lit.llm.hf_backend",
    "kbqa_lit.decompose.openai_backend": "kbqa_lit.llm.openai_backend",
    "kbqa_lit.decompose.cache": "kbqa_lit.llm.response_cache",
    "kbqa_lit.decompose.config": "kbqa_lit.pipelines.coq.decomposition.config",
    "kbqa_lit.decompose.prompts": "kbqa_lit.pipelines.coq.decomposition.few_shot",
    "kbqa_lit.decompose.runner": "kbqa_lit.pipelines.coq.decomposition.decompose",
    "kbqa_lit.decompose.variants": "kbqa_lit.pipelines.coq.decomposition.variants",
    "kbqa_lit.decompose.parser": "kbqa_lit.pipelines.coq.decomposition.parser",
    "kbqa_lit.datamodules.coq_inputs": "kbqa_lit.data.coq.generator_inputs",
    "kbqa_lit.data.schema_texts": "kbqa_lit.data.coq.classifier_texts",
    "kbqa_lit.datamodules.prompts": "kbqa_lit.data.tfs.prompts",
    "kbqa_lit.modules.schema_classifier": "kbqa_lit.modules.coq.schema_classifier",
    "kbqa_lit.modules.multitask_generator": "kbqa_lit.modules.coq.multitask_generator",
    "kbqa_lit.modules.lora_causal_lm": "kbqa_lit.modules.tfs.lora_causal_lm",
    "kbqa_lit.datamodules.generation": "kbqa_lit.datamodules.coq.generation",
    "kbqa_lit.datamodules.schema": "kbqa_lit.datamodules.coq.classifier",
    "kbqa_lit.datamodules.schema_inputs": "kbqa_lit.datamodules.coq.classifier_inputs",
    "kbqa_lit.datamodules.instruction": "kbqa_lit.datamodules.tfs.instruction",
    "kbqa_lit.datamodules.instruction_batches": "kbqa_lit.datamodules.tfs.instruction_batches",
    "kbqa_lit.pipelines.pattern_selection": "kbqa_lit.pipelines.coq.patterns",
    "kbqa_lit.callbacks.pattern_writer": "kbqa_lit.pipelines.coq.pattern_writer",
    "kbqa_lit.pipelines.tfs_fallback": "kbqa_lit.pipelines.tfs.fallback",
    "kbqa_lit.pipelines.runner": "kbqa_lit.runner.chain",
    "kbqa_lit.data.synthetic.schema": "kbqa_lit.data.synthetic.world_schema",
}


class _AliasLoader(importlib.abc.Loader):
    """Hands out the already imported new module under the old name."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        # importlib has just set ``__spec__`` to the alias spec: give the module its own back
        # (importlib.resources, pickling and relative imports read it).
        module.__spec__ = self._spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder that resolves the paths of :data:`MOVED_MODULES`."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        """Return a spec aliasing ``fullname`` to its new module, or ``None`` for any other name."""
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; the old path works until kbqa_lit 0.3 (update class_path in your YAML)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(module), is_package=hasattr(module, "__path__"))
        return spec


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (called by ``kbqa_lit/__init__.py``)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
