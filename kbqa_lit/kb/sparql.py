"""S-expression → SPARQL, as text that both Oxigraph and Virtuoso run.

The generated query is ``SELECT DISTINCT ?x WHERE { ... }`` (or ``SELECT (COUNT(DISTINCT ?x) AS
?count)`` for ``COUNT``) with full IRIs under ``http://rdf.freebase.com/ns/`` — Oxigraph rejects
prefixed names such as ``ns:people.person.nationality`` — and ``||`` rather than Virtuoso's
``OR``. Every atom was validated by :func:`kbqa_lit.kb.sexpr.parse_sexpr` (ids are
``[A-Za-z0-9_.]``, datatypes are checked IRIs) and quoted strings are re-escaped here, so no
input can inject SPARQL.

Semantics (one per dataset, ``semantics=``):

- ``exclude-topic`` (WebQSP, CWQ, GrailQA, synthetic): no entity that appears in the query is an
  answer.
- ``simple-path`` (MetaQA): all nodes of the query graph (entity constants and the variables of
  entity-valued hops, the answer included) are pairwise distinct, so no node repeats along a
  chain. This is also GrailQA's gold-SPARQL convention.
- ``plain`` (PathQuestion): nothing is excluded; the topic entity may be an answer.

Other conventions: literal answers are kept only when untagged or English; CVT hops are plain
intermediate variables; ``(R r)`` reverses a relation; ``ARGMAX``/``ARGMIN`` compare the value
reached through a relation or a ``JOIN`` chain of relations and keep ties unless
``keep_ties=False`` (then the top-level one is ``ORDER BY ... LIMIT 1``); comparatives and ``TC``
compare dates on their lexical prefix (``SUBSTR(STR(?v), 1, n)``) so that gYear, date and
dateTime values compare alike on both engines, while numbers compare numerically. ``TC`` keeps the
members whose start (the given relation, e.g. ``...from``) is not after the year and whose end
(``...to``, derived from the start relation's name) is missing or not before the year; ``NOW`` is
the year ``now_year`` (2015 by default, the last Freebase dump).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.iri import NS, TYPE_RELATION, XSD
from kbqa_lit.kb.sexpr import COMPARATORS, NUMBER_RE, Atom, Call, SExpr, parse_sexpr

SEMANTICS = ("exclude-topic", "simple-path", "plain")
ANSWER_VAR = "?x"
COUNT_VAR = "?count"
DATE_TYPES = {XSD + t for t in ("date", "dateTime", "gYear", "gYearMonth", "time")}
_CMP_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}
#: (start, end) relation-name endings used to find the end relation of a TC start relation.
TIME_PAIRS = (("from", "to"), ("start_date", "end_date"), ("from_date", "to_date"), ("start", "end"))
_YEAR_RE = re.compile(r"^-?\d{1,4}")


def _iri(local: str) -> str:
    return f"<{NS}{local}>"


def _escape_string(body: str) -> str:
    """Escape a Python string as the body of a SPARQL double-quoted literal."""
    out = body.replace("\\", "\\\\").replace('"', '\\"')
    return out.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _unescape_sexpr_string(quoted: str) -> str:
    r"""Return the value of a quoted S-expression string body (``\"`` and ``\\`` unescaped)."""
    return re.sub(r"\\(.)", r"\1", quoted)


@dataclass(frozen=True)
class _Literal:
    """A parsed literal atom: lexical form, optional language tag or datatype IRI."""

    lexical: str
    lang: str | None = None
    datatype: str | None = None
    bare_number: bool = False

    @property
    def is_date(self) -> bool:
        return self.datatype in DATE_TYPES

    @property
    def is_numeric(self) -> bool:
        if self.bare_number:
            return True
        if self.datatype is not None:
            return not self.is_date and NUMBER_RE.match(self.lexical) is not None
        return self.lang is None and NUMBER_RE.match(self.lexical) is not None

    def term(self) -> str:
        """The literal as a SPARQL term."""
        if self.bare_number:
            return self.lexical
        text = f'"{_escape_string(self.lexical)}"'
        if self.lang:
            return f"{text}@{self.lang}"
        if self.datatype:
            return f"{text}^^<{self.datatype}>"
        return text


def parse_literal(atom: Atom) -> _Literal:
    """Split a literal atom into lexical form, language tag and datatype.

    Raises:
        SExprError: When the atom is not a literal.
    """
    text = atom.text
    if atom.kind != "literal":
        raise SExprError(f"expected a literal, got {text!r}")
    if text.startswith('"'):
        end = text.rfind('"')
        lexical = _unescape_sexpr_string(text[1:end])
        suffix = text[end + 1 :]
        if suffix.startswith("@"):
            return _Literal(lexical, lang=suffix[1:])
        if suffix.startswith("^^"):
            return _Literal(lexical, datatype=suffix[2:])
        return _Literal(lexical)
    if "^^" in text:
        value, _, dtype = text.partition("^^")
        return _Literal(value, datatype=dtype)
    if text == "NOW":
        return _Literal("NOW")
    return _Literal(text, bare_number=True)


@dataclass
class _Query:
    """Triple patterns and filters being assembled for one (sub)query."""

    semantics: str
    counter: list[int]
    now_year: int
    patterns: list[str] = field(default_factory=list)
    node_terms: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)

    def fresh(self, prefix: str = "v") -> str:
        self.counter[0] += 1
        return f"?{prefix}{self.counter[0]}"

    def node(self, term: str) -> str:
        if term not in self.node_terms:
            self.node_terms.append(term)
        return term

    def constant(self, local: str) -> str:
        term = _iri(local)
        if term not in self.constants:
            self.constants.append(term)
        return self.node(term)

    def sub(self) -> _Query:
        return _Query(self.semantics, self.counter, self.now_year)

    def add(self, line: str) -> None:
        self.patterns.append(line)

    # ------------------------------------------------------------------ relations

    def edge(self, rel: SExpr, subj: str, obj: str) -> None:
        """Add ``subj rel obj``; ``(R r)`` swaps the direction."""
        if isinstance(rel, Call):  # (R r)
            assert rel.op == "R" and isinstance(rel.args[0], Atom)
            self.add(f"{obj} {_iri(rel.args[0].text)} {subj} .")
        else:
            assert isinstance(rel, Atom)
            self.add(f"{subj} {_iri(rel.text)} {obj} .")

    def path(self, relpath: SExpr, start: str) -> str:
        """Follow a relation or a JOIN chain of relations from ``start``; return the end variable."""
        if isinstance(relpath, Call) and relpath.op == "JOIN":
            mid = self.node(self.fresh())
            self.edge(relpath.args[0], start, mid)
            return self.path(relpath.args[1], mid)
        end = self.fresh("val")
        self.edge(relpath, start, end)
        return end

    # ------------------------------------------------------------------ sets

    def bind(self, node: SExpr, term: str) -> None:
        """Constrain ``term`` to range over the set that ``node`` denotes."""
        if isinstance(node, Atom):  # a class (checked by the parser)
            self.add(f"{term} {_iri(TYPE_RELATION)} {_iri(node.text)} .")
            return
        op, args = node.op, node.args
        if op == "AND":
            # class constraints last: a leading type.object.type pattern scans a whole class
            for a in sorted(args, key=lambda a: isinstance(a, Atom)):
                self.bind(a, term)
        elif op == "JOIN":
            self.join(args[0], args[1], term)
        elif op in ("ARGMAX", "ARGMIN"):
            self.argbest(node, term)
        elif op in COMPARATORS:
            value = self.path(args[0], term)
            assert isinstance(args[1], Atom)
            self.compare(value, op, parse_literal(args[1]))
        elif op == "TC":
            self.bind(args[0], term)
            assert isinstance(args[1], Atom) and isinstance(args[2], Atom)
            self.time_constraint(term, args[1].text, args[2])
        elif op == "COUNT":
            raise SExprError("COUNT is only supported at the top level of an S-expression")
        else:  # pragma: no cover - the parser rejects everything else
            raise SExprError(f"cannot convert operator {op!r}")

    def join(self, rel: SExpr, arg: SExpr, term: str) -> None:
        if isinstance(arg, Atom) and arg.kind == "entity":
            self.edge(rel, term, self.constant(arg.text))
            return
        if isinstance(arg, Atom) and arg.kind == "literal":
            lit = parse_literal(arg)
            if lit.lang is not None:
                self.edge(rel, term, lit.term())
                return
            value = self.fresh("lit")
            self.edge(rel, term, value)
            lexical = f'STR({value}) = "{_escape_string(lit.lexical)}"'
            if lit.datatype is not None and lit.is_numeric:
                # typed equality: Virtuoso's STR() of a float is "1.899999976158142", not "1.9"
                self.add(f"FILTER({value} = {lit.term()})")
            elif lit.bare_number:
                self.add(f"FILTER((isNumeric({value}) && {value} = {lit.term()}) || {lexical})")
            else:
                self.add(f"FILTER({lexical})")
            return
        other = self.node(self.fresh())
        self.edge(rel, term, other)
        self.bind(arg, other)

    def compare(self, value: str, op: str, lit: _Literal) -> None:
        symbol = _CMP_SYMBOL[op]
        # The type guards keep SPARQL's semantics on engines that order values across types
        # (Virtuoso: an IRI is ">= 1.5"; Oxigraph: a type error, so false).
        if lit.is_date or (lit.datatype is None and not lit.is_numeric):
            n = len(lit.lexical)
            text = _escape_string(lit.lexical)
            self.add(f'FILTER(isLiteral({value}) && SUBSTR(STR({value}), 1, {n}) {symbol} "{text}")')
        elif lit.bare_number or lit.datatype is not None:
            self.add(f"FILTER(isNumeric({value}) && {value} {symbol} {lit.term()})")
        else:  # a quoted number such as "1.8"
            self.add(f"FILTER(isNumeric({value}) && {value} {symbol} {lit.lexical})")

    def argbest(self, node: Call, term: str) -> None:
        """Members of the set with the largest (ARGMAX) or smallest (ARGMIN) value; ties kept."""
        self.bind(node.args[0], term)
        value = self.path(node.args[1], term)
        inner = self.sub()
        inner_term = inner.node(inner.fresh())
        inner.bind(node.args[0], inner_term)
        inner_value = inner.path(node.args[1], inner_term)
        best = self.fresh("best")
        agg = "MAX" if node.op == "ARGMAX" else "MIN"
        body = "\n    ".join(inner.patterns + inner.filters(inner_term))
        self.add(f"{{ SELECT ({agg}({inner_value}) AS {best}) WHERE {{\n    {body}\n  }} }}")
        self.add(f"FILTER({value} = {best})")

    def time_constraint(self, term: str, rel: str, time: Atom) -> None:
        year = self.year_of(time)
        start, end = _time_relations(rel)
        if start is None and end is None:
            v = self.fresh("t")
            self.add(f'FILTER(EXISTS {{ {term} {_iri(rel)} {v} . FILTER(SUBSTR(STR({v}), 1, 4) = "{year}") }})')
            return
        for relation, symbol in ((start, "<="), (end, ">=")):
            if relation is None:
                continue
            a, b = self.fresh("t"), self.fresh("t")
            self.add(
                f"FILTER(NOT EXISTS {{ {term} {_iri(relation)} {a} }} || "
                f"EXISTS {{ {term} {_iri(relation)} {b} . "
                f'FILTER(SUBSTR(STR({b}), 1, 4) {symbol} "{year}") }})'
            )

    def year_of(self, time: Atom) -> str:
        lit = parse_literal(time)
        if lit.lexical == "NOW" and lit.datatype is None and lit.lang is None:
            return f"{self.now_year:04d}"
        m = _YEAR_RE.match(lit.lexical)
        if not m or lit.lang is not None:
            raise SExprError(f"TC needs a year, a date or NOW, got {time.text!r}")
        return m.group(0).zfill(4)

    # ------------------------------------------------------------------ answer filters

    def filters(self, answer: str) -> list[str]:
        """The semantics filters over the query's nodes, for the answer variable ``answer``."""
        if self.semantics == "plain":
            return []
        if self.semantics == "exclude-topic":
            pairs = [(answer, c) for c in self.constants]
        else:  # simple-path: every pair of nodes distinct
            nodes = [answer] + [t for t in self.node_terms if t != answer]
            pairs = [
                (a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :] if a.startswith("?") or b.startswith("?")
            ]
        if not pairs:
            return []
        return ["FILTER(" + " && ".join(f"{a} != {b}" for a, b in pairs) + ")"]


