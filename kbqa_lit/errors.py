"""Typed errors shared by every part of kbqa_lit.

Every error a user can cause (bad input file, malformed S-expression, unreachable endpoint) is a
subclass of :class:`KBQAError`; the ``kbqa`` command prints its message to stderr and exits with a
non-zero status without a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

_T = TypeVar("_T")


class KBQAError(Exception):
    """Base class of every error kbqa_lit raises on purpose."""


class SExprError(KBQAError, ValueError):
    """A malformed S-expression: unbalanced parentheses, unknown operator, wrong arity, bad token."""


class DataFormatError(KBQAError, ValueError):
    """A bad record in a dataset file; the message names the file and the line or record index.

    Args:
        path: The file that holds the bad record.
        where: A line number (1-based) or record index, or ``None`` when it is the whole file.
        reason: What is wrong with the record.
    """

    def __init__(self, path: object, where: int | str | None, reason: str) -> None:
        self.path = str(path)
        self.where = where
        self.reason = reason
        loc = f"{self.path}:{where}" if where is not None else self.path
        super().__init__(f"{loc}: {reason}")


class StoreError(KBQAError):
    """A knowledge-base store cannot be opened, built or reached (not a bad query: those never raise)."""


class EndpointUnreachableError(StoreError):
    """A SPARQL endpoint did not answer after the configured retries."""


class FileWriteError(KBQAError, OSError):
    """A file could not be written: the disk is full, a quota or file-size limit was reached, and the like.

    A :class:`KBQAError` (the ``kbqa`` command prints it in one line, status 2) and an :class:`OSError`
    with the cause's ``errno`` (code that checks for ``ENOSPC`` still can).

    Args:
        path: The file that was being written (the target, not a temporary file beside it).
        cause: The operating system's error.
        note: What became of the file, appended to the message (``"the previous file is kept"``).
    """

    def __init__(self, path: object, cause: OSError, note: str = "") -> None:
        self.path = str(path)
        self.cause = cause
        self.note = note
        reason = cause.strerror or str(cause)
        self.message = f"cannot write {self.path}: {reason}" + (f" ({note})" if note else "")
        super().__init__(self.message)
        self.errno = cause.errno
        self.strerror = cause.strerror

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, OSError(self.errno, self.strerror), self.note))


class UserInputError(KBQAError):
    """A command-line argument or option that cannot be used as given."""


class ChoiceError(UserInputError, ValueError):
    """A setting given a value outside its fixed set of choices (raised by :func:`check_choice`).

    A :class:`UserInputError` (the ``kbqa`` command prints it without a traceback) and a
    :class:`ValueError` (code and libraries that expect a bad argument to raise one still catch it).
    """


def check_choice(
    name: str,
    value: _T,
    choices: Iterable[object],
    *,
    where: str | None = None,
    hint: str | None = None,
    error: Callable[[str], Exception] = ChoiceError,
) -> _T:
    """``value`` when it is one of ``choices``; otherwise raise ``error`` with one consistent message.

    The message reads ``"<where>: <name> must be one of a, b, c; got 'y' (<hint>)"``; the ``where``
    prefix and the ``hint`` suffix only when given.

    Args:
        name: The setting, as the user spells it (``"linking"``, ``"skeleton.source"``, ``"--semantics"``).
        value: The value given.
        choices: The accepted values (any iterable; read once); listed in this order in the message.
        where: What holds the setting (a component, a config file), prefixed to the message.
        hint: A remark appended to the message in parentheses (where another setting does the job).
        error: The exception class (or any callable of the message) to raise; :class:`ChoiceError`
            unless the caller's errors are of another kind (a :class:`SExprError`, say).

    Returns:
        ``value`` itself.

    Raises:
        ChoiceError: When ``value`` is none of ``choices`` (or ``error`` of that message).
    """
    options = tuple(choices)
    if value in options:
        return value
    message = f"{name} must be one of {', '.join(str(c) for c in options)}; got {value!r}"
    if where:
        message = f"{where}: {message}"
    if hint:
        message = f"{message} ({hint})"
    raise error(message)


def split_key_value(
    text: str, what: str, *, error: Callable[[str], Exception] = UserInputError, form: str = "KEY=VALUE"
) -> tuple[str, str]:
    """``KEY=VALUE`` as ``(key, value)``, the key stripped, the value as written (split at the first ``=``).

    Args:
        text: The pair.
        what: What gave it, for the message (``--set``, ``--param``).
        error: The exception type raised for a pair without ``=`` or without a key.
        form: How the message spells the expected form.

    Raises:
        UserInputError: (or ``error``) ``"<what> expects <form>, got '<text>'"``.
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise error(f"{what} expects {form}, got {text!r}")
    return key.strip(), value


def find_kbqa_error(exc: BaseException) -> KBQAError | None:
    """The :class:`KBQAError` that ``exc`` is or was explicitly raised from, if any.

    Libraries that instantiate kbqa_lit's classes (jsonargparse under LightningCLI) re-raise their
    errors as ``ValueError(...) from error``; this follows the ``__cause__`` chain (never the implicit
    ``__context__``, so an unrelated failure while handling a KBQAError is not mistaken for one).

    Args:
        exc: The exception that reached the command line.

    Returns:
        The first KBQAError on the chain, or ``None``.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KBQAError):
            return current
        seen.add(id(current))
        current = current.__cause__
    return None
