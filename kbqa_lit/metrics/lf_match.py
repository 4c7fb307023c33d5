"""Logical-form exact match: equality of S-expression graphs, not of strings.

Two S-expressions match when their canonical forms are equal. The canonical form
(:func:`canonical_form`) identifies

- ``AND`` arguments in any order and nesting: ``AND`` is commutative, associative and
  idempotent, so nested ``AND`` calls are flattened, duplicate arguments dropped and the rest
  sorted (``(AND A A)`` is ``A``);
- a relation and the reverse of its reverse property: ``(JOIN (R r) X)`` equals
  ``(JOIN r' X)`` when ``r'`` is the reverse property of ``r`` in the Freebase ontology
  (``reverse_properties``: lines ``rel<TAB>reverse``). This holds in every relation position
  (``JOIN``, the relation paths of ``ARGMAX``/``ARGMIN`` and of comparisons, ``TC``).

Everything else (entity ids, literals as written, classes, operator structure) must be equal.
Like GrailQA's graph-based EM, this compares the query graphs the expressions denote.

This module sits next to the torch-only metrics but needs the S-expression parser; it may import
:mod:`kbqa_lit.kb.lf.sexpr`, the ground floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kbqa_lit.errors import DataFormatError, SExprError
from kbqa_lit.kb.lf.sexpr import COMPARATORS, Atom, Call, SExpr, parse_sexpr

__all__ = ["canonical_form", "load_reverse_properties", "logical_form_em"]


def load_reverse_properties(path: str | Path) -> dict[str, str]:
    """Read the ontology's ``reverse_properties`` file into a symmetric mapping.

    Args:
        path: A text file of lines ``relation<TAB>reverse_relation``; blank lines and lines
            starting with ``#`` are skipped.

    Returns:
        ``{r: r', r': r}`` for every line (the first entry wins when a relation is listed twice).

    Raises:
        DataFormatError: Naming file and line when a line does not have two fields.
        FileNotFoundError: When the file does not exist.

    """
    path = Path(path)
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split("\t") if "\t" in text else text.split()
            if len(parts) != 2 or not all(parts):
                raise DataFormatError(path, lineno, "expected 'relation<TAB>reverse_relation'")
            a, b = parts[0].strip(), parts[1].strip()
            out.setdefault(a, b)
            out.setdefault(b, a)
    return out


class _ReverseTable:
    """Canonical direction of each relation under the reverse-property equivalence.

    Relations linked by reverse edges form components; ``(r, forward)`` is the same edge as
    ``(r', backward)``. Each component is written with its smallest relation name; a component
    with an odd cycle (a relation equivalent to its own reverse) is direction-free.
    """

    def __init__(self, reverse: Mapping[str, str]) -> None:
        neighbours: dict[str, set[str]] = {}
        for a, b in reverse.items():
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
        # name -> (representative, parity); parity None = direction-free component
        self.rep: dict[str, tuple[str, int | None]] = {}
        for start in sorted(neighbours):
            if start in self.rep:
                continue
            parity = {start: 0}
            stack, symmetric = [start], False
            while stack:
                node = stack.pop()
                for nxt in neighbours[node]:
                    want = 1 - parity[node]
                    if nxt not in parity:
                        parity[nxt] = want
                        stack.append(nxt)
                    elif parity[nxt] != want:
                        symmetric = True
            root = min(parity)
            for name, p in parity.items():
                self.rep[name] = (root, None if symmetric else p ^ parity[root])

    def relation(self, name: str, inverted: bool) -> str:
        """Canonical text of relation ``name`` traversed backwards when ``inverted``."""
        found = self.rep.get(name)
        if found is not None:
            name, parity = found
            if parity is None:
                return name
            inverted = inverted ^ bool(parity)
        return f"(R {name})" if inverted else name


_EMPTY = _ReverseTable({})
_TABLES: dict[int, tuple[Mapping[str, str], int, _ReverseTable]] = {}


def _table(reverse: Mapping[str, str] | None) -> _ReverseTable:
    """Build (once per mapping object) the reverse table; the mapping must not be mutated."""
    if not reverse:
        return _EMPTY
    key = id(reverse)
    cached = _TABLES.get(key)
    if cached is not None and cached[0] is reverse and cached[1] == len(reverse):
        return cached[2]
    table = _ReverseTable(reverse)
    if len(_TABLES) >= 8:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[key] = (reverse, len(reverse), table)  # holding the mapping keeps its id unique
    return table


def _rel(node: SExpr, table: _ReverseTable) -> str:
    """Canonicalise a relation position: ``r`` or ``(R r)``."""
    if isinstance(node, Call) and node.op == "R":
        return table.relation(node.args[0].text, True)  # type: ignore[union-attr]
    if isinstance(node, Atom):
        return table.relation(node.text, False)
    raise SExprError(f"expected a relation, got {node!r}")


def _relpath(node: SExpr, table: _ReverseTable) -> str:
    """Canonicalise a relation path: a relation or ``(JOIN rel relpath)``."""
    if isinstance(node, Call) and node.op == "JOIN":
        return f"(JOIN {_rel(node.args[0], table)} {_relpath(node.args[1], table)})"
    return _rel(node, table)


def _canon(node: SExpr, table: _ReverseTable) -> str:
    if isinstance(node, Atom):
        return node.text
    op, args = node.op, node.args
    if op == "AND":
        parts: set[str] = set()
        stack = list(args)
        while stack:
            arg = stack.pop()
            if isinstance(arg, Call) and arg.op == "AND":
                stack.extend(arg.args)
            else:
                parts.add(_canon(arg, table))
        if len(parts) == 1:
            return parts.pop()
        return "(AND " + " ".join(sorted(parts)) + ")"
    if op == "JOIN":
        return f"(JOIN {_rel(args[0], table)} {_canon(args[1], table)})"
    if op in ("ARGMAX", "ARGMIN"):
        return f"({op} {_canon(args[0], table)} {_relpath(args[1], table)})"
    if op in COMPARATORS:
        return f"({op} {_relpath(args[0], table)} {_canon(args[1], table)})"
    if op == "TC":
        return f"(TC {_canon(args[0], table)} {_rel(args[1], table)} {_canon(args[2], table)})"
    return "(" + " ".join([op, *(_canon(a, table) for a in args)]) + ")"


def canonical_form(expr: str | SExpr, reverse_properties: Mapping[str, str] | None = None) -> str:
    """Return the canonical text of an S-expression (equal for graph-equal expressions).

    Args:
        expr: S-expression text or a parsed tree.
        reverse_properties: Relation → reverse relation (either or both directions); ``None``
            compares relations as written.

    Returns:
        A single-spaced S-expression with ``AND`` flattened, deduplicated and sorted, and every
        relation written in the canonical direction of its reverse pair.

    Raises:
        SExprError: When ``expr`` is text that does not parse.

    """
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    return _canon(node, _table(reverse_properties))


def logical_form_em(pred: str, gold: str, reverse_properties: Mapping[str, str] | None = None) -> bool:
    """Whether a predicted logical form denotes the same query graph as the gold one.

    Args:
        pred: Predicted S-expression; anything that does not parse (or is not a string) is
            simply a mismatch.
        gold: Gold S-expression.
        reverse_properties: Relation → reverse relation, e.g. from
            :func:`load_reverse_properties`; ``None`` disables reverse matching.

    Returns:
        ``True`` when the canonical forms are equal.

    Raises:
        SExprError: When ``gold`` does not parse.

    """
    table = _table(reverse_properties)
    gold_form = _canon(parse_sexpr(gold), table)
    if not isinstance(pred, str):
        return False
    try:
        pred_node = parse_sexpr(pred)
    except SExprError:
        return False
    except RecursionError:  # pragma: no cover - parse_sexpr caps depth, this is a safety net
        return False
    return _canon(pred_node, table) == gold_form
