"""Reading a pipeline's YAML config file into a mapping, with errors that name the file (TFS, Keqing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError


def read_config_mapping(path: str | Path, kind: str) -> dict[str, Any]:
    """The top-level mapping of a YAML config.

    Args:
        path: The YAML file.
        kind: What the config is, for messages (``pipeline``, ``Keqing``).

    Raises:
        UserInputError: The file is missing, is not YAML, or is not a mapping at the top.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such config: {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserInputError(f"bad {kind} config {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise UserInputError(f"bad {kind} config {path}: expected a mapping at the top")
    return raw


__all__ = ["read_config_mapping"]
