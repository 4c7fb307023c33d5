"""FC-KBQA composition by filling the logical skeletons with KB-connected components (``composition: fill``).

Our addition beside the paper's generated composition (:mod:`kbqa_lit.pipelines.fc.compose`):
the composer is a seq2seq model, and one trained on i.i.d. compositions from few questions
neither copies a relation it has never written (zero-shot) nor keeps a skeleton it has not seen
filled (compositional). Filling enumerates the forms the three fine-grained parts allow and ranks
them by the parts' own scores — the paper's *fine ranker* (its pilot study) over the skeletons.

**Slots** of a skeleton candidate (:func:`~kbqa_lit.data.fc.skeletons.parse_skeleton`):

- a hop ``<rel>`` / ``(R <rel>)`` (a JOIN's first argument): one of the detected relations, the
  direction the skeleton writes;
- any other ``<rel>`` (ARGMAX/ARGMIN's attribute, a comparison's, TC's): one of the detected relations;
- ``<class>``: one of the detected classes;
- ``<entity>``: one of the linked entities, distinct within a form;
- ``<literal>``: one of the question's literals (:func:`~kbqa_lit.data.fc.literals.detect_literals`),
  typed by where it stands (:func:`literal_forms`), distinct within a form; a TC's literal may also be
  ``NOW`` (after the question's own: "current team" names no year).

**Constraints** — the middle-grained pairs (``meta["fc"]["pairs"]``): two nested hops
``(JOIN h1 (JOIN h2 …))`` are a ``P_r-r`` pair (two backward hops are stored as the forward pair
read back); a class ANDed with a JOIN is a ``P_c-r`` pair with that JOIN's hop; a hop ending on an
entity that has ``P_r-e`` pairs is one of them. ``use_pairs=False`` drops the constraints (an ablation).

**Score**: the log-softmax of the extractor scores over the detected items of that kind
(``relation_scores``/``class_scores``; a file without them scores by rank), summed over the relation
and class slots; entities and literals add nothing. At most ``max_candidates`` fillings per skeleton,
best first. **Order** (``order``): ``skeleton`` — skeleton by skeleton in the parser's order, best
sum first within one (the parser decides the structure, the extractors the items); ``mean`` — all
skeletons' fillings together by the *mean* over their relation and class slots (ties: skeleton
order), so a two-hop filling of two well-scored relations outranks a one-hop filling of a poorly
scored one, and a one-hop filling of the best relation outranks a chain that adds a poor one.
Execution (the caller's) then rejects what the KB does not answer. With ``extra_skeletons`` = n > 0,
the next n skeletons of the source's ranked list (``skeleton_beams``, beyond the top-2) are filled too,
after all fillings of the top-2 (a fallback when none of those executes).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kbqa_lit.data.fc.composer_examples import Components
from kbqa_lit.data.fc.literals import LiteralMention
from kbqa_lit.data.fc.skeletons import Node, parse_skeleton
from kbqa_lit.errors import SExprError, check_choice
from kbqa_lit.kb.lf.sexpr import SKELETON_TOKENS, base_relation, reverse_hop

XSD = "http://www.w3.org/2001/XMLSchema#"
#: A time constraint's "at present" (``(TC x r NOW)``: "current team"), tried after the question's literals.
NOW = "NOW"
#: Fillings enumerated at most per skeleton (a guard for skeletons with many unconstrained slots).
MAX_ENUMERATED = 100_000
#: How fillings of different skeletons are ordered.
ORDERS = ("skeleton", "mean")
REL, CLASS = SKELETON_TOKENS["relation"], SKELETON_TOKENS["class"]
ENTITY, LITERAL = SKELETON_TOKENS["entity"], SKELETON_TOKENS["literal"]


def literal_forms(literal: LiteralMention, in_time_constraint: bool) -> list[str]:
    """The S-expression forms a question's literal may take in a slot, most likely first.

    A ``TC`` takes the bare value (``(TC x r 1988)``); a comparison takes typed values: a year as
    ``xsd:gYear`` or as the first day of that year (``xsd:date``), a date as ``xsd:date``, a number
    as ``xsd:integer`` (whole numbers) or ``xsd:float``.
    """
    v = literal.value
    if in_time_constraint:
        return [v]
    if literal.kind == "year":
        return [f"{v}^^{XSD}gYear", f"{v}-01-01^^{XSD}date"]
    if literal.kind == "date":
        return [f"{v}^^{XSD}date"]
    whole = v.lstrip("-").isdigit()
    return [f"{v}^^{XSD}integer", f"{v}^^{XSD}float"] if whole else [f"{v}^^{XSD}float"]


@dataclass
class _Slot:
    """One slot of a skeleton and the slots it is constrained by (earlier in pre-order)."""

    kind: str  # hop | attr | class | entity | literal
    reverse: bool = False
    outer_hop: int | None = None  # hop: the enclosing chain hop (a P_r-r pair with it)
    klass: int | None = None  # hop: the class ANDed with its JOIN (a P_c-r pair with it)
    hop: int | None = None  # entity: the hop that ends on it (a P_r-e pair)
    in_tc: bool = False  # literal: inside a TC


@dataclass
class _Template:
    """A skeleton whose slots are numbered: nodes are ``str``, ``int`` (a slot) or lists."""

    tree: object
    slots: list[_Slot] = field(default_factory=list)


def _template(skeleton_text: str) -> _Template:
    """Number the slots of a skeleton in pre-order and record their constraints.

    Raises:
        SExprError: When the skeleton is malformed.
    """
    out = _Template(None)

    def add(slot: _Slot) -> int:
        out.slots.append(slot)
        return len(out.slots) - 1

    def walk(node: Node, in_tc: bool = False, outer_hop: int | None = None, klass: int | None = None) -> object:
        if isinstance(node, str):
            if node == REL:
                return add(_Slot("attr"))
            if node == CLASS:
                return add(_Slot("class"))
            if node == ENTITY:
                return add(_Slot("entity", hop=outer_hop))
            if node == LITERAL:
                return add(_Slot("literal", in_tc=in_tc))
            return node
        head = node[0] if node else None
        if head == "JOIN" and len(node) == 3 and node[1] in (REL, ["R", REL]):
            hop = add(_Slot("hop", reverse=node[1] != REL, outer_hop=outer_hop, klass=klass))
            return ["JOIN", hop, walk(node[2], in_tc, outer_hop=hop)]
        if head == "AND":
            first_class = next((i for i, n in enumerate(node) if n == CLASS), None)
            parts: list[object] = ["AND"]
            class_slot: int | None = None
            for i, child in enumerate(node[1:], start=1):
                if i == first_class:
                    class_slot = add(_Slot("class"))
                    parts.append(class_slot)
                else:
                    parts.append(walk(child, in_tc, klass=class_slot))
            return parts
        if head == "R" and node == ["R", REL]:
            return ["R", add(_Slot("attr"))]
        tc = in_tc or head == "TC"
        return [walk(child, tc) for child in node]

    out.tree = walk(parse_skeleton(skeleton_text))
    return out


def _log_softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    top = max(scores)
    total = math.log(sum(math.exp(s - top) for s in scores)) + top
    return [s - total for s in scores]


@dataclass(frozen=True)
class Filling:
    """One filled skeleton.

    Attributes:
        sexpr: The S-expression (KB ids, typed literals).
        score: Sum of the log-softmax extractor scores of its relations and classes.
        skeleton: Index of the skeleton candidate it fills.
        mean: That sum over the number of its relation and class slots (0 when it has none).
    """

    sexpr: str
    score: float
    skeleton: int
    mean: float = 0.0


class SkeletonFiller:
    """Enumerate and rank the fillings of a question's skeleton candidates (see the module docstring).

    Args:
        top_relations: Detected relations a slot may take (best first).
        top_classes: Detected classes a slot may take.
        max_candidates: Fillings kept per skeleton, best first.
        use_pairs: Apply the pair constraints (``False``: any combination; an ablation).
        order: ``skeleton`` or ``mean`` (see the module docstring).
        extra_skeletons: Skeletons of the ranked list beyond the top-2 filled as a fallback.

    Raises:
        UserInputError: On an unknown ``order``.
    """

    def __init__(
        self,
        top_relations: int = 10,
        top_classes: int = 10,
        max_candidates: int = 200,
        use_pairs: bool = True,
        order: str = "skeleton",
        extra_skeletons: int = 0,
    ) -> None:
        check_choice("fill order", order, ORDERS)
        self.order = order
        self.extra_skeletons = max(0, int(extra_skeletons))
        self.top_relations = top_relations
        self.top_classes = top_classes
        self.max_candidates = max_candidates
        self.use_pairs = use_pairs

    def fillings(self, components: Components, literals: Sequence[LiteralMention] = ()) -> list[Filling]:
        """Every skeleton's fillings, skeleton by skeleton, best score first; malformed skeletons give none."""
        extra = [b for b in components.skeleton_beams if b not in components.skeletons][: self.extra_skeletons]
        main = self._fillings(components, components.skeletons, literals, 0)
        return main + self._fillings(components, extra, literals, len(components.skeletons))

    def _fillings(
        self, components: Components, skeletons: Sequence[str], literals: Sequence[LiteralMention], first: int
    ) -> list[Filling]:
        out: list[Filling] = []
        for k, text in enumerate(skeletons, start=first):
            try:
                template = _template(text)
            except SExprError:
                continue
            found = sorted(self._fill(template, components, literals), key=lambda f: -f[0])
            scored = sum(slot.kind in ("hop", "attr", "class") for slot in template.slots)
            out += [
                Filling(_render(template.tree, values), score, k, score / scored if scored else 0.0)
                for score, values in found[: self.max_candidates]
            ]
        if self.order == "mean":
            out.sort(key=lambda f: -f.mean)  # stable: ties keep the skeleton order
        return out

    def _fill(
        self, template: _Template, comp: Components, literals: Sequence[LiteralMention]
    ) -> Iterator[tuple[float, list[str]]]:
        rels = comp.relations[: self.top_relations]
        rel_lp = _log_softmax(comp.relation_scores[: len(rels)] or [-float(i) for i in range(len(rels))])
        classes = comp.classes[: self.top_classes]
        class_lp = _log_softmax(comp.class_scores[: len(classes)] or [-float(i) for i in range(len(classes))])
        entities = list(comp.entities)
        rr = {(p.first, p.second) for p in comp.pairs if p.kind == "relation-relation"}
        cr = {(p.first, p.second) for p in comp.pairs if p.kind == "class-relation"}
        re_pairs: dict[str, set[str]] = {}
        for p in comp.pairs:
            if p.kind == "relation-entity":
                re_pairs.setdefault(p.second, set()).add(p.first)
        slots = template.slots

        def options(slot: _Slot) -> list[tuple[str, float]]:
            if slot.kind == "hop":
                return [(reverse_hop(r) if slot.reverse else r, lp) for r, lp in zip(rels, rel_lp, strict=True)]
            if slot.kind == "attr":
                return list(zip(rels, rel_lp, strict=True))
            if slot.kind == "class":
                return list(zip(classes, class_lp, strict=True))
            if slot.kind == "entity":
                return [(e, 0.0) for e in entities]
            forms = [(form, 0.0) for lit in literals for form in literal_forms(lit, slot.in_tc)]
            return [*forms, (NOW, 0.0)] if slot.in_tc else forms

        def allowed(i: int, value: str, values: list[str]) -> bool:
            slot = slots[i]
            if slot.kind in ("entity", "literal") and value in values:
                return False
            if not self.use_pairs:
                return True
            if slot.kind == "hop":
                if slot.outer_hop is not None:
                    outer = values[slot.outer_hop]
                    ok = (outer, value) in rr or (
                        outer.startswith("(R ")
                        and value.startswith("(R ")
                        and (base_relation(value), base_relation(outer)) in rr
                    )
                    if not ok:
                        return False
                if slot.klass is not None and (values[slot.klass], value) not in cr:
                    return False
            if slot.kind == "entity" and slot.hop is not None and value in re_pairs:
                return base_relation(values[slot.hop]) in re_pairs[value]
            return True

        slot_options = [options(slot) for slot in slots]  # a slot's options do not depend on the others
        budget = [MAX_ENUMERATED]

        def search(i: int, values: list[str], score: float) -> Iterator[tuple[float, list[str]]]:
            if budget[0] <= 0:
                return
            if i == len(slots):
                budget[0] -= 1
                yield score, list(values)
                return
            for value, lp in slot_options[i]:
                if allowed(i, value, values):
                    values.append(value)
                    yield from search(i + 1, values, score + lp)
                    values.pop()

        yield from search(0, [], 0.0)


def _render(tree: object, values: Sequence[str]) -> str:
    if isinstance(tree, int):
        return values[tree]
    if isinstance(tree, str):
        return tree
    assert isinstance(tree, list)
    return "(" + " ".join(_render(n, values) for n in tree) + ")"


__all__ = ["ORDERS", "Filling", "SkeletonFiller", "literal_forms"]
