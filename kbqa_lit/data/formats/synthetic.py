"""Reader of the synthetic world's questions: JSON lines in the common schema.

``kbqa data synth`` writes ``<dir>/{train,dev,test}.jsonl`` (one :meth:`KBQAExample.to_dict` per
line); this reader takes such a file, or the folder plus a split name. Examples without
``meta["dataset"]`` / ``meta["semantics"]`` get ``"synthetic"`` / ``"exclude-topic"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kbqa_lit.data.formats._common import existing_file
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.errors import UserInputError

DATASET = "synthetic"
SEMANTICS = "exclude-topic"


def read_synthetic(path: str | Path, split: str = "dev") -> Iterator[KBQAExample]:
    """Stream common-schema examples from a JSON-lines file or ``<dir>/<split>.jsonl``.

    Args:
        path: A ``.jsonl`` file in the common schema, or a folder holding ``<split>.jsonl``.
        split: The split to read when ``path`` is a folder.

    Returns:
        An iterator of examples in file order.

    Raises:
        UserInputError: When the file (or ``<dir>/<split>.jsonl``) does not exist (at once).
        DataFormatError: While iterating, naming the file and line of the first bad record.

    """
    p = Path(path)
    if p.is_dir():
        p = p / f"{split}.jsonl"
        if not p.is_file():
            raise UserInputError(f"no {split}.jsonl in {path}")
    return _iter_synthetic(existing_file(p, "JSON-lines file"))


def _iter_synthetic(path: Path) -> Iterator[KBQAExample]:
    for ex in read_jsonl(path):
        ex.meta.setdefault("dataset", DATASET)
        ex.meta.setdefault("semantics", SEMANTICS)
        yield ex
