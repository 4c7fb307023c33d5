"""Streaming readers that turn each dataset's own format into :class:`KBQAExample`.

Each reader ``read_X(path, ...)`` returns an iterator; a missing path raises
:class:`~kbqa_lit.errors.UserInputError` at once, a bad record raises
:class:`~kbqa_lit.errors.DataFormatError` (naming the file and line or record) while iterating.
Every example carries ``meta["dataset"]`` and ``meta["semantics"]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path

from kbqa_lit.data.formats.cwq import read_cwq
from kbqa_lit.data.formats.grailqa import read_grailqa
from kbqa_lit.data.formats.metaqa import read_metaqa
from kbqa_lit.data.formats.pathquestion import read_pathquestion
from kbqa_lit.data.formats.synthetic import read_synthetic
from kbqa_lit.data.formats.webqsp import read_webqsp
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import check_choice

Reader = Callable[..., Iterator[KBQAExample]]

#: Format name → reader. ``metaqa`` and ``synthetic`` also take ``split``.
READERS: dict[str, Reader] = {
    "webqsp": read_webqsp,
    "cwq": read_cwq,
    "grailqa": read_grailqa,
    "metaqa": read_metaqa,
    "pathquestion": read_pathquestion,
    "synthetic": read_synthetic,
}


def takes_split(fmt: str) -> bool:
    """Return whether the reader of ``fmt`` has a ``split`` argument (it reads a dataset folder)."""
    return "split" in inspect.signature(READERS[fmt]).parameters


def read_dataset(fmt: str, path: str | Path, split: str | None = None) -> Iterator[KBQAExample]:
    """Read ``path`` with the reader of ``fmt``.

    Args:
        fmt: A key of :data:`READERS`.
        path: The file or folder to read.
        split: The split, for readers that take one (``metaqa``, ``synthetic``); ignored by
            single-file formats; ``None`` keeps the reader's default.

    Raises:
        UserInputError: When ``fmt`` is unknown or ``path`` is missing.

    """
    check_choice("dataset format", fmt, READERS)
    if split is not None and takes_split(fmt):
        return READERS[fmt](path, split=split)
    return READERS[fmt](path)


__all__ = [
    "READERS",
    "read_cwq",
    "read_dataset",
    "read_grailqa",
    "read_metaqa",
    "read_pathquestion",
    "read_synthetic",
    "read_webqsp",
    "takes_split",
]
