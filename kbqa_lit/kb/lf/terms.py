"""RDF terms as text: Freebase IRIs, literal escaping (N-Triples and SPARQL), literal atoms of S-expressions.

Every floor that writes triples or queries needs them: the bulk loaders (``kbqa kb build``), the
S-expression → SPARQL conversion, the execution-guided selection and Keqing's chain retrieval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.iri import NS, XSD
from kbqa_lit.kb.lf.sexpr import NUMBER_RE, Atom

#: Datatypes compared as dates (``TC`` and date comparisons).
DATE_TYPES = {XSD + t for t in ("date", "dateTime", "gYear", "gYearMonth", "time")}
#: Characters N-Triples forbids in an IRI (besides controls and space).
IRI_BAD = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1f\x7f]')
_SPARQL_NEEDS_ESCAPE = re.compile(r'\\[uU]|[\\"\x00-\x1f\x7f]')


def escape_literal(text: str) -> str:
    """Escape a string for the inside of an N-Triples ``"..."`` literal (quotes, backslashes, controls)."""
    return _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), text)


def literal_nt(value: str, lang: str | None = None, datatype: str | None = None) -> str:
    """Return the N-Triples form of a literal (plain, ``@lang`` or ``^^<datatype>``)."""
    body = f'"{escape_literal(value)}"'
    if lang:
        return f"{body}@{lang}"
    if datatype:
        return f"{body}^^<{datatype}>"
    return body


def fb_iri(local: str) -> str:
    """Return ``<http://rdf.freebase.com/ns/local>``.

    Raises:
        ValueError: When ``local`` is empty or holds a character an IRI cannot contain.

    """
    if not local or IRI_BAD.search(local):
        raise ValueError(f"not usable as an IRI local name: {local!r}")
    return f"<{NS}{local}>"


def _sparql_escape(m: re.Match[str]) -> str:
    text = m.group()
    if len(text) == 2:  # a backslash before u/U: the letter as a codepoint escape (see sparql_string)
        return "\\\\" + ("\\u0075" if text[1] == "u" else "\\u0055")
    return _ESCAPES.get(text, f"\\u{ord(text):04X}")


def sparql_string(body: str) -> str:
    r"""Escape a Python string as the body of a SPARQL double-quoted literal.

    Quotes, backslashes and ``\n \r \t \b \f`` get their escapes and every other control
    character a ``\uXXXX`` (Virtuoso ends a string at a raw NUL). A ``u``/``U`` after a backslash
    is written ``\u0075``/``\u0055``, so the text means the same to engines that read ``\u``
    escapes token by token (Oxigraph, Virtuoso) and to those that replace them before parsing, as
    SPARQL 1.1 §19.2 says (rdflib): there ``\\u0022`` would read as ``\"``, and one more backslash
    before it would end the string early.
    """
    return _SPARQL_NEEDS_ESCAPE.sub(_sparql_escape, body)


def unescape_sexpr_string(quoted: str) -> str:
    r"""Return the value of a quoted S-expression string body (``\"`` and ``\\`` unescaped)."""
    return re.sub(r"\\(.)", r"\1", quoted)


@dataclass(frozen=True)
class LiteralAtom:
    """A parsed literal atom: lexical form, optional language tag or datatype IRI."""

    lexical: str
    lang: str | None = None
    datatype: str | None = None
    bare_number: bool = False

    @property
    def is_date(self) -> bool:
        """Whether the datatype is a date type (:data:`DATE_TYPES`)."""
        return self.datatype in DATE_TYPES

    @property
    def is_numeric(self) -> bool:
        """Whether the literal compares as a number (a bare number, or a non-date numeric lexical form)."""
        if self.bare_number:
            return True
        if self.datatype is not None:
            return not self.is_date and NUMBER_RE.match(self.lexical) is not None
        return self.lang is None and NUMBER_RE.match(self.lexical) is not None

    def term(self) -> str:
        """The literal as a SPARQL term."""
        if self.bare_number:
            return self.lexical
        text = f'"{sparql_string(self.lexical)}"'
        if self.lang:
            return f"{text}@{self.lang}"
        if self.datatype:
            return f"{text}^^<{self.datatype}>"
        return text


def parse_literal(atom: Atom) -> LiteralAtom:
    """Split a literal atom into lexical form, language tag and datatype.

    Raises:
        SExprError: When the atom is not a literal.
    """
    text = atom.text
    if atom.kind != "literal":
        raise SExprError(f"expected a literal, got {text!r}")
    if text.startswith('"'):
        end = text.rfind('"')
        lexical = unescape_sexpr_string(text[1:end])
        suffix = text[end + 1 :]
        if suffix.startswith("@"):
            return LiteralAtom(lexical, lang=suffix[1:])
        if suffix.startswith("^^"):
            return LiteralAtom(lexical, datatype=suffix[2:])
        return LiteralAtom(lexical)
    if "^^" in text:
        value, _, dtype = text.partition("^^")
        return LiteralAtom(value, datatype=dtype)
    if text == "NOW":
        return LiteralAtom("NOW")
    return LiteralAtom(text, bare_number=True)


__all__ = [
    "DATE_TYPES",
    "IRI_BAD",
    "LiteralAtom",
    "escape_literal",
    "fb_iri",
    "literal_nt",
    "parse_literal",
    "sparql_string",
    "unescape_sexpr_string",
]
