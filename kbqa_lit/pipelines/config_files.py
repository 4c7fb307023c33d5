"""Reading a pipeline's YAML config file, with errors that name the file (TFS, Keqing, FC-KBQA).

:func:`read_config_mapping` reads the file's top-level mapping; :func:`build_config` types a mapping
as a config dataclass without a parser library (FC-KBQA's ``kbqa fc detect`` and ``compose``);
:func:`class_parser` is the jsonargparse parser that types one instead (TFS, Keqing).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin, get_type_hints

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.kb_config import KBConfig

if TYPE_CHECKING:
    from jsonargparse import ArgumentParser

_C = TypeVar("_C")


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


def class_parser(cls: type, key: str, prog: str) -> ArgumentParser:
    """A jsonargparse parser of one config dataclass under ``key`` that raises on a bad value (never exits).

    Args:
        cls: The config dataclass.
        key: The key the config's mapping is parsed under (``parse_object({key: raw})``).
        prog: The command named in the parser's messages (``kbqa keqing run``).

    Returns:
        The parser; environment variables are not read.

    """
    from jsonargparse import ArgumentParser  # here: FC's configs are typed without it

    parser = ArgumentParser(prog=prog, exit_on_error=False, default_env=False)
    parser.add_class_arguments(cls, key)
    return parser


def _fits(value: Any, hint: Any) -> bool:
    """Whether a YAML value has the annotated type (an int is a float; a bool is no number)."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and all(_fits(v, get_args(hint)[0]) for v in value)
    if hint in (int, float):
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    return isinstance(value, hint)


def build_config(cls: type[_C], value: Any, path: str | Path, kind: str, name: str = "") -> _C:
    """A config dataclass from a mapping: every key and value checked, its sections built in turn.

    A field whose type is a dataclass is a section (a nested mapping, built the same way; the
    ``kb:`` section through :meth:`~kbqa_lit.pipelines.kb_config.KBConfig.from_mapping`); any
    other field takes the value as it is when it fits the annotation (``int``, ``float``, ``bool``,
    ``str``, ``list[...]``, ``... | None``). A key the mapping leaves out keeps the field's default.
    The dataclass checks its own choices (``__post_init__``).

    Args:
        cls: The config dataclass.
        value: The mapping (the file's, ``--set`` overrides already in place).
        path: The file, for messages.
        kind: What the config is, for messages (``FC``).
        name: The dotted name of the section being built (``""``: the top).

    Raises:
        UserInputError: Naming the file and the key: a section that is not a mapping, an unknown
            key, a value of the wrong type, a missing required section or a bad choice.
    """
    bad = f"bad {kind} config {path}:"
    if not isinstance(value, Mapping):
        raise UserInputError(f"{bad} section {name!r} must be a mapping, got {value!r}")
    hints = get_type_hints(cls)
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    for key in value:
        if str(key) not in names:
            dotted = f"{name}.{key}" if name else str(key)
            raise UserInputError(f"{bad} unknown key {dotted!r}; {name or 'the config'} has {', '.join(names)}")
    kwargs: dict[str, Any] = {}
    # the keys given first (an unknown key below them is named before a missing required section)
    for f in sorted(fields(cls), key=lambda f: f.name not in value):  # type: ignore[arg-type]
        dotted, hint = f"{name}.{f.name}" if name else f.name, hints[f.name]
        required = f.default is MISSING and f.default_factory is MISSING
        if f.name not in value and not required:
            continue
        item = value.get(f.name, {} if is_dataclass(hint) else None)
        if hint is KBConfig:
            if not isinstance(item, Mapping):
                raise UserInputError(f"{bad} section {dotted!r} must be a mapping, got {item!r}")
            try:
                kwargs[f.name] = KBConfig.from_mapping(item, dotted)
            except UserInputError as exc:
                raise UserInputError(f"{bad} {exc}") from None
        elif is_dataclass(hint):
            kwargs[f.name] = build_config(hint, item, path, kind, dotted)  # type: ignore[arg-type]
        elif not _fits(item, hint):
            shown = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
            raise UserInputError(f"{bad} {dotted} must be {shown}, got {item!r}")
        else:
            kwargs[f.name] = item
    try:
        return cls(**kwargs)
    except UserInputError as exc:
        raise type(exc)(f"{bad} {exc}") from None


__all__ = ["build_config", "read_config_mapping"]
