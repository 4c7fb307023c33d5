"""Turn templates into questions whose gold answers come from executing their S-expressions.

For each template the binder's candidates are shuffled with the world's generator and tried in
turn; templates take turns (round robin) so every template is represented. A candidate becomes a
:class:`Draft` only when every step of its decomposition executes to a non-empty answer set, the
final set has at most ``max_answers`` members, intermediate sets at most ``max_intermediate``, and
no earlier draft has the same S-expression. Answers are always what the executor returns.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.data.synthetic.bindings import Binding
from kbqa_lit.data.synthetic.kb import World
from kbqa_lit.data.synthetic.templates import Template
from kbqa_lit.kb.lf.iri import is_entity_id
from kbqa_lit.kb.lf.sexpr import parse_sexpr, schema_items

#: Runs one S-expression and returns its answers (ids or literal lexical values).
Executor = Callable[[str], list[str]]

DATASET = "synthetic"
SEMANTICS = "exclude-topic"
ALIAS_MENTION_RATE = 0.2


@dataclass
class Draft:
    """A generated question before it is given a split and a qid.

    Attributes:
        template: The template it came from.
        paraphrase: Index of the paraphrase used.
        question: The question text.
        s_expression: The gold S-expression.
        answers: Gold answers, sorted by name then id.
        topic_entities: Topic entity ids and their names, in slot order.
        decomposition: The gold progressive decomposition.
        relations: Relations of the S-expression.
        classes: Classes of the S-expression.
    """

    template: Template
    paraphrase: int
    question: str
    s_expression: str
    answers: list[Answer]
    topic_entities: dict[str, str]
    decomposition: str
    relations: frozenset[str] = field(default_factory=frozenset)
    classes: frozenset[str] = field(default_factory=frozenset)

    def to_example(self, qid: str, split: str, generalization: str | None = None) -> KBQAExample:
        """Return the :class:`KBQAExample` of this question."""
        meta: dict[str, object] = {
            "dataset": DATASET,
            "semantics": SEMANTICS,
            "split": split,
            "template": self.template.id,
            "paraphrase": self.paraphrase,
            "hops": self.template.hops,
            "function": self.template.function,
        }
        if generalization is not None:
            meta["generalization"] = generalization
        return KBQAExample(
            qid=qid,
            question=self.question,
            answers=list(self.answers),
            topic_entities=dict(self.topic_entities),
            s_expression=self.s_expression,
            decomposition=self.decomposition,
            meta=meta,
        )


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def join_names(answers: Sequence[Answer]) -> str:
    """Answer names joined with `` | `` (the separator of CoQ decompositions)."""
    return " | ".join(a.name for a in answers)


class QuestionMaker:
    """Instantiate templates over one world with one executor.

    Args:
        world: The world (names, aliases, and the sets binders read).
        rng: The world's seeded generator.
        execute: Runs an S-expression on the store built from the world's ``kb.nt``.
        max_answers: Largest answer set a question may have.
        max_intermediate: Largest answer set of an intermediate decomposition step.
    """

    def __init__(
        self,
        world: World,
        rng: random.Random,
        execute: Executor,
        max_answers: int = 20,
        max_intermediate: int = 30,
    ) -> None:
        self.world = world
        self.rng = rng
        self.execute = execute
        self.max_answers = max_answers
        self.max_intermediate = max_intermediate
        self.seen: set[str] = set()
        self.executed = 0

    def answers_of(self, ids: list[str]) -> list[Answer]:
        """Wrap executed answers as :class:`Answer` s (entities named from the world), sorted by name, id."""
        out = []
        for a in ids:
            ent = self.world.entities.get(a) if is_entity_id(a) else None
            if ent is not None:
                out.append(Answer(id=a, name=ent.name or a, kind="entity"))
            else:
                out.append(Answer(id=a, name=a, kind="literal"))
        return sorted(out, key=lambda x: (x.name, x.id))

    def _mention(self, eid: str) -> str:
        ent = self.world.entities[eid]
        if ent.aliases and self.rng.random() < ALIAS_MENTION_RATE:
            return self.rng.choice(ent.aliases)
        return ent.name or eid

    def instantiate(self, template: Template, binding: Binding) -> Draft | None:
        """Make a question of ``template`` with ``binding``, or ``None`` when it is not meaningful."""
        ids = {f"e{i}": e for i, e in enumerate(binding.entities)}
        lit_token = binding.literal or ""
        sexprs: list[str] = []
        prev = ""
        for step in template.steps:
            prev = step.sexpr.format(prev=prev, lit=lit_token, **ids)
            sexprs.append(prev)
        gold = sexprs[-1]
        if gold in self.seen:
            return None
        parse_sexpr(gold)  # a template bug must fail loudly here, not on the store
        final = self._run(gold)
        if not final or len(final) > self.max_answers:
            return None
        step_answers: list[list[Answer]] = []
        for sexpr in sexprs[:-1]:
            got = self._run(sexpr)
            if not got or len(got) > self.max_intermediate:
                return None
            step_answers.append(self.answers_of(got))
        answers = self.answers_of(final)
        if any(a.kind == "entity" and self.world.entities[a.id].is_cvt for a in answers):
            return None
        if template.function == "count" and answers[0].id in ("0", ""):
            return None
        step_answers.append(answers)

        mentions = {k: self._mention(e) for k, e in ids.items()}
        lit_text = binding.literal_text or ""
        k = self.rng.randrange(len(template.paraphrases))
        question = _capitalize(template.paraphrases[k].format(lit=lit_text, **mentions))
        parts = []
        prev_names = ""
        for step, got in zip(template.steps, step_answers, strict=True):
            subq = step.subq.format(prev=prev_names, lit=lit_text, **mentions)
            prev_names = join_names(got)
            parts.append(f"[SUBQ] {subq} [ANS] {prev_names}")
        items = schema_items(gold)
        self.seen.add(gold)
        return Draft(
            template=template,
            paraphrase=k,
            question=question,
            s_expression=gold,
            answers=answers,
            topic_entities={e: self.world.name(e) for e in binding.entities},
            decomposition=" ".join(parts),
            relations=frozenset(items.relations),
            classes=frozenset(items.classes),
        )

    def _run(self, sexpr: str) -> list[str]:
        self.executed += 1
        return self.execute(sexpr)

    def generate(self, templates: Sequence[Template], total: int, tries_per_turn: int = 40) -> list[Draft]:
        """Make up to ``total`` questions from ``templates``, taking turns between templates.

        Args:
            templates: The templates to draw from.
            total: How many questions to make.
            tries_per_turn: Candidates a template may try in one turn before passing.

        Returns:
            The drafts in generation order.
        """
        pools: list[tuple[Template, Iterator[Binding]]] = []
        for t in templates:
            candidates = t.binder(self.world, self.rng)
            self.rng.shuffle(candidates)
            pools.append((t, iter(candidates)))
        out: list[Draft] = []
        while pools and len(out) < total:
            still: list[tuple[Template, Iterator[Binding]]] = []
            for template, candidates in pools:
                if len(out) >= total:
                    still.append((template, candidates))
                    continue
                made, exhausted = None, False
                for _ in range(tries_per_turn):
                    binding = next(candidates, None)
                    if binding is None:
                        exhausted = True
                        break
                    made = self.instantiate(template, binding)
                    if made is not None:
                        break
                if made is not None:
                    out.append(made)
                if not exhausted:
                    still.append((template, candidates))
            pools = still
        return out