def _time_relations(rel: str) -> tuple[str | None, str | None]:
    """Return the (start, end) relations of a TC relation, by the naming of its last segment."""
    head, _, last = rel.rpartition(".")
    for start, end in TIME_PAIRS:
        if last == start:
            return rel, f"{head}.{end}"
        if last == end:
            return f"{head}.{start}", rel
    return None, None


def sexpr_to_sparql(
    expr: str | SExpr,
    semantics: str = "exclude-topic",
    keep_ties: bool = True,
    now_year: int = 2015,
) -> str:
    """Convert an S-expression to SPARQL text that Oxigraph and Virtuoso both run.

    Args:
        expr: S-expression text or a parsed tree.
        semantics: ``"exclude-topic"``, ``"simple-path"`` or ``"plain"`` (see the module docstring).
        keep_ties: Whether a top-level ARGMAX/ARGMIN keeps every member with the best value
            (GrailQA's convention) or only one (``ORDER BY ... LIMIT 1``).
        now_year: The year that ``NOW`` stands for in time constraints.

    Returns:
        The SPARQL query; its first projected variable holds the answers.

    Raises:
        SExprError: For a malformed S-expression, an unknown semantics, or a construct that
            cannot be converted (e.g. a nested COUNT).
    """
    if semantics not in SEMANTICS:
        raise SExprError(f"unknown answer semantics {semantics!r}; expected one of {', '.join(SEMANTICS)}")
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    query = _Query(semantics, [0], now_year)
    counting = isinstance(node, Call) and node.op == "COUNT"
    if counting:
        assert isinstance(node, Call)
        node = node.args[0]
    answer = query.node(ANSWER_VAR)
    order = ""
    if not keep_ties and not counting and isinstance(node, Call) and node.op in ("ARGMAX", "ARGMIN"):
        query.bind(node.args[0], answer)
        value = query.path(node.args[1], answer)
        direction = "DESC" if node.op == "ARGMAX" else "ASC"
        order = f"\nORDER BY {direction}({value})\nLIMIT 1"
    else:
        query.bind(node, answer)
    lines = list(query.patterns) + query.filters(answer)
    if counting:
        head = f"SELECT (COUNT(DISTINCT {answer}) AS {COUNT_VAR})"
    else:
        head = f"SELECT DISTINCT {answer}"
        lines.append(f"FILTER(!isLiteral({answer}) || LANG({answer}) = '' || LANGMATCHES(LANG({answer}), 'en'))")
    body = "\n  ".join(lines)
    return f"{head} WHERE {{\n  {body}\n}}{order}"
