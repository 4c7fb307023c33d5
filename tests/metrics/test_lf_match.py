from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from kbqa_lit.errors import DataFormatError, SExprError
from kbqa_lit.kb.lf.sexpr import Atom, Call, SExpr, parse_sexpr, to_sexpr_string
from kbqa_lit.metrics import canonical_form, load_reverse_properties, logical_form_em
from tests.helpers.shared_data import shared_path as _data

REV = {"a.b.forward": "a.c.backward", "a.c.backward": "a.b.forward"}


def test_string_equal_forms_match() -> None:
    s = "(JOIN (R people.person.nationality) m.06w2sn5)"
    assert logical_form_em(s, s)
    assert logical_form_em("  " + s.replace(" ", "   ") + "\n", s)


def test_and_order_and_nesting() -> None:
    a, b, c = "x.y.z", "(JOIN p.q.r m.1)", "(JOIN (R p.q.s) m.2)"
    gold = f"(AND {a} (AND {b} {c}))"
    for perm in itertools.permutations([a, b, c]):
        assert logical_form_em(f"(AND {' '.join(perm)})", gold)
        assert logical_form_em(f"(AND (AND {perm[0]} {perm[1]}) {perm[2]})", gold)
    assert logical_form_em(f"(AND {a} {a})", a)  # idempotent
    assert not logical_form_em(f"(AND {a} {b})", gold)
    # order still matters where it carries meaning
    assert not logical_form_em("(JOIN p.q.r (JOIN p.q.s m.1))", "(JOIN p.q.s (JOIN p.q.r m.1))")


def test_reverse_relations() -> None:
    assert logical_form_em("(JOIN (R a.b.forward) m.1)", "(JOIN a.c.backward m.1)", REV)
    assert logical_form_em("(JOIN a.b.forward m.1)", "(JOIN (R a.c.backward) m.1)", REV)
    assert not logical_form_em("(JOIN a.b.forward m.1)", "(JOIN a.c.backward m.1)", REV)
    assert not logical_form_em("(JOIN (R a.b.forward) m.1)", "(JOIN a.c.backward m.1)")  # no ontology
    # inside AND, ARGMAX paths, comparisons and TC too
    assert logical_form_em("(AND t.t.t (JOIN (R a.b.forward) m.1))", "(AND (JOIN a.c.backward m.1) t.t.t)", REV)
    assert logical_form_em(
        "(ARGMAX t.t.t (JOIN (R a.b.forward) x.y.z))", "(ARGMAX t.t.t (JOIN a.c.backward x.y.z))", REV
    )
    assert logical_form_em("(lt (R a.b.forward) 3)", "(lt a.c.backward 3)", REV)
    assert logical_form_em("(TC t.t.t (R a.b.forward) NOW)", "(TC t.t.t a.c.backward NOW)", REV)


def test_one_directional_mapping_and_self_reverse() -> None:
    one_way = {"a.b.forward": "a.c.backward"}
    assert logical_form_em("(JOIN a.c.backward m.1)", "(JOIN (R a.b.forward) m.1)", one_way)
    symmetric = {"p.p.sibling": "p.p.sibling"}
    assert logical_form_em("(JOIN (R p.p.sibling) m.1)", "(JOIN p.p.sibling m.1)", symmetric)


def test_pred_never_raises_gold_does() -> None:
    gold = "(JOIN a.b.c m.1)"
    for bad in ["", "(JOIN a.b.c", "(FOO a.b.c m.1)", "((", ")", "(JOIN a.b.c m.1))", None, 3]:
        assert logical_form_em(bad, gold) is False  # type: ignore[arg-type]
    assert logical_form_em("(" * 500 + ")" * 500, gold) is False
    with pytest.raises(SExprError):
        logical_form_em(gold, "(JOIN a.b.c")


def test_canonical_form_is_idempotent() -> None:
    s = "(AND (JOIN (R a.b.forward) m.1) (AND t.t.t (COUNT x.y.z)))"
    c = canonical_form(s, REV)
    assert canonical_form(c, REV) == c
    assert canonical_form(parse_sexpr(s), REV) == c


def test_load_reverse_properties(tmp_path: Path) -> None:
    f = tmp_path / "rev"
    f.write_text("a.b.c\ta.d.e\n\n# comment\nx.y.z\tx.y.w\n")
    rev = load_reverse_properties(f)
    assert rev == {"a.b.c": "a.d.e", "a.d.e": "a.b.c", "x.y.z": "x.y.w", "x.y.w": "x.y.z"}
    f.write_text("a.b.c\ta.d.e\nonly_one_field\n")
    with pytest.raises(DataFormatError, match=r"rev:2"):
        load_reverse_properties(f)


