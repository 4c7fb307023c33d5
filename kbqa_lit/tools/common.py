"""Small helpers shared by the ``kbqa`` tool subcommands."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kbqa_lit.errors import DataFormatError, UserInputError, split_key_value


def parse_set_pairs(pairs: Iterable[str]) -> dict[str, Any]:
    """``--set key=value`` pairs as ``{dotted key: YAML value}`` (``kbqa keqing run``, ``kbqa fc detect``).

    Raises:
        UserInputError: A pair without ``=`` or without a key.
    """
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, value = split_key_value(pair, "--set", form="key=value (dotted keys)")
        out[key] = yaml.safe_load(value)
    return out


def set_dotted(config: dict[str, Any], key: str, value: Any) -> None:
    """Put ``value`` at the dotted ``key`` of a nested config (what ``--set key=value`` means).

    A part that is a whole number indexes a list (``members.0.adapters.s1``: ``s1`` of the first
    member); a mapping key missing on the way (or ``null``) becomes an empty mapping. Whether the
    key is a field of the config is for the config's own parser to say.

    Raises:
        UserInputError: Naming ``key`` for an empty part, a list indexed by a non-number or past its
            end, or a part below a value that is neither a mapping nor a list.
    """
    parts = key.split(".")
    if not all(parts):
        raise UserInputError(f"--set {key}: empty part in the dotted key")
    node: Any = config
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth])
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit():
                raise UserInputError(f"--set {key}: {where} is a list; index it with a number ({where}.0)")
            index = int(part)
            if index >= len(node):
                raise UserInputError(f"--set {key}: {where} has {len(node)} item(s), so no index {index}")
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            raise UserInputError(f"--set {key}: {where} is a value ({node!r}), not a mapping or a list")


def apply_set_pairs(config: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with every ``{dotted key: value}`` of :func:`parse_set_pairs` put in place (in order)."""
    for key, value in overrides.items():
        set_dotted(config, key, value)
    return config


def command_group(subparsers: Any, name: str, *, help: str, description: str | None = None) -> Any:
    """Add the command group ``kbqa NAME`` whose subcommands land in ``args.NAME_command``.

    Without a subcommand the group prints its help and exits with status 2.

    Args:
        subparsers: The ``kbqa`` parser's subparsers.
        name: The group's name (``kb``, ``fc``, ...).
        help: One line for ``kbqa --help``.
        description: The text of ``kbqa NAME --help`` (argparse's default when ``None``).

    Returns:
        The group's subparsers, to add its subcommands to.

    """
    group = subparsers.add_parser(name, help=help, description=description)
    sub = group.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
    group.set_defaults(func=lambda _args: (group.print_help(), 2)[1])
    return sub


def add_config_arguments(parser: Any, *, config_help: str, limit_help: str) -> None:
    """Add ``--config`` (required), ``--set KEY=VALUE`` (repeatable) and ``--limit N`` to a subcommand.

    ``args.set`` is the list of ``--set`` pairs (``None`` when none), for :func:`parse_set_pairs`.

    Args:
        parser: The subcommand's parser.
        config_help: The help of ``--config`` (which YAML, and an example config).
        limit_help: The help of ``--limit`` (which N questions).

    """
    parser.add_argument("--config", required=True, help=config_help)
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config value (dotted key)")
    parser.add_argument("--limit", type=int, default=None, help=limit_help)


def print_json(obj: Any) -> None:
    """Print one JSON document to stdout."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=None) + "\n")
    sys.stdout.flush()


def first_line(exc: BaseException, limit: int = 160) -> str:
    """``Type: first line of the message`` of an exception, cut to ``limit`` characters (for one-line errors)."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_reachable(store: Any) -> Any:
    """Return ``store`` after checking that it answers, when it is a SPARQL endpoint.

    A store never raises for a failed query (the failure is its result); a tool, though, should not
    print a JSON result for every query when the endpoint itself is down or the URL is wrong. The
    endpoint's ``ping`` (``ASK {}``, with its retries) raises
    :class:`~kbqa_lit.errors.EndpointUnreachableError` naming the URL, which the ``kbqa`` entry
    prints as one line on stderr with exit status 2. Embedded stores (no ``ping``) are returned as is.

    Args:
        store: A store from :func:`kbqa_lit.kb.store.open_store`.

    Returns:
        The same store.
    """
    ping = getattr(store, "ping", None)
    if callable(ping):
        try:
            ping()
        except BaseException:
            close = getattr(store, "close", None)
            if callable(close):
                close()
            raise
    return store


def read_text_arg(value: str) -> str:
    """Return ``value``, or the contents of a file when it is written ``@path``."""
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise UserInputError(f"no such file: {path}")
        return path.read_text(encoding="utf-8")
    return value


def parse_json_lines(path: str | Path) -> Iterator[tuple[int, Any, str | None]]:
    """Yield ``(line_number, value, None)`` per non-empty line, ``(line_number, None, problem)`` for a bad one.

    The caller decides what a line that is not valid JSON means (``problem`` is
    ``"not valid JSON (...)"``): :func:`iter_json_lines` stops at it, a batch tool reports it.

    Raises:
        UserInputError: When the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such file: {path}")
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                yield lineno, None, f"not valid JSON ({exc.msg})"
                continue
            yield lineno, value, None


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-empty line of a JSON-lines file.

    Raises:
        UserInputError: When the file does not exist.
        DataFormatError: Naming file and line when a line is not a JSON object.
    """
    for lineno, obj, problem in parse_json_lines(path):
        if problem is not None:
            raise DataFormatError(Path(path), lineno, problem)
        if not isinstance(obj, dict):
            raise DataFormatError(Path(path), lineno, "each line must be a JSON object")
        yield lineno, obj
