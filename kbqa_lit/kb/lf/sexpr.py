"""S-expressions of GrailQA (Gu et al. 2021) plus the WebQSP/CWQ time constraint ``TC``.

Grammar (every operator with a fixed arity; ``AND`` takes two or more arguments)::

    expr    := class | "(" "AND" expr expr+ ")" | "(" "JOIN" rel arg ")" | "(" "COUNT" expr ")"
             | "(" ("ARGMAX" | "ARGMIN") expr relpath ")" | "(" cmp relpath literal ")"
             | "(" "TC" expr rel time ")"
    rel     := relation | "(" "R" relation ")"
    arg     := expr | entity | literal
    relpath := relation | "(" "JOIN" rel relpath ")"      # a chain of relations for ARGMAX/ARGMIN
    cmp     := "lt" | "le" | "gt" | "ge"       # compare the value reached by relpath
    time    := literal | "NOW"

Atoms keep their exact text, so ``to_sexpr_string(parse_sexpr(s)) == s`` for every
single-spaced S-expression. Their kind is read off the text: entities ``m.*``/``g.*``; literals
quoted (``"Young Forrest"``, ``"Animation"@en``), typed (``1998^^http://www.w3.org/2001/XMLSchema#gYear``),
bare numbers (``13``, ``-0.5``) or ``NOW``; schema ids (relations and classes) are dotted ids.
Whether a schema id is a relation or a class follows from its position.

Malformed input (unbalanced parentheses, unknown operator, wrong arity, a bad token, empty text)
raises :class:`kbqa_lit.errors.SExprError` and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Union

from kbqa_lit.errors import SExprError

OPERATORS: dict[str, tuple[int, int | None]] = {
    "AND": (2, None),
    "JOIN": (2, 2),
    "R": (1, 1),
    "COUNT": (1, 1),
    "ARGMAX": (2, 2),
    "ARGMIN": (2, 2),
    "lt": (2, 2),
    "le": (2, 2),
    "gt": (2, 2),
    "ge": (2, 2),
    "TC": (3, 3),
}
COMPARATORS = ("lt", "le", "gt", "ge")

AtomKind = Literal["entity", "literal", "schema"]
Role = Literal["relation", "class", "entity", "literal"]

# ``\Z``, not ``$``: ``$`` also matches before a final newline ("m.0\n" is no entity id)
ENTITY_RE = re.compile(r"^[mg]\.[A-Za-z0-9_]+\Z")
SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)+\Z")
NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")
LANG_RE = re.compile(r"^[A-Za-z]+(?:-[A-Za-z0-9]+)*\Z")
DATATYPE_RE = re.compile(r"^https?://[^\s<>\"{}|^`\\()]+\Z")
TYPED_VALUE_RE = re.compile(r"^[A-Za-z0-9_.:+\-]+\Z")
#: A whole quoted literal: the body with its quotes escaped, then an optional language tag or datatype.
QUOTED_RE = re.compile(r'"(?:[^"\\]|\\.)*"(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^https?://[^\s<>"{}|^`\\()]+)?', re.DOTALL)
_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<open>\()
      | (?P<close>\))
      | (?P<quoted>"(?:[^"\\]|\\.)*"(?:@[^\s()]+|\^\^[^\s()]+)?)
      | (?P<bare>[^\s()"]+)
      | (?P<bad>\S)
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Atom:
    """A leaf of an S-expression: an entity, a schema id (relation or class) or a literal.

    Attributes:
        text: The token exactly as written.
    """

    text: str

    @property
    def kind(self) -> AtomKind:
        """``"entity"``, ``"literal"`` or ``"schema"`` (relation or class, by position)."""
        return atom_kind(self.text)


@dataclass(frozen=True)
class Call:
    """An operator applied to arguments, e.g. ``(JOIN people.person.nationality m.09c7w0)``.

    Attributes:
        op: The operator (one of :data:`OPERATORS`).
        args: The arguments, in order.
    """

    op: str
    args: tuple[SExpr, ...]


SExpr = Union[Atom, Call]  # noqa: UP007 - a runtime alias used in isinstance-free annotations


def atom_kind(text: str) -> AtomKind:
    """Classify an atom's text as entity, literal or schema id.

    Raises:
        SExprError: When the token is none of them.
    """
    if ENTITY_RE.match(text):
        return "entity"
    if text.startswith('"'):
        if not QUOTED_RE.fullmatch(text):
            raise SExprError(f"malformed quoted literal {text!r}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no engine can be sent it
            raise SExprError(f"literal {text!r} is not valid Unicode ({exc.reason})") from None
        return "literal"
    if text == "NOW" or NUMBER_RE.match(text):
        return "literal"
    if "^^" in text:
        value, _, dtype = text.partition("^^")
        if value and TYPED_VALUE_RE.match(value) and DATATYPE_RE.match(dtype):
            return "literal"
        raise SExprError(f"malformed typed literal {text!r}")
    if SCHEMA_RE.match(text):
        return "schema"
    raise SExprError(f"unknown token {text!r}: not an entity (m.*/g.*), a dotted schema id or a literal")


def _check_quoted(text: str) -> None:
    body_end = text.rfind('"')
    suffix = text[body_end + 1 :]
    if suffix.startswith("@"):
        if not LANG_RE.match(suffix[1:]):
            raise SExprError(f"bad language tag in {text!r}")
    elif suffix.startswith("^^"):
        if not DATATYPE_RE.match(suffix[2:]):
            raise SExprError(f"bad datatype IRI in {text!r}")
    elif suffix:
        raise SExprError(f"unexpected text after a quoted string: {text!r}")


def tokenize(text: str) -> list[str]:
    """Split S-expression text into ``(``, ``)`` and atom tokens.

    Raises:
        SExprError: On a stray character such as an unterminated quote.
    """
    tokens: list[str] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:  # only trailing whitespace is left
            break
        pos = m.end()
        if m.group("bad") is not None:
            raise SExprError(f"unexpected character {m.group('bad')!r} at offset {m.start('bad')}")
        tok = m.group("open") or m.group("close") or m.group("quoted") or m.group("bare")
        if tok is None:
            break
        if m.group("quoted"):
            _check_quoted(tok)
        tokens.append(tok)
    return tokens


def parse_sexpr(text: str) -> SExpr:
    """Parse S-expression text into a tree of :class:`Atom` and :class:`Call` nodes.

    Args:
        text: The S-expression, e.g. ``(JOIN (R people.person.nationality) m.06w2sn5)``.

    Returns:
        The root node.

    Raises:
        SExprError: For empty text, unbalanced parentheses, an unknown operator, a wrong
            number of arguments, an argument of the wrong kind, or trailing text.
    """
    if not isinstance(text, str):
        raise SExprError(f"an S-expression must be a string, got {type(text).__name__}")
    tokens = tokenize(text)
    if not tokens:
        raise SExprError("empty S-expression")
    pos = 0

    def node(depth: int) -> SExpr:
        nonlocal pos
        if depth > 200:
            raise SExprError("S-expression nested deeper than 200 levels")
        if pos >= len(tokens):
            raise SExprError("unbalanced parentheses: the expression ends too early")
        tok = tokens[pos]
        pos += 1
        if tok == ")":
            raise SExprError(f"unbalanced parentheses: unexpected ')' (token {pos})")
        if tok != "(":
            atom_kind(tok)
            return Atom(tok)
        if pos >= len(tokens):
            raise SExprError("unbalanced parentheses: the expression ends after '('")
        op = tokens[pos]
        if op in ("(", ")"):
            raise SExprError(f"expected an operator after '(' (token {pos + 1}), got {op!r}")
        if op not in OPERATORS:
            raise SExprError(f"unknown operator {op!r}; expected one of {', '.join(OPERATORS)}")
        pos += 1
        args: list[SExpr] = []
        while True:
            if pos >= len(tokens):
                raise SExprError(f"unbalanced parentheses: ({op} ...) is never closed")
            if tokens[pos] == ")":
                pos += 1
                break
            args.append(node(depth + 1))
        call = Call(op, tuple(args))
        _check_call(call)
        return call

    root = node(0)
    if pos != len(tokens):
        raise SExprError(f"unexpected text after the expression: {' '.join(tokens[pos : pos + 5])!r}")
    _check_expr(root, where="top level")
    return root


def _arity_error(call: Call) -> SExprError:
    lo, hi = OPERATORS[call.op]
    want = f"{lo}" if lo == hi else f"at least {lo}"
    return SExprError(f"{call.op} takes {want} argument(s), got {len(call.args)}")


def _is_relation(node: SExpr) -> bool:
    return isinstance(node, Atom) and node.kind == "schema"


def _check_rel(node: SExpr, where: str) -> None:
    """A relation, or ``(R relation)``."""
    if _is_relation(node):
        return
    if isinstance(node, Call) and node.op == "R":
        return
    raise SExprError(f"{where}: expected a relation or (R relation), got {to_sexpr_string(node)!r}")


def _check_relpath(node: SExpr, where: str) -> None:
    """A relation, (R relation), or a JOIN chain of them (ARGMAX/ARGMIN's second argument)."""
    if isinstance(node, Call) and node.op == "JOIN":
        _check_rel(node.args[0], where)
        _check_relpath(node.args[1], where)
        return
    _check_rel(node, where)


def _check_expr(node: SExpr, where: str) -> None:
    """Something that denotes a set: a class or a set-valued call."""
    if isinstance(node, Atom):
        if node.kind != "schema":
            raise SExprError(f"{where}: expected a class or an expression, got {node.text!r}")
        return
    if node.op == "R":
        raise SExprError(f"{where}: (R ...) can only stand where a relation is expected")


def _check_call(call: Call) -> None:
    lo, hi = OPERATORS[call.op]
    if len(call.args) < lo or (hi is not None and len(call.args) > hi):
        raise _arity_error(call)
    op, args = call.op, call.args
    if op == "R":
        if not _is_relation(args[0]):
            raise SExprError(f"R takes a relation, got {to_sexpr_string(args[0])!r}")
    elif op == "JOIN":
        _check_rel(args[0], "JOIN's first argument")
        if isinstance(args[1], Atom):
            if args[1].kind == "schema":
                _check_expr(args[1], "JOIN's second argument")
        else:
            _check_expr(args[1], "JOIN's second argument")
    elif op == "AND":
        for a in args:
            _check_expr(a, "AND's argument")
    elif op == "COUNT":
        _check_expr(args[0], "COUNT's argument")
    elif op in ("ARGMAX", "ARGMIN"):
        _check_expr(args[0], f"{op}'s first argument")
        _check_relpath(args[1], f"{op}'s second argument")
    elif op in COMPARATORS:
        _check_relpath(args[0], f"{op}'s first argument")
        if not (isinstance(args[1], Atom) and args[1].kind == "literal"):
            raise SExprError(f"{op} compares with a literal, got {to_sexpr_string(args[1])!r}")
    elif op == "TC":
        _check_expr(args[0], "TC's first argument")
        _check_rel(args[1], "TC's second argument")
        if not (isinstance(args[2], Atom) and args[2].kind == "literal"):
            raise SExprError(f"TC's third argument must be a time literal or NOW, got {to_sexpr_string(args[2])!r}")


def base_relation(hop: str) -> str:
    """``r`` of a hop written ``r`` or ``(R r)``."""
    return hop[3:-1].strip() if hop.startswith("(R ") and hop.endswith(")") else hop


def reverse_hop(hop: str) -> str:
    """``(R r)`` for ``r``, ``r`` for ``(R r)``."""
    return base_relation(hop) if hop.startswith("(R ") else f"(R {hop})"


def to_sexpr_string(node: SExpr) -> str:
    """Print a tree back to single-spaced S-expression text (the inverse of :func:`parse_sexpr`)."""
    if isinstance(node, Atom):
        return node.text
    return "(" + " ".join([node.op, *(to_sexpr_string(a) for a in node.args)]) + ")"


def atoms_with_roles(node: SExpr) -> Iterator[tuple[Atom, Role]]:
    """Yield every atom in order with its role: relation, class, entity or literal."""
    if isinstance(node, Atom):
        kind = node.kind
        yield node, ("class" if kind == "schema" else kind)
        return
    op, args = node.op, node.args
    if op == "R":
        yield args[0], "relation"  # type: ignore[misc]
        return
    if op == "JOIN":
        yield from _rel_atoms(args[0])
        yield from atoms_with_roles(args[1])
    elif op in ("ARGMAX", "ARGMIN"):
        yield from atoms_with_roles(args[0])
        yield from _relpath_atoms(args[1])
    elif op in COMPARATORS:
        yield from _relpath_atoms(args[0])
        yield args[1], "literal"  # type: ignore[misc]
    elif op == "TC":
        yield from atoms_with_roles(args[0])
        yield from _rel_atoms(args[1])
        yield args[2], "literal"  # type: ignore[misc]
    else:
        for a in args:
            yield from atoms_with_roles(a)


def _rel_atoms(node: SExpr) -> Iterator[tuple[Atom, Role]]:
    if isinstance(node, Atom):
        yield node, "relation"
    else:
        yield from atoms_with_roles(node)


def _relpath_atoms(node: SExpr) -> Iterator[tuple[Atom, Role]]:
    if isinstance(node, Call) and node.op == "JOIN":
        yield from _rel_atoms(node.args[0])
        yield from _relpath_atoms(node.args[1])
    else:
        yield from _rel_atoms(node)


@dataclass(frozen=True)
class SchemaItems:
    """The KB items an S-expression mentions, each list in order of first occurrence.

    Attributes:
        relations: Relation ids.
        classes: Class ids.
        entities: Entity ids.
        literals: Literal tokens as written (``NOW`` included).
    """

    relations: tuple[str, ...]
    classes: tuple[str, ...]
    entities: tuple[str, ...]
    literals: tuple[str, ...]


def schema_items(expr: SExpr | str) -> SchemaItems:
    """List the relations, classes, entities and literals of an S-expression."""
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    found: dict[Role, dict[str, None]] = {"relation": {}, "class": {}, "entity": {}, "literal": {}}
    for atom, role in atoms_with_roles(node):
        found[role][atom.text] = None
    return SchemaItems(
        relations=tuple(found["relation"]),
        classes=tuple(found["class"]),
        entities=tuple(found["entity"]),
        literals=tuple(found["literal"]),
    )


SKELETON_TOKENS: dict[Role, str] = {
    "relation": "<rel>",
    "class": "<class>",
    "entity": "<entity>",
    "literal": "<literal>",
}


def skeleton(expr: SExpr | str) -> str:
    """Return the logical skeleton: every KB item replaced by ``<rel>``, ``<class>``, ``<entity>`` or ``<literal>``.

    Example:
        ``(AND music.album (JOIN (R music.artist.album) m.0abc))`` →
        ``(AND <class> (JOIN (R <rel>) <entity>))``.
    """
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    roles = {id(atom): role for atom, role in atoms_with_roles(node)}

    def render(n: SExpr) -> str:
        if isinstance(n, Atom):
            return SKELETON_TOKENS[roles[id(n)]]
        return "(" + " ".join([n.op, *(render(a) for a in n.args)]) + ")"

    return render(node)


def map_atoms(node: SExpr, fn: Callable[[Atom, Role], Atom]) -> SExpr:
    """Return a copy of ``node`` with every atom replaced by ``fn(atom, role)`` (an :class:`Atom`)."""
    roles = {id(atom): role for atom, role in atoms_with_roles(node)}

    def walk(n: SExpr) -> SExpr:
        if isinstance(n, Atom):
            return fn(n, roles[id(n)])
        return Call(n.op, tuple(walk(a) for a in n.args))

    return walk(node)