# ---- real gold S-expressions from ../shared/data ----


def _real_golds() -> list[str]:
    golds = [json.loads(line)["s_expression"] for line in _data("grailqa", "grailqa_dev.jsonl").open()]
    for r in json.loads(_data("webqsp", "WebQSP_train_subset_2897_sexpr.json").read_text()):
        if r["SExpr"] != "null":
            golds.append(r["SExpr"])
    for r in json.loads(_data("cwq", "cwq_test_part.json").read_text()):
        if r.get("SExpr") and r["SExpr"] != "null":
            golds.append(r["SExpr"])
    return golds


@pytest.fixture(scope="module")
def golds() -> list[str]:
    return _real_golds()


@pytest.fixture(scope="module")
def reverse() -> dict[str, str]:
    return load_reverse_properties(_data("ontology", "reverse_properties"))


def _shuffle_ands(node: SExpr, rng: random.Random) -> SExpr:
    if isinstance(node, Atom):
        return node
    args = [_shuffle_ands(a, rng) for a in node.args]
    if node.op == "AND":
        rng.shuffle(args)
        if len(args) > 2 and rng.random() < 0.5:  # re-nest: (AND a b c) -> (AND a (AND b c))
            args = [args[0], Call("AND", tuple(args[1:]))]
    return Call(node.op, tuple(args))


def _flip_one_relation(node: SExpr, rev: dict[str, str]) -> tuple[SExpr, bool]:
    """Rewrite the first JOIN relation that has a reverse: r <-> (R r')."""
    if isinstance(node, Atom):
        return node, False
    if node.op == "JOIN":
        rel = node.args[0]
        if isinstance(rel, Atom) and rel.text in rev:
            return Call("JOIN", (Call("R", (Atom(rev[rel.text]),)), node.args[1])), True
        if isinstance(rel, Call) and rel.op == "R" and rel.args[0].text in rev:  # type: ignore[union-attr]
            return Call("JOIN", (Atom(rev[rel.args[0].text]), node.args[1])), True  # type: ignore[union-attr]
    args, done = [], False
    for a in node.args:
        if not done:
            a, done = _flip_one_relation(a, rev)
        args.append(a)
    return Call(node.op, tuple(args)), done


def test_real_golds_equal_themselves_and_their_and_permutations(golds: list[str], reverse: dict) -> None:
    rng = random.Random(0)
    shuffled_differently = 0
    for gold in golds:
        node = parse_sexpr(gold)
        assert logical_form_em(gold, gold, reverse), gold
        perm = to_sexpr_string(_shuffle_ands(node, rng))
        shuffled_differently += perm != gold
        assert logical_form_em(perm, gold, reverse), (perm, gold)
        assert canonical_form(perm) == canonical_form(node), (perm, gold)  # no ontology needed
    assert shuffled_differently > 500  # the permutations really changed many strings


def test_real_golds_equal_their_reverse_rewrite(golds: list[str], reverse: dict) -> None:
    flipped = 0
    for gold in golds:
        node, done = _flip_one_relation(parse_sexpr(gold), reverse)
        if not done:
            continue
        text = to_sexpr_string(node)
        assert text != gold
        assert logical_form_em(text, gold, reverse), (text, gold)
        assert not logical_form_em(text, gold), (text, gold)  # without the ontology they differ
        flipped += 1
    assert flipped > 5000


def test_different_real_golds_differ(golds: list[str], reverse: dict) -> None:
    forms: dict[str, set[str]] = {}
    for gold in set(golds):
        forms.setdefault(canonical_form(gold, reverse), set()).add(gold)
    # distinct gold strings almost always denote distinct graphs (a few are AND reorderings)
    assert len(forms) >= 0.98 * len(set(golds))
    rng = random.Random(1)
    distinct = sorted(set(golds))
    for _ in range(2000):
        a, b = rng.sample(distinct, 2)
        if canonical_form(a, reverse) != canonical_form(b, reverse):
            assert not logical_form_em(a, b, reverse)
    # changing an entity breaks the match
    for gold in distinct[:300]:
        changed = gold.replace("m.", "m.x", 1)
        if changed != gold:
            assert not logical_form_em(changed, gold, reverse)
