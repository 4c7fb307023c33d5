"""Do converted S-expressions answer like a dataset's gold SPARQL? Small random KBs decide.

For one gold pair (S-expression, gold SPARQL) and a seed, :func:`random_kb` builds a tiny KB from
the gold query's triple patterns: complete instances of the pattern, near misses (a triple
dropped or its object swapped for another node), reversed edges, variables bound to the query's
own constants or to each other's nodes (so that answer-exclusion rules matter), and literals
around each compared constant (ties and numeric strings included). :func:`agree` then runs the
gold query, normalised to standard SPARQL by :func:`normalise_gold` (full IRIs, ``||``,
declared ``xsd:``, ``xsd:datetime`` read as ``xsd:dateTime``), and the project's SPARQL on
Oxigraph and compares the answers. When the gold query keeps one member of a superlative
(``ORDER BY ... LIMIT 1``) and several members tie, any one of the tied members agrees.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from kbqa_lit.kb.lf.iri import NS, XSD
from kbqa_lit.kb.lf.ontology import Ontology

_TERM = r'(\?\w+|<[^>\s]+>|"(?:[^"\\]|\\.)*"(?:\^\^<[^>\s]+>|@[\w-]+)?)'
_TRIPLE_RE = re.compile(rf"{_TERM}\s+(<[^>\s]+>)\s+{_TERM}\s*[.;}}]")
_VALUES_RE = re.compile(r"VALUES\s+(\?\w+)\s*\{\s*(<[^>\s]+>|\"[^\"]*\"\S*)\s*\}")
_LIT_RE = re.compile(r'"([^"\\]*)"(?:\^\^<([^>\s]+)>|\^\^xsd:(\w+)|@[\w-]+)?')
_ORDER_RE = re.compile(r"ORDER\s+BY\s+(DESC|ASC)?\s*(.+?)\s+LIMIT\s+1\s*$", re.S | re.I)
TYPE_IRI = f"<{NS}type.object.type>"
_CAST_RANGE = {"integer": "type.int", "float": "type.float", "dateTime": "type.datetime"}


def _full_datetime(m: re.Match[str]) -> str:
    parts = m.group(1).split("-") if not m.group(1).startswith("-") else m.group(1).split("-")[1:]
    year, month, day = (parts + ["01", "01"])[:3]
    return f'"{year}-{month}-{day}T00:00:00"^^xsd:dateTime'


def normalise_gold(sparql: str) -> str:
    """Rewrite a WebQSP/CWQ/GrailQA gold query into SPARQL 1.1 that Oxigraph accepts.

    Prefixed Freebase names become full IRIs (Oxigraph rejects ``ns:a.b.c``), Virtuoso's ``OR``
    becomes ``||``, ``xsd:`` is declared and ``xsd:datetime`` (not an XSD type; the gold queries'
    spelling) becomes ``xsd:dateTime``, a date typed as dateTime (``"2009-12-31"^^xsd:dateTime``)
    gets its time; comments and ``#MANUAL SPARQL`` lines are dropped.
    """
    lines = [ln for ln in sparql.splitlines() if not ln.lstrip().startswith("#")]
    text = "\n".join(re.sub(r"\s#\s.*$", "", ln) for ln in lines)
    text = re.sub(r"PREFIX\s+\w*:\s*<[^>]*>", "", text)
    text = re.sub(r"(?<![\w<>/#])(?:ns)?:([A-Za-z_][\w-]*(?:\.[\w-]+)+)", lambda m: f"<{NS}{m.group(1)}>", text)
    text = text.replace("xsd:datetime", "xsd:dateTime")
    # "2009-12-31"^^xsd:dateTime is ill-typed (a date, no time): Virtuoso reads it, Oxigraph does not
    text = re.sub(r'"(-?\d{4}(?:-\d\d){0,2})"\^\^xsd:dateTime', _full_datetime, text)
    text = re.sub(r"\^\^xsd:(\w+)", lambda m: f"^^<{XSD}{m.group(1)}>", text)
    text = re.sub(r"\bOR\b", "||", text)
    return f"PREFIX xsd: <{XSD}>\n{text.strip()}"


@dataclass
class GoldPattern:
    """What a KB generator needs from a normalised gold query."""

    triples: list[tuple[str, str, str]]
    constants: list[str]
    compared: list[tuple[str, str | None]]
    casts_numbers: bool = False
    cast_ranges: dict[str, str] = field(default_factory=dict)


def gold_pattern(sparql: str) -> GoldPattern:
    """Triple patterns (``VALUES`` constants substituted), entity constants and compared literals."""
    values = {v: c for v, c in _VALUES_RE.findall(sparql)}
    triples = []
    for s, p, o in _TRIPLE_RE.findall(sparql):
        triples.append((values.get(s, s), p, values.get(o, o)))
    constants = sorted(
        {t for s, p, o in triples for t in (s, o) if t.startswith("<") and p != TYPE_IRI}
        | {c for c in values.values() if c.startswith("<")}
    )
    compared = [(lex, dt or (XSD + short if short else None)) for lex, dt, short in _LIT_RE.findall(sparql)]
    compared = [(lex, dt) for lex, dt in compared if lex not in ("", "en")]
    casts = "xsd:integer(" in sparql or "xsd:float(" in sparql
    # a variable the gold query casts has that type, whatever the ontology knows of its relation
    cast_ranges = {v: _CAST_RANGE[t] for t, v in re.findall(r"xsd:(integer|float|dateTime)\((\?\w+)\)", sparql)}
    return GoldPattern(triples, constants, compared, casts, cast_ranges)


def _number_near(lex: str, rng: random.Random) -> str:
    try:
        base = float(lex)
    except ValueError:
        base = rng.randint(1, 5)
    return str(int(base) + rng.choice((-1, 0, 0, 1)))


class _ValueMaker:
    """Literals for a value variable, by the range of the relation that reaches it."""

    def __init__(self, rng: random.Random, compared: list[tuple[str, str | None]], numeric_strings: bool) -> None:
        self.rng = rng
        self.numeric_strings = numeric_strings
        years = [int(m.group(0)) for lex, _ in compared for m in [re.match(r"^\d{4}", lex)] if m]
        self.years = years or [2000]
        self.numbers = [lex for lex, dt in compared if re.match(r"^-?\d+(\.\d+)?$", lex)] or ["3"]
        self.strings = [lex for lex, dt in compared if dt is None and not re.match(r"^-?[\d.]+$", lex)]
        self.date_type: dict[str, str] = {}
        date_types = [dt[len(XSD) :] for _, dt in compared if dt in (XSD + "date", XSD + "dateTime")]
        self.compared_date_type = date_types[0] if date_types else None

    def value(self, rel: str, rng_cls: str | None) -> str:
        r = self.rng
        if rng_cls == "type.datetime":
            kind = self.date_type.setdefault(rel, self.compared_date_type or r.choice(("date", "dateTime")))
            year = r.choice(self.years) + r.choice((-1, 0, 0, 1))
            day = f"{year:04d}-{r.choice(('01-01', '06-15', '12-31'))}"
            return f'"{day}"^^<{XSD}date>' if kind == "date" else f'"{day}T00:00:00"^^<{XSD}dateTime>'
        if rng_cls in ("type.int", "type.enumeration"):
            n = _number_near(r.choice(self.numbers), r)
            return f'"{n}"' if self.numeric_strings and r.random() < 0.15 else f'"{n}"^^<{XSD}integer>'
        if rng_cls == "type.float":
            n = _number_near(r.choice(self.numbers), r) + r.choice(("", ".5", ".25"))
            return f'"{n}"^^<{XSD}float>'
        if self.strings and r.random() < 0.7:
            s = r.choice(self.strings)
            return f'"{r.choice((s, s.lower(), s + "x"))}"' + r.choice(("", "@en"))
        return f'"v{r.randint(1, 3)}"@en'


def random_kb(pattern: GoldPattern, seed: int, ontology: Ontology | None, instances: int = 4) -> str:
    """N-Triples of a small random KB built from a gold query's triple patterns.

    Numeric strings (``"12"`` for an integer) appear only where the gold query casts numbers
    (``xsd:integer(?num)``): a query that compares uncast values states that they are typed.
    """
    rng = random.Random(seed)
    pool = list(pattern.constants) + [f"<{NS}m.n{i}>" for i in range(4)]
    values = _ValueMaker(rng, pattern.compared, pattern.casts_numbers)
    variables = sorted({t for s, _, o in pattern.triples for t in (s, o) if t.startswith("?")})
    literal_vars = {}
    for _s, p, o in pattern.triples:
        rel = p[len(NS) + 1 : -1]
        rng_cls = ontology.range(rel) if ontology else None
        rng_cls = rng_cls or pattern.cast_ranges.get(o)
        if o.startswith("?") and (rng_cls or "").startswith("type.") and p != TYPE_IRI:
            literal_vars[o] = (rel, rng_cls)
    types: dict[str, list[str]] = {}
    for s, p, o in pattern.triples:
        if p == TYPE_IRI and s.startswith("?"):
            types.setdefault(s, []).append(o)
    lines: set[str] = set()
    fresh = iter(range(10**6))
    for k in range(instances):
        bind: dict[str, str] = {}
        for v in variables:
            if v in literal_vars:
                bind[v] = values.value(*literal_vars[v])
                continue
            roll = rng.random()
            if roll < 0.55 or k == 0:
                bind[v] = f"<{NS}m.i{next(fresh)}>"
            elif roll < 0.8:
                bind[v] = rng.choice(pool)
            else:
                others = [bind[u] for u in bind if u not in literal_vars]
                bind[v] = rng.choice(others or pool)
        for s, p, o in pattern.triples:
            s2, o2 = bind.get(s, s), bind.get(o, o)
            if s2.startswith('"'):
                continue
            if k and p != TYPE_IRI:
                roll = rng.random()
                if roll < 0.1:
                    continue
                # near misses stay schema-consistent: a node in a relation's range has its type
                if roll < 0.18 and o2.startswith("<"):
                    o2 = rng.choice(pool)
                    lines.update(f"{o2} {TYPE_IRI} {c} ." for c in types.get(o, ()))
                elif roll < 0.25 and o2.startswith("<"):
                    lines.add(f"{o2} {p} {s2} .")
                    lines.update(f"{o2} {TYPE_IRI} {c} ." for c in types.get(s, ()))
                    lines.update(f"{s2} {TYPE_IRI} {c} ." for c in types.get(o, ()))
            lines.add(f"{s2} {p} {o2} .")
    return "\n".join(sorted(lines)) + "\n"


def _answers(store: ox.Store, sparql: str) -> set[str] | None:
    try:
        result = store.query(sparql)
    except (SyntaxError, OSError, ValueError):
        return None
    out: set[str] = set()
    for solution in result:  # type: ignore[union-attr]
        term = solution[0]
        if term is None:
            continue
        value = term.value
        if isinstance(term, ox.Literal) and term.datatype.value.startswith(XSD) and value.replace(".", "").isdigit():
            value = str(float(value))
        out.add(value)
    return out


def _tied_best(store: ox.Store, gold: str) -> set[str] | None:
    """Every answer whose sort key equals the best one, for a gold ``ORDER BY ... LIMIT 1`` query."""
    m = _ORDER_RE.search(gold)
    if not m:
        return None
    head, rest = gold[: m.start()], m.group(2)
    key = rest[1:-1] if m.group(1) and rest.startswith("(") and rest.endswith(")") else rest
    where = head.index("{", head.upper().index("WHERE"))
    body = head[where + 1 : head.rindex("}")]
    agg = "MAX" if (m.group(1) or "").upper() == "DESC" else "MIN"
    prefix = head[: head.upper().index("SELECT")]
    query = (
        f"{prefix}SELECT DISTINCT ?x WHERE {{ {body}\n"
        f"{{ SELECT ({agg}({key}) AS ?kbqa_best) WHERE {{ {body} }} }}\nFILTER({key} = ?kbqa_best) }}"
    )
    return _answers(store, query)


def agree(nt: str, gold: str, ours: str) -> tuple[bool, set[str] | None, set[str] | None]:
    """Run the normalised gold query and the project's query on a KB; return (agree, gold, ours)."""
    store = ox.Store()
    store.load(nt.encode(), ox.RdfFormat.N_TRIPLES)
    gold_ans, our_ans = _answers(store, gold), _answers(store, ours)
    if gold_ans == our_ans:
        return True, gold_ans, our_ans
    if gold_ans is not None and our_ans is not None and len(gold_ans) == 1 and len(our_ans) == 1:
        tied = _tied_best(store, gold)
        if tied and our_ans <= tied:
            return True, gold_ans, our_ans
    return False, gold_ans, our_ans


