"""FC-KBQA's pilot study: fine-grained vs coarse ranking of candidate logical forms for 1-hop questions.

The paper's motivating experiment: for each 1-hop question, up to ``n`` (100) candidate logical
forms, one of them the gold; a **coarse** ranker (GrailQA-Rank's) scores each whole logical form
with one encoder over ``(question, logical form)``, the **fine** ranker matches the question with
each component (its relation and class, each by its extractor) and composes them; top-1 accuracy
per generalisation level says which generalises.

Our choices (the paper gives no procedure):

- **1-hop**: the gold S-expression names exactly one relation (a class and entities may be there);
- **candidates**, two sources: with a knowledge base (``pilot_questions(..., store=...)``, the
  default of ``benchmarks/fc_pilot.py``, as the coarse baseline gets them) the 1-hop forms the KB
  has around the gold's entity (:mod:`~kbqa_lit.pipelines.fc.pilot_kb`), a candidate with the
  gold's answers counting as right; without one (:func:`candidate_forms`, ours before) the gold's
  structure with its relation and its class replaced by others — the direction of the hop and the
  entities kept — same Freebase domain (first dotted segment) first, then other domains. Either
  way the order is a seeded shuffle, so a tie is not decided in the gold's favour;
- **fine score** (:func:`fine_scores`): each extractor's scores of the distinct relations (classes)
  among the candidates, softmax-normalised over them; a form's score is the sum over its
  components, plus, with a skeleton parser, its skeleton's probability among the candidates'
  skeletons (the paper's fine method composes the components by a predicted skeleton);
- **coarse score** (:func:`coarse_scores`): the ranker's score of ``(question, normalised form)``,
  the form written as the generators read it (:func:`~kbqa_lit.kb.lf.normalize.normalize_sexpr`).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kbqa_lit.data.fc.extractor_texts import schema_domain
from kbqa_lit.data.fc.skeletons import lf_skeleton, mask_mentions
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError, UserInputError
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sexpr import Atom, map_atoms, parse_sexpr, schema_items, to_sexpr_string
from kbqa_lit.pipelines.fc.pilot_kb import answer_equivalent, canonical, kb_candidate_forms

#: ``(question, item texts or ids) → scores`` (an extractor's or a ranker's ``score``).
ScoreFn = Callable[[str, Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class PilotQuestion:
    """One pilot question and its candidates.

    Attributes:
        qid: Question id.
        question: The question text.
        gold: The gold S-expression.
        candidates: The candidate S-expressions (the gold among them), in a seeded order.
        labels: Entity id → label (how the coarse ranker reads the forms).
        level: Its generalisation level (``None``: unknown).
        correct: The candidates that count as right at top-1: those with the gold's answers where the
            candidates came from the KB (``(AND c (JOIN r e))`` and ``(JOIN r e)`` often answer alike), else
            the gold alone (empty: the gold alone).
    """

    qid: str
    question: str
    gold: str
    candidates: tuple[str, ...]
    labels: Mapping[str, str]
    level: str | None = None
    correct: frozenset[str] = frozenset()

    def is_correct(self, form: str) -> bool:
        """Whether ``form`` counts as the right answer (see ``correct``)."""
        return form in self.correct if self.correct else form == self.gold


def is_one_hop(s_expression: str | None) -> bool:
    """Whether a gold S-expression names exactly one relation (unparseable or missing: no)."""
    if not s_expression:
        return False
    try:
        return len(schema_items(s_expression).relations) == 1
    except SExprError:
        return False


def candidate_forms(
    gold: str, relations: Sequence[str], classes: Sequence[str], n: int = 100, seed: int = 0, key: str = ""
) -> list[str]:
    """Up to ``n`` candidate forms of a 1-hop gold (the gold included), in a seeded order.

    Args:
        gold: The gold S-expression (one relation).
        relations: The relation inventory.
        classes: The class inventory.
        n: Candidates wanted (the paper: 100).
        seed: The order's and the draw's seed (with ``key``).
        key: Makes the draw specific to a question (e.g. its qid).

    Raises:
        UserInputError: When ``gold`` is not a 1-hop form or ``n`` < 1.
    """
    if n < 1 or not is_one_hop(gold):
        raise UserInputError(f"a 1-hop gold S-expression and n >= 1 are needed, got {gold!r}, n={n}")
    node = parse_sexpr(gold)
    items = schema_items(node)
    relation = items.relations[0]
    klass = items.classes[0] if len(items.classes) == 1 else None
    same, same_class = schema_domain(relation), schema_domain(klass or "")
    fillings = [
        (r, c)
        for r in [relation, *relations]
        for c in ([klass, *classes] if klass else [None])
        if (r, c) != (relation, klass)
    ]
    fillings = list(dict.fromkeys(fillings))
    near = [(r, c) for r, c in fillings if schema_domain(r) == same and (c is None or schema_domain(c) == same_class)]
    near_set = set(near)
    far = [f for f in fillings if f not in near_set]
    rng = random.Random(f"{seed}:{key}")
    chosen = [(relation, klass), *rng.sample(near, min(len(near), n - 1))]
    chosen += rng.sample(far, min(len(far), n - len(chosen)))

    def fill(r: str, c: str | None) -> str:
        def swap(atom: Atom, role: str) -> Atom:
            if role == "relation":
                return Atom(r)
            if role == "class" and c is not None:
                return Atom(c)
            return atom

        return to_sexpr_string(map_atoms(node, swap))

    forms = list(dict.fromkeys(fill(r, c) for r, c in chosen))
    rng.shuffle(forms)
    return forms


def pilot_questions(
    examples: Iterable[KBQAExample],
    relations: Sequence[str],
    classes: Sequence[str],
    levels: Mapping[str, str | None] | None = None,
    n: int = 100,
    seed: int = 0,
    store: object | None = None,
) -> list[PilotQuestion]:
    """The 1-hop examples as pilot questions with their candidates (others are skipped).

    Args:
        examples: The questions.
        relations: The relation inventory (``candidates: swap`` only).
        classes: The class inventory (``candidates: swap`` only).
        levels: qid → generalisation level.
        n: Candidates per question.
        seed: The draws' seed.
        store: A knowledge base: the candidates are the forms it has around the gold's entity
            (:mod:`~kbqa_lit.pipelines.fc.pilot_kb`, the paper's coarse baseline's candidates; a gold without
            exactly one entity is skipped) and every candidate with the gold's answers counts as right.
            ``None``: the gold's structure with other relations and classes swapped in (:func:`candidate_forms`).
    """
    out = []
    for ex in examples:
        gold = ex.s_expression or ""
        if not is_one_hop(gold):
            continue
        level = (levels or {}).get(ex.qid)
        if store is None:
            forms = candidate_forms(gold, relations, classes, n, seed, ex.qid)
            out.append(PilotQuestion(ex.qid, ex.question, gold, tuple(forms), ex.entity_labels(), level))
        elif len(schema_items(gold).entities) == 1:
            forms = kb_candidate_forms(store, gold, n, seed, ex.qid)
            right = answer_equivalent(store, gold, forms)
            q = PilotQuestion(ex.qid, ex.question, canonical(gold), tuple(forms), ex.entity_labels(), level, right)
            out.append(q)
    return out


def _softmax(scores: Sequence[float]) -> list[float]:
    top = max(scores)
    exp = [math.exp(s - top) for s in scores]
    total = sum(exp)
    return [e / total for e in exp]


def fine_scores(
    q: PilotQuestion,
    relation_score: ScoreFn,
    class_score: ScoreFn | None = None,
    skeleton_score: ScoreFn | None = None,
) -> list[float]:
    """Sum of the softmax-normalised component scores of each candidate (see the module docstring).

    Args:
        q: The question and its candidates.
        relation_score: The relation extractor's ``score(question, relation ids)``.
        class_score: The class extractor's (``None``: classes add nothing).
        skeleton_score: The skeleton parser's ``score(masked question, skeletons)`` (log-probabilities:
            ``MultitaskGenerator.target_logprobs``), softmax-normalised over the candidates' distinct
            skeletons and added to each candidate's sum: the skeleton decides the form's shape — whether
            a class belongs, which way the hop goes — which the components alone do not (``None``: off).
    """
    parts = [schema_items(c) for c in q.candidates]
    normalised: dict[str, float] = {}
    for kind, fn in (("relations", relation_score), ("classes", class_score)):
        ids = list(dict.fromkeys(i for p in parts for i in getattr(p, kind)))
        if ids and fn is not None:
            normalised.update(zip(ids, _softmax(list(fn(q.question, ids))), strict=True))
    out = [sum(normalised.get(i, 0.0) for i in (*p.relations, *p.classes)) for p in parts]
    if skeleton_score is None:
        return out
    shapes = [lf_skeleton(c) for c in q.candidates]
    distinct = list(dict.fromkeys(shapes))
    source = mask_mentions(q.question, list(q.labels.values()))
    shape_p = dict(zip(distinct, _softmax(list(skeleton_score(source, distinct))), strict=True))
    return [score + shape_p[shape] for score, shape in zip(out, shapes, strict=True)]


def form_text(form: str, labels: Mapping[str, str]) -> str:
    """A candidate as the coarse ranker reads it: the normalised form with entity labels."""
    return normalize_sexpr(form, labels)


def coarse_scores(q: PilotQuestion, form_score: ScoreFn) -> list[float]:
    """The coarse ranker's score of each whole candidate (``form_score`` reads texts: ``LogicalFormRanker.score``)."""
    return list(form_score(q.question, [form_text(c, q.labels) for c in q.candidates]))


