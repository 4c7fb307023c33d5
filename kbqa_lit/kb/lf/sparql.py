"""S-expression → SPARQL, as text that both Oxigraph and Virtuoso run.

The generated query is ``SELECT DISTINCT ?x WHERE { ... }`` (or ``SELECT (COUNT(DISTINCT ?x) AS
?count)`` for ``COUNT``) with full IRIs under ``http://rdf.freebase.com/ns/`` — Oxigraph rejects
prefixed names such as ``ns:people.person.nationality`` — and ``||`` rather than Virtuoso's
``OR``. Every atom was validated by :func:`kbqa_lit.kb.lf.sexpr.parse_sexpr` (ids are
``[A-Za-z0-9_.]``, datatypes are checked IRIs) and quoted strings are re-escaped here, so no
input can inject SPARQL.

Semantics (one per dataset, ``semantics=``; names and dataset aliases in
:mod:`kbqa_lit.kb.lf.semantics`): ``exclude-topic`` (WebQSP, synthetic), ``exclude-source`` (CWQ),
``distinct-nodes`` (GrailQA), ``simple-path`` (MetaQA), ``plain`` (PathQuestion).

Other conventions: literal answers are kept only when untagged or English; CVT hops are plain
intermediate variables; ``(R r)`` reverses a relation; a class as the object of ``JOIN`` is the
class node itself (``(JOIN type.object.type C)``: whose type is C), elsewhere a class stands for
its instances; ``ARGMAX``/``ARGMIN`` sort by the value reached through a relation or a ``JOIN``
chain, cast to its type (the ontology range of the last relation, else the literal's datatype:
:func:`kbqa_lit.kb.lf.semantics.order_key`), and keep one member (``ties="first"``: the first
superlative becomes the query's ``ORDER BY ... LIMIT 1``, others a sub-select with ``LIMIT 1``)
or every tied member (``ties="all"``: a ``MAX``/``MIN`` sub-query); comparatives and ``TC``
compare dates on their lexical prefix (``SUBSTR(STR(?v), 1, n)``) so that gYear, date and
dateTime values compare alike on both engines, while numbers compare numerically. ``TC`` keeps the
members whose start (the given relation, e.g. ``...from``) is not after the year and whose end
(``...to``, derived from the start relation's name) is missing or not before the year; ``NOW`` is
the year ``now_year`` (2015 by default, the last Freebase dump).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.iri import NS, TYPE_RELATION, XSD
from kbqa_lit.kb.lf.semantics import (
    FLOAT_RANGES,
    INTEGER_RANGES,
    SEMANTICS,
    SEMANTICS_NAMES,
    date_text,
    full_date,
    number_test,
    numeric_string,
    order_key,
    resolve_semantics,
    resolve_ties,
)
from kbqa_lit.kb.lf.sexpr import COMPARATORS, Atom, Call, SExpr, parse_sexpr, to_sexpr_string
from kbqa_lit.kb.lf.terms import LiteralAtom, parse_literal, sparql_string

if TYPE_CHECKING:
    from kbqa_lit.kb.lf.ontology import Ontology

__all__ = ["SEMANTICS", "SEMANTICS_NAMES", "parse_literal", "sexpr_to_sparql"]
ANSWER_VAR = "?x"
COUNT_VAR = "?count"
_CMP_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}
#: (start, end) relation-name endings used to find the end relation of a TC start relation.
TIME_PAIRS = (("from", "to"), ("start_date", "end_date"), ("from_date", "to_date"), ("start", "end"))
_YEAR_RE = re.compile(r"^-?\d{1,4}")
NOW_YEAR = 2015
#: The day WebQSP's and CWQ's gold queries put for NOW.
NOW_DATE = "2015-08-10"


def _iri(local: str) -> str:
    return f"<{NS}{local}>"


@dataclass
class _Query:
    """Triple patterns and filters being assembled for one (sub)query."""

    semantics: str
    counter: list[int]
    now_year: int
    ties: str = "all"
    ontology: Ontology | None = None
    now_date: str | None = None
    root: bool = False
    patterns: list[str] = field(default_factory=list)
    node_terms: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    #: term -> [(node it is reached from by an (R r) hop, that node's class)], for exclude-source
    preds: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    #: the lifted superlative of ties="first": (ORDER BY direction, sort key)
    order: tuple[str, str] | None = None

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
        return _Query(self.semantics, self.counter, self.now_year, self.ties, self.ontology, self.now_date)

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
        if self.semantics == "distinct-nodes":
            self.node(end)
        self.edge(relpath, start, end)
        return end

    def value_range(self, relpath: SExpr) -> str | None:
        """The ontology range of the last relation of a path (``None`` when unknown or reversed)."""
        while isinstance(relpath, Call) and relpath.op == "JOIN":
            relpath = relpath.args[1]
        if self.ontology is None or not isinstance(relpath, Atom):
            return None
        return self.ontology.range(relpath.text)

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
            self.compare(value, op, parse_literal(args[1]), self.value_range(args[0]))
        elif op == "TC":
            self.bind(args[0], term)
            if not isinstance(args[1], Atom):  # the parser allows a `rel`; a time constraint needs a forward one
                raise SExprError(f"TC's relation must be a plain relation, got {to_sexpr_string(args[1])!r}")
            assert isinstance(args[2], Atom)  # the parser checks the literal
            self.time_constraint(term, args[1].text, args[2])
        elif op == "COUNT":
            raise SExprError("COUNT is only supported at the top level of an S-expression")
        else:  # pragma: no cover - the parser rejects everything else
            raise SExprError(f"cannot convert operator {op!r}")

    def join(self, rel: SExpr, arg: SExpr, term: str) -> None:
        reverse = isinstance(rel, Call)
        if isinstance(arg, Atom) and arg.kind == "schema":  # a class as object: the class node
            self.edge(rel, term, _iri(arg.text))
            return
        if isinstance(arg, Atom) and arg.kind == "entity":
            const = self.constant(arg.text)
            self.edge(rel, term, const)
            if reverse:
                self.preds.setdefault(term, []).append((const, None))
            return
        if isinstance(arg, Atom) and arg.kind == "literal":
            lit = parse_literal(arg)
            if lit.lang is not None:
                self.edge(rel, term, lit.term())
                return
            value = self.fresh("lit")
            self.edge(rel, term, value)
            lexical = f'STR({value}) = "{sparql_string(lit.lexical)}"'
            if lit.datatype in (XSD + "date", XSD + "dateTime"):
                # the same day whatever the form: GrailQA's dates carry time zones ("1966-01-12-08:00")
                self.add(f'FILTER(isLiteral({value}) && STRSTARTS(STR({value}), "{sparql_string(lit.lexical)}"))')
            elif lit.datatype is not None and lit.is_numeric:
                # typed equality: Virtuoso's STR() of a float is "1.899999976158142", not "1.9"
                self.add(f"FILTER({value} = {lit.term()})")
            elif lit.bare_number:
                self.add(f"FILTER((isNumeric({value}) && {value} = {lit.term()}) || {lexical})")
            else:
                self.add(f"FILTER({lexical})")
            return
        other = self.node(self.fresh())
        self.edge(rel, term, other)
        if reverse:
            assert isinstance(rel, Call) and isinstance(rel.args[0], Atom)
            domain = self.ontology.domain(rel.args[0].text) if self.ontology else None
            self.preds.setdefault(term, []).append((other, domain))
        self.bind(arg, other)

    def compare(self, value: str, op: str, lit: LiteralAtom, value_range: str | None = None) -> None:
        symbol = _CMP_SYMBOL[op]
        if value_range in INTEGER_RANGES + FLOAT_RANGES and (lit.bare_number or lit.is_numeric):
            # a number-valued relation: compare the value cast to its type, as the gold queries do
            number = lit.term() if lit.bare_number or lit.datatype else lit.lexical
            cast = f"<{XSD}integer>" if value_range in INTEGER_RANGES else f"<{XSD}float>"
            self.add(f"FILTER({number_test(value, cast, symbol, number)})")
            return
        # The type guards keep SPARQL's semantics on engines that order values across types
        # (Virtuoso: an IRI is ">= 1.5"; Oxigraph: a type error, so false).
        if lit.datatype in (XSD + "date", XSD + "dateTime"):
            # a day, as the gold queries compare it ("1552"^^xsd:dateTime is 1552-01-01)
            day = sparql_string(full_date(lit.lexical))
            self.add(f'FILTER(isLiteral({value}) && {date_text(value)} {symbol} "{day}")')
        elif lit.is_date or (lit.datatype is None and not lit.is_numeric):
            n = len(lit.lexical)
            text = sparql_string(lit.lexical)
            self.add(f'FILTER(isLiteral({value}) && SUBSTR(STR({value}), 1, {n}) {symbol} "{text}")')
        else:  # a number; a quoted one such as "1.8" compares as the number
            number = lit.term() if lit.bare_number or lit.datatype is not None else lit.lexical
            as_number = f"IF({numeric_string(value)}, <{XSD}double>(STR({value})) {symbol} {number}, false)"
            self.add(f"FILTER((isNumeric({value}) && {value} {symbol} {number}) || {as_number})")

    def argbest(self, node: Call, term: str) -> None:
        """Members of the set with the largest (ARGMAX) or smallest (ARGMIN) value, cast to its type.

        ``ties="first"``: the root query's first superlative becomes its ``ORDER BY ... LIMIT 1``
        (as the WebQSP/CWQ gold queries do), any other one a sub-select with ``LIMIT 1``.
        ``ties="all"``: every member whose value equals the ``MAX``/``MIN`` of the set.
        """
        direction = "DESC" if node.op == "ARGMAX" else "ASC"
        value_range = self.value_range(node.args[1])
        if self.ties == "first" and self.root and self.order is None:
            self.order = ("", "")  # taken: a superlative inside this one becomes a sub-select
            self.bind(node.args[0], term)
            value = self.path(node.args[1], term)
            self.order = (direction, order_key(value, value_range))
            return
        inner = self.sub()
        inner_term = inner.node(inner.fresh())
        inner.bind(node.args[0], inner_term)
        inner_value = inner.path(node.args[1], inner_term)
        body = "\n    ".join(inner.patterns + inner.filters(inner_term))
        if self.ties == "first":
            self.bind(node.args[0], term)
            key = order_key(inner_value, value_range)
            self.add(
                f"{{ SELECT ({inner_term} AS {term}) WHERE {{\n    {body}\n  }} ORDER BY {direction}({key}) LIMIT 1 }}"
            )
            return
        self.bind(node.args[0], term)
        value = self.path(node.args[1], term)
        best = self.fresh("best")
        agg = "MAX" if node.op == "ARGMAX" else "MIN"
        self.add(f"{{ SELECT ({agg}({order_key(inner_value, value_range)}) AS {best}) WHERE {{\n    {body}\n  }} }}")
        self.add(f"FILTER({order_key(value, value_range)} = {best})")

    def time_constraint(self, term: str, rel: str, time: Atom) -> None:
        year = self.year_of(time)
        lit = parse_literal(time)
        if lit.lexical == "NOW" and lit.datatype is None and self.now_date:
            self.time_window(term, rel, self.now_date)
            return
        start, end = _time_relations(rel)
        if start is None and end is None:
            v = self.fresh("t")
            self.add(f'FILTER(EXISTS {{ {term} {_iri(rel)} {v} . FILTER(SUBSTR(STR({v}), 1, 4) = "{year}") }})')
            return
        self.bounds(term, start, end, lambda v: f"SUBSTR(STR({v}), 1, 4)", year)

    def time_window(self, term: str, rel: str, day: str) -> None:
        """TC at one day (``NOW``): started on or before it, ended on or after it (or open)."""
        start, end = _time_relations(rel)
        if start is None and end is None:
            start = rel
        self.bounds(term, start, end, date_text, day)

    def bounds(self, term: str, start: str | None, end: str | None, text: Callable[[str], str], value: str) -> None:
        """Filters: ``term`` started by ``value`` and ended at or after it, or has no such date.

        Args:
            term: The variable or IRI whose dates are checked.
            start: The relation to its start date (``None``: no start filter).
            end: The relation to its end date (``None``: no end filter).
            text: The comparable text of a date variable (its year, its day).
            value: The year or day compared with.

        """
        for relation, symbol in ((start, "<="), (end, ">=")):
            if relation is None:
                continue
            a, b = self.fresh("t"), self.fresh("t")
            self.add(
                f"FILTER(NOT EXISTS {{ {term} {_iri(relation)} {a} }} || "
                f"EXISTS {{ {term} {_iri(relation)} {b} . "
                f'FILTER({text(b)} {symbol} "{sparql_string(value)}") }})'
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
        elif self.semantics == "exclude-source":
            pairs = [(answer, c) for c in self.sources(answer)]
        else:  # simple-path: every pair of nodes distinct
            nodes = [answer] + [t for t in self.node_terms if t != answer]
            pairs = [
                (a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :] if a.startswith("?") or b.startswith("?")
            ]
        if not pairs:
            return []
        return ["FILTER(" + " && ".join(f"{a} != {b}" for a, b in pairs) + ")"]

    def passes_through(self, cls: str | None) -> bool:
        """Whether exclude-source looks past a node of class ``cls`` on the answer's ``(R r)`` chain.

        With an ontology only CVT nodes are looked past; without one every intermediate node is.
        """
        if self.ontology is None:
            return True
        return cls is not None and self.ontology.is_cvt(cls)

    def sources(self, answer: str) -> list[str]:
        """The nodes the answer is reached from (exclude-source): the far ends of its ``(R r)`` hops.

        With an ontology the walk stops at the first node that is not a CVT; without one it goes to
        the end of the chain (on the CWQ gold S-expressions the two agree). With no ``(R r)`` hop
        into the answer, every entity of the query counts.
        """
        found: list[str] = []
        seen = {answer}
        stack = list(reversed(self.preds.get(answer, [])))
        while stack:
            node, cls = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node.startswith("?") and self.preds.get(node) and self.passes_through(cls):
                stack.extend(reversed(self.preds[node]))
            elif node not in found:
                found.append(node)
        return found or list(self.constants)


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
    keep_ties: bool | None = None,
    now_year: int = NOW_YEAR,
    ties: str | None = None,
    ontology: Ontology | None = None,
    now_date: str | None = None,
) -> str:
    """Convert an S-expression to SPARQL text that Oxigraph and Virtuoso both run.

    Args:
        expr: S-expression text or a parsed tree.
        semantics: A semantics name or dataset alias (:data:`SEMANTICS_NAMES`; see
            :mod:`kbqa_lit.kb.lf.semantics`).
        keep_ties: Deprecated spelling of ``ties``: ``True`` is ``"all"``, ``False`` ``"first"``.
        now_year: The year that ``NOW`` stands for in time constraints (year granularity when
            not 2015 and no ``now_date`` is given).
        now_date: The day ``NOW`` stands for (``YYYY-MM-DD``); by default 2015-08-10, the day
            the WebQSP/CWQ gold queries use.
        ties: ``"first"`` (one member, ``ORDER BY ... LIMIT 1``) or ``"all"`` (every tied member)
            for ARGMAX/ARGMIN; ``None`` takes the semantics' default (``first`` for
            ``exclude-topic`` and ``exclude-source``, ``all`` otherwise).
        ontology: The Freebase schema; gives ARGMAX/ARGMIN's cast (the value relation's range)
            and, for ``exclude-source``, which hops pass through CVT nodes. Without it the
            literal's datatype decides the cast and no node counts as a CVT.

    Returns:
        The SPARQL query; its first projected variable holds the answers.

    Raises:
        SExprError: For a malformed S-expression, an unknown semantics or ties rule, or a
            construct that cannot be converted (e.g. a nested COUNT).
    """
    semantics = resolve_semantics(semantics)
    if ties is None and keep_ties is not None:
        ties = "all" if keep_ties else "first"
    tie_rule = resolve_ties(ties, semantics)
    node = parse_sexpr(expr) if isinstance(expr, str) else expr
    counting = isinstance(node, Call) and node.op == "COUNT"
    if now_date is None and now_year == NOW_YEAR:
        now_date = NOW_DATE
    query = _Query(semantics, [0], now_year, tie_rule, ontology, now_date, root=not counting)
    if counting:
        assert isinstance(node, Call)
        node = node.args[0]
    answer = query.node(ANSWER_VAR)
    query.bind(node, answer)
    lines = list(query.patterns) + query.filters(answer)
    order = ""
    if query.order is not None:
        order = f"\nORDER BY {query.order[0]}({query.order[1]})\nLIMIT 1"
    if counting:
        head = f"SELECT (COUNT(DISTINCT {answer}) AS {COUNT_VAR})"
    else:
        head = f"SELECT DISTINCT {answer}"
        lines.append(f"FILTER(!isLiteral({answer}) || LANG({answer}) = '' || LANGMATCHES(LANG({answer}), 'en'))")
    body = "\n  ".join(lines)
    return f"{head} WHERE {{\n  {body}\n}}{order}"
