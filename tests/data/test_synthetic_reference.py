"""An independent check of the synthetic world's gold answers.

The gold answers are produced by the SPARQL converter and Oxigraph, so a converter bug would also
be in the gold. Here a small pure-Python evaluator of the S-expression semantics (GrailQA's
JOIN/R/AND/COUNT/ARGMAX/ARGMIN/comparatives plus the TC time constraint, with the topic entities
excluded from the answers) recomputes every answer from ``kb.nt`` directly. It also checks the
``kbqa data synth`` command end to end.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.kb.lf.iri import NS
from kbqa_lit.kb.lf.sexpr import Atom, Call, SExpr, parse_sexpr

_NT = re.compile(r'^<([^>]*)> <([^>]*)> (?:<([^>]*)>|("(?:[^"\\]|\\.)*")(?:@en|\^\^<([^>]*)>)) \.$')
NOW_YEAR = "2015"


class ReferenceKB:
    """Facts of ``kb.nt`` indexed both ways; literals are ``(lexical, datatype)`` pairs."""

    def __init__(self, path: Path) -> None:
        self.out: dict[tuple[str, str], list] = defaultdict(list)
        self.inv: dict[tuple[object, str], list[str]] = defaultdict(list)
        self.types: dict[str, set[str]] = defaultdict(set)
        for line in path.read_text(encoding="utf-8").splitlines():
            m = _NT.match(line)
            assert m, line
            s, p = m.group(1)[len(NS) :], m.group(2)[len(NS) :]
            if m.group(3) is not None:
                o: object = m.group(3)[len(NS) :]
            else:
                o = (json.loads(m.group(4)), m.group(5) or "")
            if p == "type.object.type":
                self.types[str(o)].add(s)
            self.out[(s, p)].append(o)
            self.inv[(o, p)].append(s)

    def values(self, node: str, relpath: SExpr) -> list:
        """Values reached from ``node`` through a relation, ``(R r)`` or a JOIN chain."""
        if isinstance(relpath, Call) and relpath.op == "JOIN":
            out = []
            for mid in self.values(node, relpath.args[0]):
                out.extend(self.values(mid, relpath.args[1]))
            return out
        if isinstance(relpath, Call):  # (R r)
            return list(self.inv.get((node, relpath.args[0].text), ()))
        return list(self.out.get((node, relpath.text), ()))

    def subjects_of(self, relpath: SExpr) -> set[str]:
        rel = relpath.args[0] if isinstance(relpath, Call) and relpath.op == "JOIN" else relpath
        if isinstance(rel, Call):
            return {o for (o, r) in self.inv if r == rel.args[0].text and isinstance(o, str)}
        return {s for (s, r) in self.out if r == rel.text}


def _key(value: object) -> object:
    lexical, dtype = value if isinstance(value, tuple) else (value, "")
    if dtype.endswith(("#integer", "#float", "#double", "#decimal")):
        return float(lexical)
    return lexical


def _literal(text: str) -> tuple[str, str]:
    value, _, dtype = text.partition("^^")
    return value, dtype


def evaluate(kb: ReferenceKB, node: SExpr) -> set:
    """The set an S-expression denotes (entity ids and literal pairs)."""
    if isinstance(node, Atom):
        if node.kind == "entity":
            return {node.text}
        return set(kb.types.get(node.text, ()))
    op, args = node.op, node.args
    if op == "AND":
        sets = [evaluate(kb, a) for a in args]
        return set.intersection(*sets)
    if op == "JOIN":
        rel, arg = args
        targets = evaluate(kb, arg)
        if isinstance(rel, Call):  # (JOIN (R r) X): objects of X via r
            return {o for x in targets for o in kb.out.get((x, rel.args[0].text), ())}
        return {s for x in targets for s in kb.inv.get((x, rel.text), ())}
    if op == "COUNT":
        return {(str(len(evaluate(kb, args[0]))), "count")}
    if op in ("ARGMAX", "ARGMIN"):
        members = evaluate(kb, args[0])
        scored = [(m, _key(v)) for m in members for v in kb.values(m, args[1])]
        if not scored:
            return set()
        best = (max if op == "ARGMAX" else min)(v for _, v in scored)
        return {m for m, v in scored if v == best}
    if op in ("lt", "le", "gt", "ge"):
        value, dtype = _literal(args[1].text)
        numeric = dtype.endswith(("#integer", "#float"))
        bound = float(value) if numeric else value
        cmp = {
            "lt": lambda a: a < bound,
            "le": lambda a: a <= bound,
            "gt": lambda a: a > bound,
            "ge": lambda a: a >= bound,
        }[op]
        out = set()
        for s in kb.subjects_of(args[0]):
            for v in kb.values(s, args[0]):
                got = float(v[0]) if numeric else v[0][: len(value)]
                if cmp(got):
                    out.add(s)
        return out
    if op == "TC":
        year = NOW_YEAR if args[2].text == "NOW" else args[2].text[:4]
        start_rel = args[1].text
        end_rel = start_rel.rsplit(".", 1)[0] + ".to"
        keep = set()
        for m in evaluate(kb, args[0]):
            starts = [v[0][:4] for v in kb.out.get((m, start_rel), ())]
            ends = [v[0][:4] for v in kb.out.get((m, end_rel), ())]
            if (not starts or any(s <= year for s in starts)) and (not ends or any(e >= year for e in ends)):
                keep.add(m)
        return keep
    raise AssertionError(f"unexpected operator {op}")


def answer_ids(kb: ReferenceKB, sexpr: str) -> set[str]:
    """Answers with the topic entities excluded, as ids / lexical values (floats canonicalised)."""
    node = parse_sexpr(sexpr)
    topics = set(re.findall(r"\bm\.[A-Za-z0-9_]+", sexpr))
    out = set()
    for a in evaluate(kb, node):
        if isinstance(a, tuple):
            lexical, dtype = a
            out.add(repr(float(lexical)).removesuffix(".0") if dtype.endswith("#float") else lexical)
        elif a not in topics:
            out.add(a)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synthref") / "w"
    build_world(out, seed=7, size="small")
    return out


def test_reference_evaluator_agrees_with_every_gold_answer(built: Path) -> None:
    kb = ReferenceKB(built / "kb.nt")
    checked = 0
    for split in ("train", "dev", "test"):
        for ex in read_jsonl(built / f"{split}.jsonl"):
            assert answer_ids(kb, ex.s_expression or "") == {a.id for a in ex.answers}, (
                ex.qid,
                ex.s_expression,
            )
            checked += 1
    assert checked == 700


def test_kbqa_data_synth_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kbqa_lit.cli import main

    assert main(["data", "synth", "--out", str(tmp_path / "w"), "--seed", "7"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["seed"] == 7 and summary["size"] == "small"
    assert summary["questions"] == {"train": 400, "dev": 150, "test": 150}
    assert (tmp_path / "w" / "kb.nt").is_file()