def top1_accuracy(
    questions: Sequence[PilotQuestion], scores: Callable[[PilotQuestion], Sequence[float]]
) -> dict[str, float | int]:
    """Top-1 accuracy overall (``all``) and per level, with the question counts (``n_<level>``).

    The top candidate is the first of the highest score in the candidates' (seeded) order; it is right when
    :meth:`PilotQuestion.is_correct` says so.
    """
    hits: dict[str, list[int]] = defaultdict(list)
    for q in questions:
        s = list(scores(q))
        best = max(range(len(s)), key=lambda i: (s[i], -i))
        hit = int(q.is_correct(q.candidates[best]))
        hits["all"].append(hit)
        hits[q.level or "unknown"].append(hit)
    out: dict[str, float | int] = {}
    for level, h in sorted(hits.items()):
        out[level] = sum(h) / len(h)
        out[f"n_{level}"] = len(h)
    return out


def coarse_training_groups(
    questions: Sequence[PilotQuestion], negatives: int, seed: int = 0
) -> list[tuple[str, list[str]]]:
    """``(question, [gold text, negative texts...])`` groups of training questions for the coarse ranker.

    Negatives are drawn (seeded per question) from the question's own candidates that are not right
    (:meth:`PilotQuestion.is_correct`).
    """
    groups = []
    for q in questions:
        others = [c for c in q.candidates if not q.is_correct(c)]
        drawn = random.Random(f"{seed}:{q.qid}").sample(others, min(negatives, len(others)))
        groups.append((q.question, [form_text(c, q.labels) for c in (q.gold, *drawn)]))
    return groups
