"""FC-KBQA's composer rows: the :func:`~kbqa_lit.data.fc.composer_inputs.composer_input` text and its target.

**Target**: the normalised gold S-expression (:func:`~kbqa_lit.kb.lf.normalize.normalize_sexpr`,
what the project's seq2seq generator writes and its grammar-constrained decoder follows), entities
as the input's slots ``[E0]``... with ``mask_entities`` — the slots of the entities the input names,
the ones the execution-guided callback puts back; a gold entity the input does not name keeps its
label.

**Items as the target writes them**: every relation and class in the input is written as the
normaliser's bracket (``[REL][ film , film , directed by ]``, a reverse hop ``[REL]( reverse [ ... ] )``),
so the composer copies words it reads; entities as their label or slot.

**Training input** (``train_components``, :data:`TRAIN_COMPONENTS`):

- ``detected`` (the default; the paper trains on what its detection gives): the training question's
  own ``meta["fc"]`` as ``kbqa fc detect`` writes it, read by :func:`predicted_components` — the
  reader, order and size evaluation sees (:func:`detected_training_components`).
- ``gold+distractors`` (ours, :func:`training_components`): the gold components — the pairs of the
  gold S-expression (:func:`~kbqa_lit.data.fc.gold_pairs.gold_pairs`), its topic entities and the
  skeleton candidates :func:`~kbqa_lit.data.fc.skeletons.top2_skeletons` gives for the gold skeleton
  (gold first, then its chain rewrite) — plus ``num_distractors`` sampled pairs per kind from the
  other training questions' gold pairs (same Freebase domain first, then any; relation–entity
  distractors pair another relation with a gold entity, as pruning edges would), each kind shuffled
  so the gold pairs are not always first. Sampling is seeded per question (``seed`` and the qid):
  the same file gives the same rows. ``oracle: components`` builds evaluation inputs this way.

**Inference input** (:func:`predicted_components`): what the FC pipeline wrote into
``meta["fc"]`` (:data:`FC_META`) — ``{"pairs": [[kind, first, second, score], ...], "entities":
{id: label}, "skeletons": [top-2]}`` from detection, linking, the skeleton parser and the pair
builder; no gold field is read.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbqa_lit.data.entity_slots import mask_lf, mask_text, topic_slots
from kbqa_lit.data.fc.composer_inputs import (
    MARK_CLASS,
    MARK_REL,
    PAIR_KINDS,
    SEPARATOR,
    InputFormat,
    Pair,
    check_input_format,
    composer_input,
)
from kbqa_lit.data.fc.gold_pairs import base_relation, gold_pairs
from kbqa_lit.data.fc.skeletons import lf_skeleton, top2_skeletons
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError, UserInputError, check_choice
from kbqa_lit.kb.lf.normalize import normalize_sexpr, schema_to_words

FC_META = "fc"
#: What the composer input says about the KB: the pairs, the bare components, or nothing.
KNOWLEDGE = ("pairs", "components", "none")
#: What training inputs are built from: the paper's (``kbqa fc detect``'s ``meta["fc"]``) first, the default.
TRAIN_COMPONENTS = ("detected", "gold+distractors")


@dataclass
class Components:
    """What the composer reads for one question.

    Attributes:
        pairs: The pairs, each kind best first (or shuffled at training).
        entities: Entity id → label, in linking order.
        skeletons: The skeleton candidates (top-2).
        relations: The detected relations, best first (empty: those of the pairs).
        classes: The detected classes, best first (empty: those of the pairs).
        relation_scores: The extractor's score of each of ``relations`` (empty: not recorded).
        class_scores: The extractor's score of each of ``classes`` (empty: not recorded).
        skeleton_beams: The skeleton source's whole ranked list (well-formed beams or voted skeletons),
            of which ``skeletons`` are the top-2 (empty: not recorded); filling may fall back on them.
    """

    pairs: list[Pair] = field(default_factory=list)
    entities: dict[str, str] = field(default_factory=dict)
    skeletons: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    relation_scores: list[float] = field(default_factory=list)
    class_scores: list[float] = field(default_factory=list)
    skeleton_beams: list[str] = field(default_factory=list)

    def bare(self) -> tuple[list[str], list[str]]:
        """(relations, classes) without their pairing: the detected ones, else those the pairs name."""
        named: list[str] = []
        for p in self.pairs:
            named += (
                [p.second]
                if p.kind == "class-relation"
                else [p.first]
                if p.kind == "relation-entity"
                else [p.first, p.second]
            )
        rels = self.relations or list(dict.fromkeys(base_relation(x) for x in named))
        classes = self.classes or list(dict.fromkeys(p.first for p in self.pairs if p.kind == "class-relation"))
        return rels, classes


def item_words(item: str) -> str:
    """A relation, class or hop as the target writes it: ``[ a , b ]`` or ``( reverse [ a , b ] )``."""
    inner = f"[ {schema_to_words(base_relation(item))} ]"
    return f"( reverse {inner} )" if item.startswith("(R ") else inner


def _domain(pair: Pair) -> str:
    return base_relation(pair.first).split(".")[0]


class DistractorPool:
    """The training split's gold pairs, by kind and domain, to sample distractors from.

    Args:
        examples: Training examples (those without a parseable gold S-expression are skipped).
    """

    def __init__(self, examples: Sequence[KBQAExample]) -> None:
        pairs: dict[Pair, None] = {}
        for ex in examples:
            if not ex.s_expression:
                continue
            try:
                pairs.update(dict.fromkeys(gold_pairs(ex.s_expression)))
            except SExprError:
                continue
        self.by_kind = {k: [p for p in pairs if p.kind == k] for k in PAIR_KINDS}
        self.relations = sorted({p.first for p in self.by_kind["relation-entity"]})

    def sample(self, gold: Sequence[Pair], entities: Sequence[str], n: int, rng: random.Random) -> list[Pair]:
        """Up to ``n`` distractor pairs per kind, not gold, same domain as a gold pair first."""
        gold_set = {(p.kind, p.first, p.second) for p in gold}
        domains = {_domain(p) for p in gold}
        out: list[Pair] = []
        for kind in PAIR_KINDS:
            if kind == "relation-entity":
                cands = [Pair(kind, r, e, 0.0) for r in self.relations for e in entities]
            else:
                cands = [Pair(kind, p.first, p.second, 0.0) for p in self.by_kind[kind]]
            cands = [p for p in cands if (p.kind, p.first, p.second) not in gold_set]
            near = [p for p in cands if _domain(p) in domains]
            far = [p for p in cands if _domain(p) not in domains]
            picked = rng.sample(near, min(n, len(near)))
            out += picked + rng.sample(far, min(n - len(picked), len(far)))
        return out


def _rng(seed: int, qid: str) -> random.Random:
    return random.Random(seed * 1_000_003 + zlib.crc32(qid.encode("utf-8")))


def training_components(
    ex: KBQAExample, pool: DistractorPool, num_distractors: int = 3, seed: int = 0
) -> Components | None:
    """Gold components plus sampled distractors (see the module docstring); ``None`` without a usable gold.

    Args:
        ex: A training example (or an evaluation example under ``oracle: components``).
        pool: Where distractors come from.
        num_distractors: Distractor pairs per kind.
        seed: Sampling seed (with the qid).
    """
    if not ex.s_expression:
        return None
    try:
        gold = gold_pairs(ex.s_expression)
        skeletons = top2_skeletons([lf_skeleton(ex.s_expression)])
    except SExprError:
        return None
    rng = _rng(seed, ex.qid)
    entities = {str(e): str(label) for e, label in ex.topic_entities.items()}
    pairs = [*gold, *pool.sample(gold, list(entities), num_distractors, rng)]
    by_kind = {k: [p for p in pairs if p.kind == k] for k in PAIR_KINDS}
    for kind in PAIR_KINDS:
        rng.shuffle(by_kind[kind])
    return Components([p for k in PAIR_KINDS for p in by_kind[k]], entities, skeletons)


def predicted_components(ex: KBQAExample) -> Components | None:
    """The components the FC pipeline wrote into ``meta["fc"]``; ``None`` when it wrote none.

    Raises:
        UserInputError: When ``meta["fc"]`` is malformed.
    """
    found: Any = ex.meta.get(FC_META)
    if found is None:
        return None
    try:
        pairs = [Pair(str(k), str(a), str(b), float(s)) for k, a, b, s in found.get("pairs", [])]  # type: ignore[arg-type]
        entities = {str(e): str(label) for e, label in dict(found.get("entities", {})).items()}
        skeletons = [str(s) for s in found.get("skeletons", [])]
        relations = [str(r) for r in found.get("relations", [])]
        classes = [str(c) for c in found.get("classes", [])]
        relation_scores = [float(x) for x in found.get("relation_scores", [])]
        class_scores = [float(x) for x in found.get("class_scores", [])]
        skeleton_beams = [str(x) for x in found.get("skeleton_beams", [])]
    except (TypeError, ValueError, AttributeError) as exc:
        raise UserInputError(f"{ex.qid}: malformed meta[{FC_META!r}]: {exc}") from exc
    if any(p.kind not in PAIR_KINDS for p in pairs):
        raise UserInputError(f"{ex.qid}: meta[{FC_META!r}] has a pair kind outside {PAIR_KINDS}")
    if (relation_scores and len(relation_scores) != len(relations)) or (
        class_scores and len(class_scores) != len(classes)
    ):
        raise UserInputError(f"{ex.qid}: meta[{FC_META!r}] has scores that do not match its relations or classes")
    return Components(pairs, entities, skeletons, relations, classes, relation_scores, class_scores, skeleton_beams)


def detected_training_components(examples: Sequence[KBQAExample], source: str) -> list[Components]:
    """Each training question's own ``meta["fc"]`` (``train_components: detected``) via :func:`predicted_components`.

    Args:
        examples: The training examples, as read from ``source``.
        source: Where they were read from (named in the error).

    Raises:
        UserInputError: When a question has no ``meta["fc"]`` (the file was not written by
            ``kbqa fc detect``), or it is malformed.
    """
    found = [predicted_components(ex) for ex in examples]
    missing = [ex.qid for ex, c in zip(examples, found, strict=True) if c is None]
    if missing:
        raise UserInputError(
            f"{source}: training question {missing[0]!r} has no meta[{FC_META!r}] ({len(missing)} of {len(examples)} "
            "have none); train_components: detected trains on what kbqa fc detect wrote: run kbqa fc detect on the "
            "training file and give its output as train_file, or set train_components: gold+distractors"
        )
    return [c for c in found if c is not None]


def components_meta(components: Components) -> dict[str, Any]:
    """The ``meta["fc"]`` form of components (what :func:`predicted_components` reads back)."""
    return {
        "pairs": [[p.kind, p.first, p.second, p.score] for p in components.pairs],
        "entities": dict(components.entities),
        "skeletons": list(components.skeletons),
        "relations": list(components.relations),
        "classes": list(components.classes),
        "relation_scores": list(components.relation_scores),
        "class_scores": list(components.class_scores),
        "skeleton_beams": list(components.skeleton_beams),
    }


def _slot_view(ex: KBQAExample, entities: Mapping[str, str]) -> KBQAExample:
    return dataclasses.replace(ex, topic_entities=dict(entities))


def _worded(pair: Pair) -> Pair:
    second = pair.second if pair.kind == "relation-entity" else item_words(pair.second)
    return Pair(pair.kind, item_words(pair.first), second, pair.score)


def composer_row(
    ex: KBQAExample,
    components: Components,
    gold: KBQAExample | None = None,
    knowledge: str = "pairs",
    use_skeletons: bool = True,
    mask_entities: bool = True,
    max_tokens: int | None = None,
    input_format: InputFormat = "paper",
) -> tuple[str, str | None]:
    """``(source, target)`` of one example; the target is ``None`` without a gold S-expression.

    Args:
        ex: The example as the stage may see it (its question).
        components: What the input names (training or predicted).
        gold: The example the target comes from (default ``ex``).
        knowledge: ``pairs`` (the KB-connected pairs), ``components`` (the relations and classes
            without their pairing, ``[REL]r``/``[CL]c`` after the question: the −knowledge-pairs
            ablation) or ``none`` (skeletons and entities only: the −knowledge ablation).
        use_skeletons: Write the skeletons (false: the −logical-skeleton ablation).
        mask_entities: Write the entities as slots ``[E0]``... in the input and the target.
        max_tokens: The input's length limit in whitespace words (pairs are cut, worst first).
        input_format: ``paper`` (§4.5, no relation–entity pairs) or ``entity-pairs`` (ours); see
            :mod:`~kbqa_lit.data.fc.composer_inputs`.

    Raises:
        UserInputError: For an unknown ``knowledge`` or ``input_format``.
    """
    gold = ex if gold is None else gold
    slots = topic_slots(_slot_view(ex, components.entities)) if mask_entities else []
    slot_of = {label.lower(): slot for slot, label in slots}
    names = {
        e: slot_of.get(label.lower(), label) if mask_entities else label for e, label in components.entities.items()
    }
    check_choice("knowledge", knowledge, KNOWLEDGE)
    check_input_format(input_format)
    pairs = [_worded(p) for p in (components.pairs if knowledge == "pairs" else [])]
    question = mask_text(ex.question, slots) if mask_entities else ex.question
    if knowledge == "components":
        rels, classes = components.bare()
        bare = [f"{MARK_CLASS}{item_words(c)}" for c in classes] + [f"{MARK_REL}{item_words(r)}" for r in rels]
        question = SEPARATOR.join([question, *bare])
    source = composer_input(
        question,
        pairs,
        list(components.entities),
        components.skeletons if use_skeletons else (),
        entity_text=names,
        max_tokens=max_tokens,
        input_format=input_format,
    )
    target: str | None = None
    if gold.s_expression:
        try:
            target = normalize_sexpr(gold.s_expression, gold.entity_labels())
        except SExprError:
            target = None
        if target is not None and mask_entities:
            target = mask_lf(target, slots)  # the input's slots: what the callback puts back
    return source, target


__all__ = [
    "FC_META",
    "KNOWLEDGE",
    "TRAIN_COMPONENTS",
    "Components",
    "DistractorPool",
    "components_meta",
    "composer_row",
    "detected_training_components",
    "item_words",
    "predicted_components",
    "training_components",
]
