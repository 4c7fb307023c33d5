"""The pilot study's candidates as the paper's coarse-grained baseline gets them: enumerated from the KB.

FC-KBQA's pilot study sets a coarse ranker (question ↔ whole logical form) against a fine one
(question ↔ each component, then composed) on candidate logical forms; the coarse side is
GrailQA-Rank's, whose candidates are the forms the KB has around the question's entity — not the
gold's structure with other components swapped in (:func:`~kbqa_lit.pipelines.fc.pilot.candidate_forms`,
kept as ``candidates: swap``). Here, for a 1-hop gold with one entity ``e``:

- every one-hop relation path the KB has at ``e``, in both directions
  (:func:`~kbqa_lit.kb.index.paths.relation_paths`: ``(JOIN (R r) e)``, ``(JOIN r e)``);
- each with every class of (a sample of) its answers: ``(AND c (JOIN r e))``;
- a gold that counts (``(COUNT …)``) gets every candidate counted: the pilot compares how the two
  rankers match relations and classes, so both see the same function (no ranker here detects one);
- the gold is added when the KB's sample missed it (it is always a candidate, as in the paper's
  top-1 accuracy), and ``n`` are kept in a seeded order;
- a candidate with the gold's answers counts as right (:func:`answer_equivalent`): the KB offers
  ``(JOIN (R r) e)`` beside ``(AND c (JOIN (R r) e))``, which often answer alike.

The entity is the gold's (the pilot measures ranking, not linking, for both rankers alike).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kbqa_lit.errors import StoreError, UserInputError
from kbqa_lit.kb.index.paths import relation_paths
from kbqa_lit.kb.lf.iri import NS, TYPE_RELATION, iri, local_id
from kbqa_lit.kb.lf.sexpr import Call, SExpr, parse_sexpr, schema_items, to_sexpr_string
from kbqa_lit.kb.store.execute import run_sexpr

#: Answers of a path whose classes are read.
CLASS_SAMPLE = 20


def canonical(form: str) -> str:
    """One spelling per form (the parser's), so the gold and an enumerated candidate compare equal."""
    return to_sexpr_string(parse_sexpr(form))


def _counted(node: SExpr) -> bool:
    return isinstance(node, Call) and node.op == "COUNT"


def answer_classes(store: object, entity: str, relation: str, forward: bool, sample: int = CLASS_SAMPLE) -> list[str]:
    """The classes of (a sample of) the far ends of ``entity``'s ``relation`` edges, sorted.

    Raises:
        StoreError: When the query fails.
    """
    edge = f"<{iri(entity)}> <{iri(relation)}> ?x" if forward else f"?x <{iri(relation)}> <{iri(entity)}>"
    answers = f"{{ SELECT ?x WHERE {{ {edge} }} LIMIT {sample} }}"
    query = f"SELECT DISTINCT ?c WHERE {{ {answers} ?x <{NS}{TYPE_RELATION}> ?c }}"
    result = store.execute(query)  # type: ignore[attr-defined]
    if not result.ok:
        raise StoreError(f"could not read the classes of {entity}'s {relation} answers: {result.error}")
    return sorted({local_id(c) for c in result.answers})


def kb_forms(store: object, entity: str, counted: bool = False) -> list[str]:
    """Every 1-hop form the KB has at ``entity`` (with and without each answer class), canonical and sorted.

    Args:
        store: The knowledge base (``execute(sparql)``).
        entity: The entity id.
        counted: Wrap every form in ``COUNT``.

    Raises:
        StoreError: When a read fails.
    """
    forms: list[str] = []
    for path in relation_paths(store, entity, max_hops=1):
        (hop,) = path.hops
        forms.append(path.sexpr)
        forms.extend(f"(AND {c} {path.sexpr})" for c in answer_classes(store, entity, hop.relation, hop.forward))
    if counted:
        forms = [f"(COUNT {f})" for f in forms]
    return sorted({canonical(f) for f in forms})


def kb_candidate_forms(store: object, gold: str, n: int = 100, seed: int = 0, key: str = "") -> list[str]:
    """Up to ``n`` candidates of a 1-hop gold enumerated from the KB around its entity, the gold among them.

    Args:
        store: The knowledge base.
        gold: The gold S-expression: one relation, one entity (optionally a class, a ``COUNT``).
        n: Candidates wanted (the paper: 100).
        seed: The draw's and the order's seed (with ``key``).
        key: Makes the draw specific to a question (e.g. its qid).

    Returns:
        Canonical forms (:func:`canonical`) in a seeded order: a tie is not decided in the gold's favour.

    Raises:
        UserInputError: When the gold does not have exactly one relation and one entity, or ``n`` < 1.
        StoreError: When a KB read fails.
    """
    node = parse_sexpr(gold)
    items = schema_items(node)
    if n < 1 or len(items.relations) != 1 or len(items.entities) != 1:
        raise UserInputError(f"a 1-hop gold S-expression with one entity and n >= 1 are needed, got {gold!r}, n={n}")
    gold_form = canonical(gold)
    others = [f for f in kb_forms(store, items.entities[0], counted=_counted(node)) if f != gold_form]
    rng = random.Random(f"{seed}:{key}")
    chosen = [gold_form, *rng.sample(others, min(len(others), n - 1))]
    rng.shuffle(chosen)
    return chosen


def answer_equivalent(store: object, gold: str, candidates: Sequence[str]) -> frozenset[str]:
    """The candidates whose answers equal the gold's (the gold always; an empty or failing gold: the gold alone).

    Raises:
        StoreError: When the gold's query fails.
    """
    gold_form = canonical(gold)
    _, result = run_sexpr(store, gold)  # type: ignore[arg-type]
    if not result.ok:
        raise StoreError(f"the pilot's gold {gold!r} does not execute: {result.error}")
    answers = set(result.answers)
    right = {gold_form}
    if answers:
        for form in candidates:
            if form == gold_form:  # executed above
                continue
            _, other = run_sexpr(store, form)  # type: ignore[arg-type]
            if other.ok and set(other.answers) == answers:
                right.add(form)
    return frozenset(right)
