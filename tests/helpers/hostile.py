"""Hostile text for the injection tests (issue 31, scenario 8): names, literals and a SPARQL lexer.

- :func:`hostile_value`: a seeded random string of quotes, angle brackets, newlines, ``}``, ``#``,
  backslash-u sequences, control characters, unicode and SPARQL keywords (always with at least one
  character that is not part of a number, so the converter takes its text-literal path);
- :func:`sexpr_quote`: a value as a quoted S-expression literal;
- :func:`hostile_cases`: ``(hostile S-expression, benign twin, values)`` triples; the twin is the
  same S-expression with every hostile value replaced by a plain placeholder;
- :func:`sparql_tokens`: the tokens of SPARQL text per the SPARQL 1.1 grammar, strings decoded
  token by token (``\\uXXXX`` inside a string, as Oxigraph and Virtuoso read it);
- :func:`naive_unescape`: the codepoint escapes replaced before parsing, as SPARQL 1.1 §19.2 reads
  literally (rdflib does this), so a query can be checked under that reading too.
"""

from __future__ import annotations

import random
import re

XSD = "http://www.w3.org/2001/XMLSchema#"
BS = "\\"
#: Pieces that hostile values are made of.
PIECES = [
    '"',
    "'",
    '"""',
    "'''",
    BS,
    BS + BS,
    BS + '"',
    BS + "u0022",
    BS + BS + "u0022",
    BS + "U0000007D",
    BS + "u003E",
    "\n",
    "\r",
    "\t",
    "\x00",
    "\x01",
    "\x0b",
    "\x1f",
    "\x7f",
    "<",
    ">",
    "{",
    "}",
    "} UNION { ?x ?p ?o",
    "} . ?x ?p ?o . {",
    '") || true #',
    '")||true #',
    '") #',
    "#",
    "# comment\n",
    " . ",
    ";",
    "?x",
    "$x",
    "@en",
    "^^",
    "^^<http://www.w3.org/2001/XMLSchema#integer>",
    "<http://rdf.freebase.com/ns/m.0>",
    " FILTER(false) ",
    " LIMIT 0 ",
    "SELECT * WHERE",
    "INSERT DATA { <a> <b> <c> }",
    "DROP ALL",
    "(JOIN x.y m.0)",
    ")",
    "(",
    "é",
    "中文",
    "😀",
    "\u2028",
    "\u202e",
    "\ufeff",
    "e\u0301",
    "\U0010fffd",
    " ",
    "x",
    "2001-",
    "-",
]


def hostile_value(rng: random.Random, max_pieces: int = 6) -> str:
    """A random hostile string: 1–``max_pieces`` pieces, at least one of them not numeric."""
    pieces = [rng.choice(PIECES) for _ in range(rng.randint(1, max_pieces))]
    if not any(re.search(r"[^0-9.+\-eE ]", p) for p in pieces):
        pieces.append('"')
    return "".join(pieces)


def sexpr_quote(value: str) -> str:
    """``value`` as the body of a quoted S-expression literal (backslash and quote escaped), quotes included."""
    return '"' + value.replace(BS, BS + BS).replace('"', BS + '"') + '"'


#: S-expression templates; ``{0}``, ``{1}`` are quoted literals (with their suffix where given).
TEMPLATES = [
    "(JOIN type.object.name {0})",
    "(JOIN type.object.name {0}@en)",
    "(JOIN type.object.name {0}@en-US)",
    "(AND people.person (JOIN people.person.note {0}))",
    "(JOIN people.person.date_of_birth {0}^^" + XSD + "date)",
    "(JOIN people.person.date_of_birth {0}^^" + XSD + "dateTime)",
    "(JOIN people.person.height {0}^^" + XSD + "float)",
    "(lt people.person.date_of_birth {0})",
    "(ge people.person.date_of_birth {0}^^" + XSD + "date)",
    "(le people.person.date_of_birth {0}^^" + XSD + "dateTime)",
    "(gt (JOIN people.person.stint people.stint.name) {0})",
    "(COUNT (JOIN type.object.name {0}))",
    "(ARGMAX (JOIN type.object.name {0}) people.person.height)",
    "(AND (JOIN type.object.name {0}) (JOIN (R people.person.spouse) (JOIN type.object.name {1})))",
    "(TC (JOIN type.object.name {0}) people.person.stint.from NOW)",
    "(JOIN (R people.person.spouse) (AND people.person (JOIN people.person.note {0}@fr)))",
]


def hostile_cases(n: int, seed: int = 0) -> list[tuple[str, str, list[str]]]:
    """``n`` seeded ``(hostile S-expression, benign twin, hostile values)`` triples."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        template = rng.choice(TEMPLATES)
        values = [hostile_value(rng) for _ in range(2)]
        twins = ["zq0", "zq1"]
        out.append(
            (
                template.format(*(sexpr_quote(v) for v in values)),
                template.format(*(sexpr_quote(t) for t in twins)),
                values[: template.count("{")],
            )
        )
    return out


_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", BS: BS}
_STRING_BODY = r"(?:[^{q}\\\n\r]|\\[tbnrf\"'\\]|\\u[0-9A-Fa-f]{{4}}|\\U[0-9A-Fa-f]{{8}})*"
_TOKEN_RE = re.compile(
    "|".join(
        [
            r"(?P<ws>\s+)",
            r"(?P<comment>\#[^\n]*)",
            r"(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)",
            r'(?P<long2>"""(?:(?:"|"")?(?:[^"\\]|\\[tbnrf"\'\\]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}))*""")',
            r"(?P<long1>'''(?:(?:'|'')?(?:[^'\\]|\\[tbnrf\"'\\]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}))*''')",
            '(?P<string2>"' + _STRING_BODY.format(q='"') + '")',
            "(?P<string1>'" + _STRING_BODY.format(q="'") + "')",
            r"(?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)",
            r"(?P<var>[?$][A-Za-z0-9_]+)",
            r"(?P<number>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)",
            r"(?P<word>[A-Za-z_][A-Za-z0-9_]*)",
            r"(?P<punct>\^\^|&&|\|\||!=|<=|>=|[(){}.,;*=<>!+\-/])",
        ]
    )
)


def _decode(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != BS:
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in "uU":
            width = 4 if nxt == "u" else 8
            out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
            i += 2 + width
        else:
            out.append(_ECHAR[nxt])
            i += 2
    return "".join(out)


def sparql_tokens(text: str) -> list[tuple[str, str]]:
    """The ``(kind, value)`` tokens of SPARQL text; strings decoded (kind ``"string"``).

    Whitespace is dropped; comments are kept (kind ``"comment"``) so a caller can forbid them.

    Raises:
        ValueError: Where the text is no sequence of SPARQL tokens (an unterminated string, a stray character).
    """
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise ValueError(f"no SPARQL token at offset {pos}: {text[pos : pos + 30]!r}")
        kind = m.lastgroup or ""
        pos = m.end()
        if kind == "ws":
            continue
        value = m.group()
        if kind in ("string1", "string2"):
            tokens.append(("string", _decode(value[1:-1])))
        elif kind in ("long1", "long2"):
            tokens.append(("string", _decode(value[3:-3])))
        else:
            tokens.append((kind, value))
    return tokens


def naive_unescape(text: str) -> str:
    r"""Every ``\uXXXX``/``\UXXXXXXXX`` replaced before parsing, left to right in one pass (rdflib's reading)."""
    return re.sub(
        r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})",
        lambda m: chr(int(m.group(1) or m.group(2), 16)),
        text,
    )
