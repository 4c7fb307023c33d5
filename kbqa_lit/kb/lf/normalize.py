"""Normalised S-expressions for seq2seq generation, and the exact way back.

A generator (T5, LLaMA) reads and writes a *normalised* S-expression: entity ids become their
labels, schema ids become words, operators become words. :func:`normalize_sexpr` writes it and
:func:`~kbqa_lit.kb.lf.denormalize.denormalize_sexpr` maps it back; on every gold S-expression of
GrailQA, WebQSP and CWQ ``denormalize_sexpr(normalize_sexpr(s, labels), invert_labels(labels)) == s`` (except where two
entities of one question share a label; ``denormalize_all`` enumerates those readings).

Scheme (tokens separated by single spaces)::

    S-expression                                    normalised
    (  )                                            (  )
    AND JOIN R COUNT ARGMAX ARGMIN                  and join reverse count argmax argmin
    lt le gt ge                                     less than / less equal / greater than / greater equal
    TC                                              time constraint
    people.person.place_of_birth  (relation/class)  [ people , person , place of birth ]
    location.location_symbol_relationship.Kind_of_symbol
                                    [ location , location symbol relationship , Kind of symbol ]
    m.06w2sn5  (label "Justin Bieber")              [ Justin Bieber ]
    m.01mp     (no usable label)                    [ m.01mp ]
    1998^^http://www.w3.org/2001/XMLSchema#gYear    1998 year
        (XSD date, dateTime, gYearMonth, integer, float: date, date time, year month, integer, float;
         other XSD types by local name: true^^...#boolean → true boolean)
    "Young Forrest"  "Animation"@en  13  NOW        unchanged

Why schema ids sit in brackets: GrailQA and CWQ put two schema ids side by side (``(ARGMAX
music.album music.album.release_date)``, relation chains ``(JOIN r1 r2)``; 296 of the gold
expressions here), so unbracketed ``music , album music , album , release date`` would not say
where one id ends. Brackets mark both ends, and the words inside stay plain English for the
tokenizer. Bracket content with a `` , `` (a comma between spaces) is a schema id; any other
content is an entity: an id (``m.*``/``g.*``) stands for itself, anything else is a label.

Exactness: a segment ``a_b_c`` becomes the words ``a b c`` (case kept); a segment whose
underscores are not single separators (``a__b``, ``_a``) is written as it is. A label is written
only when it reads back unchanged (non-empty, no outer whitespace, no `` , ``, no closing
`` ]``, not id-shaped); otherwise the entity is written by its id. A typed literal whose value or
datatype has no word form is written as it is (``v^^http://...``).

Denormalisation (labels back to ids, fuzzy matching) is in :mod:`kbqa_lit.kb.lf.denormalize`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.sexpr import (
    ENTITY_RE,
    SCHEMA_RE,
    Atom,
    Role,
    SExpr,
    atoms_with_roles,
    parse_sexpr,
)

XSD = "http://www.w3.org/2001/XMLSchema#"

#: Operator → its words in the normalised form.
OPERATOR_WORDS: dict[str, str] = {
    "AND": "and",
    "JOIN": "join",
    "R": "reverse",
    "COUNT": "count",
    "ARGMAX": "argmax",
    "ARGMIN": "argmin",
    "lt": "less than",
    "le": "less equal",
    "gt": "greater than",
    "ge": "greater equal",
    "TC": "time constraint",
}
#: XSD datatype local name → its words after a typed literal's value.
DATATYPE_WORDS: dict[str, str] = {
    "date": "date",
    "dateTime": "date time",
    "gYear": "year",
    "gYearMonth": "year month",
    "integer": "integer",
    "float": "float",
}

OPERATOR_FROM_WORDS: dict[str, str] = {
    **{words: op for op, words in OPERATOR_WORDS.items()},
    **{op.lower(): op for op in OPERATOR_WORDS},
}
TWO_WORD_OPERATOR_HEADS = frozenset(w.split()[0] for w in OPERATOR_WORDS.values() if " " in w)
DATATYPE_FROM_WORDS: dict[str, str] = {words: local for local, words in DATATYPE_WORDS.items()}
LOCAL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
SCHEMA_SEP_RE = re.compile(r"\s,\s")
_SCHEMA_SPLIT_RE = re.compile(r"\s+,\s+")
QUOTED_RE = re.compile(r'"(?:[^"\\]|\\.)*"(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^[^\s()]+)?')
WORD_RE = re.compile(r"[^\s()]+")


# --------------------------------------------------------------------------- normalise


def _segment_words(segment: str) -> str:
    parts = segment.split("_")
    return " ".join(parts) if all(parts) else segment


def schema_to_words(schema_id: str) -> str:
    """Write a relation or class id as words.

    Example:
        ``people.person.place_of_birth`` → ``people , person , place of birth``.

    """
    return " , ".join(_segment_words(seg) for seg in schema_id.split("."))


def schema_name(schema_id: str) -> str:
    """The last dotted segment of a schema id, underscores as spaces (``film.film_genre`` → ``film genre``)."""
    return " ".join(schema_id.rsplit(".", 1)[-1].replace("_", " ").split())


def words_to_schema(words: str) -> str:
    """Read words written by :func:`schema_to_words` back into the dotted id.

    Raises:
        SExprError: When the words do not spell a dotted schema id.

    """
    segments = _SCHEMA_SPLIT_RE.split(words.strip())
    schema_id = ".".join("_".join(seg.split()) for seg in segments)
    if not SCHEMA_RE.match(schema_id) or ENTITY_RE.match(schema_id):
        raise SExprError(f"[ {words.strip()} ] does not spell a relation or class id")
    return schema_id


def find_span_end(text: str, start: int) -> int:
    """Index of the ``]`` closing the bracket opened at ``start``, or -1.

    The closing bracket is the first `` ]`` (whitespace before it) followed by whitespace,
    ``)`` or the end; failing that, the first ``]`` followed by one of those (``[Bieber]``).
    """
    n = len(text)
    fallback = -1
    j = text.find("]", start + 1)
    while j != -1:
        if j + 1 == n or text[j + 1].isspace() or text[j + 1] == ")":
            if text[j - 1].isspace() and j - 1 > start:
                return j
            if fallback == -1:
                fallback = j
        j = text.find("]", j + 1)
    return fallback


def _label_usable(label: str | None) -> bool:
    """Whether ``[ label ]`` reads back as exactly this label (an entity, not a schema id)."""
    if not label or label != label.strip() or ENTITY_RE.match(label) or SCHEMA_SEP_RE.search(label):
        return False
    span = f"[ {label} ]"
    return find_span_end(span, 0) == len(span) - 1


def _literal_to_words(text: str) -> str:
    if text.startswith('"') or "^^" not in text:
        return text  # quoted strings, bare numbers, NOW
    value, _, dtype = text.partition("^^")
    if not dtype.startswith(XSD) or ENTITY_RE.match(value) or SCHEMA_RE.match(value):
        return text
    local = dtype[len(XSD) :]
    words = DATATYPE_WORDS.get(local)
    if words is None and LOCAL_NAME_RE.match(local) and local not in DATATYPE_FROM_WORDS:
        words = local
    return f"{value} {words}" if words else text


def normalize_sexpr(expr: str | SExpr, labels: Mapping[str, str | None]) -> str:
    """Write an S-expression in the normalised form a generator reads and writes.

    Args:
        expr: The S-expression (text or tree).
        labels: Entity id → label. An entity without a usable label is written by its id.

    Returns:
        The normalised text, e.g.
        ``( join ( reverse [ people , person , nationality ] ) [ Justin Bieber ] )``.

    Raises:
        SExprError: When ``expr`` is not a valid S-expression.

    """
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    roles: dict[int, Role] = {id(atom): role for atom, role in atoms_with_roles(node)}

    def render(n: SExpr) -> str:
        if isinstance(n, Atom):
            role = roles[id(n)]
            if role in ("relation", "class"):
                return f"[ {schema_to_words(n.text)} ]"
            if role == "entity":
                label = labels.get(n.text)
                return f"[ {label if _label_usable(label) else n.text} ]"
            return _literal_to_words(n.text)
        return " ".join(["(", OPERATOR_WORDS[n.op], *(render(a) for a in n.args), ")"])

    return render(node)
