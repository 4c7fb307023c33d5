"""The ``kb:`` section that every system's run config shares: which knowledge base, and how to open it.

One typed shape for TFS-KBQA's ``kbqa lora pipeline``, Keqing's ``kbqa keqing run`` and FC-KBQA's
``kbqa fc detect`` / ``compose`` (:mod:`kbqa_lit.pipelines.fc.config`,
:mod:`~kbqa_lit.pipelines.fc.compose_config`)::

    kb:
      store: outputs/keqing_mq/kb          # an Oxigraph store folder or an http(s) SPARQL endpoint
      build_from: [outputs/world/kb.nt]    # triple files that build a missing folder (one path is read as [path])
      format: nt                           # their format: nt, tsv, metaqa, pathquestion
      timeout: 30                          # seconds a query may run
      semantics: simple-path               # answer semantics along a whole path (Keqing's chains)

:meth:`KBConfig.open` opens it through :class:`~kbqa_lit.kb.store.StoreSpec` (the missing folder built
once, under a file lock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.store import StoreSpec


@dataclass
class KBConfig:
    """The knowledge base of a run.

    Attributes:
        store: An Oxigraph store folder or an http(s) SPARQL endpoint.
        build_from: Triple files to build the store folder from when it is missing (a single path
            is read as a one-file list).
        format: Format of ``build_from`` for ``kbqa kb build`` (``nt``, ``tsv``, ``metaqa``, ``pathquestion``).
        timeout: Seconds a query may run.
        semantics: The dataset's answer semantics along a whole question's path, for Keqing's chains:
            ``simple-path`` (no node repeats: MetaQA) or ``plain`` (nothing excluded: PathQuestion).
    """

    store: str
    build_from: Union[str, list[str]] = field(default_factory=list)  # noqa: UP007  (jsonargparse)
    format: str = "nt"
    timeout: float = 30.0
    semantics: Literal["simple-path", "plain"] = "simple-path"

    def files(self) -> list[str]:
        """``build_from`` as a list."""
        return [self.build_from] if isinstance(self.build_from, str) else list(self.build_from or [])

    def spec(self) -> StoreSpec:
        """The :class:`~kbqa_lit.kb.store.StoreSpec` this section names."""
        return StoreSpec(self.store, self.files(), self.format, float(self.timeout))

    def open(self) -> Any:
        """Build the store when it is missing (and ``build_from`` names files), then open it."""
        return self.spec().open()

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any], where: str = "kb") -> KBConfig:
        """The section of a mapping, with its keys checked.

        FC-KBQA's configs build their ``kb:`` section with it
        (:func:`~kbqa_lit.pipelines.config_files.build_config`).

        Raises:
            UserInputError: Without ``store``, or with a key this section does not have.
        """
        known = {"store", "build_from", "format", "timeout", "semantics"}
        unknown = sorted(set(section) - known)
        if unknown:
            raise UserInputError(f"unknown {where} keys {unknown}; expected some of {sorted(known)}")
        if not section.get("store"):
            raise UserInputError(f"the config needs {where}.store")
        return cls(**{k: v for k, v in section.items() if v is not None})


__all__ = ["KBConfig"]
