"""Answer semantics of each dataset, superlative tie rules, and the sort keys of ARGMAX/ARGMIN.

Every dataset's gold answers follow a rule about which query nodes may be answers; the
converter (:func:`kbqa_lit.kb.lf.sparql.sexpr_to_sparql`) reproduces it by name:

==================  ==============  ================================================================
semantics           dataset alias   rule (read off the datasets' gold SPARQL / gold answers)
==================  ==============  ================================================================
``exclude-topic``   ``webqsp``      no entity of the query is an answer (``FILTER (?x != ns:m.…)``)
``exclude-source``  ``cwq``         the answer differs from the node it is reached from: the
                                    entity or variable at the far end of the answer's ``(R r)``
                                    hops (``FILTER (?x != ?c)``); with an ontology, the first
                                    node on the way that is not a CVT
``distinct-nodes``  ``grailqa``     every pair of query nodes is distinct, value variables included
                                    (``FILTER (?x0 != ?x1 && ?x0 != ?x2 && ?x1 != ?x2)``)
``simple-path``     ``metaqa``      no node repeats along the chain (entity nodes pairwise distinct)
``plain``           ``pathquestion`` nothing is excluded
==================  ==============  ================================================================

ARGMAX/ARGMIN ties: ``first`` keeps one member (``ORDER BY … LIMIT 1``, what the WebQSP and CWQ
gold queries do; the default of ``exclude-topic`` and ``exclude-source``) and ``all`` keeps every
member with the best value (GrailQA's ``MAX`` sub-query; the default of the others).
"""

from __future__ import annotations

from kbqa_lit.errors import SExprError, check_choice
from kbqa_lit.kb.lf.iri import XSD

#: Canonical semantics names.
SEMANTICS = ("exclude-topic", "exclude-source", "distinct-nodes", "simple-path", "plain")
#: Dataset names accepted wherever a semantics name is.
ALIASES = {
    "webqsp": "exclude-topic",
    "cwq": "exclude-source",
    "grailqa": "distinct-nodes",
    "metaqa": "simple-path",
    "pathquestion": "plain",
}
#: Every accepted name: the semantics, then the dataset aliases.
SEMANTICS_NAMES = SEMANTICS + tuple(ALIASES)
TIES = ("first", "all")
_FIRST_TIES = ("exclude-topic", "exclude-source")

#: Ontology range → cast of an ARGMAX/ARGMIN value (as the gold queries cast it).
INTEGER_RANGES = ("type.int", "type.enumeration")
FLOAT_RANGES = ("type.float",)
DATE_RANGES = ("type.datetime",)


def resolve_semantics(name: str) -> str:
    """Return the canonical semantics of a semantics name or dataset alias.

    Raises:
        SExprError: When the name is neither (the message lists every accepted name).
    """
    if name in SEMANTICS:
        return name
    if isinstance(name, str) and name.lower() in ALIASES:
        return ALIASES[name.lower()]
    raise SExprError(f"unknown answer semantics {name!r}; expected one of {', '.join(SEMANTICS_NAMES)}")


def resolve_ties(ties: str | None, semantics: str) -> str:
    """Return ``first`` or ``all``: ``ties`` itself, or the default of the (canonical) semantics.

    Raises:
        SExprError: For a ``ties`` value other than ``first``, ``all`` or ``None``.
    """
    if ties is None:
        return "first" if semantics in _FIRST_TIES else "all"
    return check_choice("ties rule", ties, TIES, error=SExprError)


def date_key(var: str) -> str:
    """An ``xsd:dateTime`` sort key of a gYear, gYearMonth, date or dateTime value.

    gYear ``1990`` becomes ``1990-01-01T00:00:00`` and a date ``1990-05-01`` becomes
    ``1990-05-01T00:00:00``, so values of mixed date types sort by time on both engines (a plain
    ``xsd:dateTime(?v)`` cast fails on a gYear).
    """
    dt = f"DATATYPE({var})"
    text = (
        f'IF({dt} = <{XSD}gYear>, CONCAT(STR({var}), "-01-01T00:00:00"), '
        f'IF({dt} = <{XSD}gYearMonth>, CONCAT(STR({var}), "-01T00:00:00"), '
        f'IF({dt} = <{XSD}date>, CONCAT(STR({var}), "T00:00:00"), STR({var}))))'
    )
    return f"<{XSD}dateTime>({text})"


