"""Canonical lexical forms of typed literals, so every engine reports answers alike.

Oxigraph returns typed literals in canonical form (``"1.90"^^xsd:float`` → ``1.9``, ``"2.0"`` →
``2``, ``"1e+12"`` → ``1000000000000``, booleans ``true``/``false``, gYear ``-0500``), while
Virtuoso returns its own forms (``2.0``, ``100.0``, ``1`` for true, ``-500``). Endpoint answers
are mapped to Oxigraph's forms here so that answers compare equal across stores.
"""

from __future__ import annotations

import re
import struct
from decimal import Decimal, InvalidOperation

XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER_TYPES = {
    XSD + t
    for t in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "nonPositiveInteger",
        "positiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
}
_YEAR_RE = re.compile(r"^(-?)(\d+)(.*)$")


def _plain_decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if text not in ("-0",) else "0"


def _shortest_float32(x: float) -> str:
    """The shortest decimal text that reads back as the same 32-bit float."""
    target = struct.pack("f", x)
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if struct.pack("f", float(text)) == target:
            return text
    return repr(x)


def canonical_literal(value: str, datatype: str | None) -> str:
    """Return the canonical lexical form of a typed literal (unchanged when it cannot be parsed).

    Args:
        value: The lexical form as an engine returned it.
        datatype: The datatype IRI, or ``None`` for a plain or language-tagged literal.

    Returns:
        The form Oxigraph reports: numbers without trailing zeros or exponents, ``true``/``false``
        for booleans, years with at least four digits.
    """
    if not datatype or not datatype.startswith(XSD):
        return value
    kind = datatype[len(XSD) :]
    try:
        if datatype in _INTEGER_TYPES:
            return str(int(value))
        if kind == "decimal":
            return _plain_decimal(Decimal(value))
        if kind in ("float", "double"):
            number = float(value)
            if number != number or number in (float("inf"), float("-inf")):
                return {"nan": "NaN", "inf": "INF", "-inf": "-INF"}[str(number)]
            text = _shortest_float32(number) if kind == "float" else repr(number)
            return _plain_decimal(Decimal(text))
    except (ValueError, InvalidOperation, KeyError, OverflowError):
        return value
    if kind == "boolean":
        return {"1": "true", "0": "false"}.get(value, value)
    if kind in ("gYear", "gYearMonth", "date", "dateTime"):
        m = _YEAR_RE.match(value)
        if m and len(m.group(2)) < 4:
            return f"{m.group(1)}{m.group(2).zfill(4)}{m.group(3)}"
    return value
