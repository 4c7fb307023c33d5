"""Literal mentions of a question by regular expressions: dates, years and numbers (FC-KBQA linking).

Tried in this order, a later kind never overlapping an earlier match:

- **date**: ISO ``1990-03-04``; ``March 4, 1990`` / ``4 March 1990`` (full or three-letter month
  names, any case) → value ``1990-03-04``;
- **year**: a four-digit number from 1000 to 2099 standing alone → value ``1990``;
- **number**: other digits, with thousands commas and a decimal part (``1,200``, ``-3.5``) →
  value without commas (``1200``, ``-3.5``).

A digit run inside a word (``A320``, ``3D``) is no mention.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

LiteralKind = Literal["date", "year", "number"]
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ISO_RE = re.compile(r"(?<![\w-])(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?![\w-])")
_MDY_RE = re.compile(rf"(?<!\w){_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})(?!\w)", re.IGNORECASE)
_DMY_RE = re.compile(rf"(?<!\w)(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(?P<y>\d{{4}})(?!\w)", re.IGNORECASE)
_YEAR_RE = re.compile(r"(?<![\w.,-])(?P<y>1\d{3}|20\d{2})(?![\w]|[.,]\d)")
_NUMBER_RE = re.compile(r"(?<![\w.,])(?P<n>-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)(?![\w]|[.,]\d)")


@dataclass(frozen=True)
class LiteralMention:
    """A literal found in a question.

    Attributes:
        text: The question text it was read from.
        kind: ``date``, ``year`` or ``number``.
        value: Its value: ``YYYY-MM-DD``, ``YYYY`` or the number without thousands commas.
        start: Character offset in the question.
    """

    text: str
    kind: LiteralKind
    value: str
    start: int


def _date_value(m: re.Match[str]) -> str | None:
    month = _MONTHS.get(m.group("month").lower()) if "month" in m.groupdict() else int(m.group("m"))
    day, year = int(m.group("d")), int(m.group("y"))
    if not month or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}"


def detect_literals(question: str) -> list[LiteralMention]:
    """The dates, years and numbers of a question, in order of appearance (see the module docstring)."""
    found: list[LiteralMention] = []
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return all(m.end() <= a or m.start() >= b for a, b in taken)

    def add(m: re.Match[str], kind: LiteralKind, value: str) -> None:
        taken.append((m.start(), m.end()))
        found.append(LiteralMention(m.group(0), kind, value, m.start()))

    for pattern in (_ISO_RE, _MDY_RE, _DMY_RE):
        for m in pattern.finditer(question):
            value = _date_value(m)
            if value is not None and free(m):
                add(m, "date", value)
    for m in _YEAR_RE.finditer(question):
        if free(m):
            add(m, "year", m.group("y"))
    for m in _NUMBER_RE.finditer(question):
        if free(m):
            add(m, "number", m.group("n").replace(",", ""))
    return sorted(found, key=lambda lit: lit.start)


__all__ = ["LiteralKind", "LiteralMention", "detect_literals"]