def agreement(
    pairs: list[tuple[str, str, str]],
    convert: Callable[[str], str],
    seeds: int,
    ontology: Ontology | None,
) -> tuple[float, list[tuple[str, str, int]]]:
    """Agreement rate over (qid, S-expression, gold SPARQL) pairs and seeds, and the misses.

    A pair agrees when every seed's KB gives the same answers; a failing conversion disagrees.
    """
    misses: list[tuple[str, str, int]] = []
    for qid, sexpr, gold_raw in pairs:
        gold = normalise_gold(gold_raw)
        pattern = gold_pattern(gold)
        try:
            ours = convert(sexpr)
        except ValueError:
            misses.append((qid, "conversion failed", -1))
            continue
        for seed in range(seeds):
            ok, _, _ = agree(random_kb(pattern, seed, ontology), gold, ours)
            if not ok:
                misses.append((qid, sexpr, seed))
                break
    return 1 - len(misses) / max(1, len(pairs)), misses


def load_gold_pairs(data_dir: str | Path) -> dict[str, list[tuple[str, str, str]]]:
    """(qid, S-expression, gold SPARQL) of GrailQA dev (questions with ``sparql_query``) and CWQ.

    Args:
        data_dir: The folder holding ``grailqa/grailqa_dev.jsonl`` and ``cwq/cwq_test_part.json``.

    Returns:
        ``{"grailqa": [...], "cwq": [...]}``; CWQ questions without an S-expression are left out.
    """
    root = Path(data_dir)
    grail = []
    with (root / "grailqa" / "grailqa_dev.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if r.get("sparql_query") and r.get("s_expression"):
                grail.append((str(r["qid"]), r["s_expression"], r["sparql_query"]))
    cwq = [
        (str(r["ID"]), r["SExpr"], r["sparql"])
        for r in json.loads((root / "cwq" / "cwq_test_part.json").read_text(encoding="utf-8"))
        if r.get("SExpr") and r["SExpr"] != "null" and r.get("sparql")
    ]
    return {"grailqa": grail, "cwq": cwq}