def date_text(var: str) -> str:
    """The ``YYYY-MM-DD`` text of a date value (a gYear ``1990`` reads as ``1990-01-01``)."""
    dt = f"DATATYPE({var})"
    return (
        f'IF({dt} = <{XSD}gYear>, CONCAT(STR({var}), "-01-01"), '
        f'IF({dt} = <{XSD}gYearMonth>, CONCAT(STR({var}), "-01"), SUBSTR(STR({var}), 1, 10)))'
    )


def full_date(lexical: str) -> str:
    """``1552`` → ``1552-01-01``, ``1990-05`` → ``1990-05-01``, ``2004-01-22T10:00:00`` → ``2004-01-22``."""
    parts = lexical[:10].split("-")
    if lexical.startswith("-"):
        return lexical[:11]
    return "-".join((parts + ["01", "01"])[:3])


def _dated(var: str) -> str:
    dates = ", ".join(f"<{XSD}{t}>" for t in ("date", "dateTime", "gYear", "gYearMonth"))
    return f"isLiteral({var}) && DATATYPE({var}) IN ({dates})"


def number_key(var: str, cast: str) -> str:
    """``cast(var)`` for a number or a numeric string; the text of anything else.

    Every cast is guarded: Virtuoso fails the whole query on ``xsd:integer(<iri>)`` where
    Oxigraph leaves the value unbound.
    """
    return (
        f"IF(isNumeric({var}), {cast}({var}), IF({numeric_string(var)}, {cast}(<{XSD}double>(STR({var}))), STR({var})))"
    )


def number_test(var: str, cast: str, symbol: str, number: str) -> str:
    """``cast(var) symbol number`` for a number or a numeric string; false for anything else."""
    cast_string = f"{cast}(<{XSD}double>(STR({var})))"
    return (
        f"IF(isNumeric({var}), {cast}({var}) {symbol} {number}, "
        f"IF({numeric_string(var)}, {cast_string} {symbol} {number}, false))"
    )


def order_key(var: str, value_range: str | None) -> str:
    """The expression ARGMAX/ARGMIN sort ``var`` by: the value cast to its type.

    Args:
        var: The SPARQL variable holding the value.
        value_range: The ontology range of the relation that reaches the value (``type.int``,
            ``type.float``, ``type.datetime``, ...), or ``None`` when unknown.

    Returns:
        ``xsd:integer`` of the value for integer ranges, ``xsd:float`` for float ranges (numeric
        strings included), a dateTime key (:func:`date_key`) for dates; for an unknown range the
        literal's own datatype decides (numbers as ``xsd:double``, dates as dateTime, a numeric
        string as a number, anything else as its text).
    """
    if value_range in INTEGER_RANGES:
        return number_key(var, f"<{XSD}integer>")
    if value_range in FLOAT_RANGES:
        return number_key(var, f"<{XSD}float>")
    if value_range in DATE_RANGES:
        return f"IF({_dated(var)}, {date_key(var)}, STR({var}))"
    return (
        f"IF(isNumeric({var}), <{XSD}double>({var}), IF({_dated(var)}, {date_key(var)}, "
        f"IF({numeric_string(var)}, <{XSD}double>(STR({var})), STR({var}))))"
    )


def numeric_string(var: str) -> str:
    """True for an untyped string that spells a number (``"12"``, ``"1.8"``).

    Virtuoso fails the whole query on a cast such as ``xsd:double("abc")`` instead of leaving the
    value unbound, so every cast of a string is guarded by this test inside an ``IF``.
    """
    return (
        f"isLiteral({var}) && DATATYPE({var}) = <{XSD}string> && "
        f'REGEX(STR({var}), "^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)$")'
    )
