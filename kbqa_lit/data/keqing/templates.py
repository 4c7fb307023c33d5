"""Question templates and their logical chains, mined from training examples.

Keqing's templates are sub-question texts with the entity slot written ``[mask]``; each template
owns the logical chains it asks for. The paper writes its templates by hand; kbqa_lit mines them
from the training split (our choice, the same recipe for every dataset):

1. every training example whose gold S-expression is a chain of JOINs from one topic entity
   (:func:`~kbqa_lit.kb.lf.chains.chain_from_sexpr`) gives a pair (masked question, chain),
   the masked question being the question with its topic mention replaced by ``[mask]``
   (MetaQA's bracketed entity, the entity's name elsewhere; PathQuestion writes names with
   underscores, which count as spaces);
2. each chain is assigned to its most frequent template, then the map is inverted: template →
   chains (:attr:`TemplateBank.chains`);
3. each one-hop chain (a *step*) keeps its templates by frequency (:attr:`TemplateBank.steps`):
   they are the wordings a decomposition's sub-questions use. A step that no one-hop training
   question asks for (a relation met only inside longer chains, or a dataset without one-hop
   questions such as PathQuestion) gets a synthesised wording from the relation's name —
   ``what is the {relation words} of [mask]`` forward, ``what has {relation words} [mask]``
   backward — registered as that step's template.

Examples that are not chains (constraints, functions, several entities) are counted and skipped.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kbqa_lit.atomic import write_json_atomic
from kbqa_lit.data.chain_wording import example_chain, mask_question, synthesised_wording, topic_mentions
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.chains import Chain, Hop, chain_text, parse_chain

BANK_FORMAT = 1


def chain_examples(examples: Iterable[KBQAExample], skipped: Counter[str]) -> Iterator[tuple[KBQAExample, str, Chain]]:
    """``(example, seed, chain)`` of each example whose gold is a JOIN chain (:func:`example_chain`).

    Args:
        examples: The examples, read lazily.
        skipped: Counts each other example under ``"not a JOIN chain"`` as it is passed.

    Yields:
        The chain examples in order.

    """
    for ex in examples:
        found = example_chain(ex)
        if found is None:
            skipped["not a JOIN chain"] += 1
            continue
        yield ex, *found


@dataclass
class TemplateBank:
    """Templates, the chains each owns, and each step's wordings.

    Attributes:
        chains: Template text → the chains assigned to it (most frequent first).
        steps: One-hop chain text (``r>`` or ``<r``) → its templates, most frequent first.
        counts: Template text → how many training questions it came from.
        skipped: Training examples that gave no (template, chain) pair, by reason.
    """

    chains: dict[str, list[Chain]] = field(default_factory=dict)
    steps: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def templates(self) -> list[str]:
        """Every template text, in a fixed order (chain-owning templates first, by count)."""
        owned = sorted(self.chains, key=lambda t: (-self.counts.get(t, 0), t))
        rest = sorted({t for ts in self.steps.values() for t in ts} - set(owned))
        return owned + rest

    def chains_of(self, template: str) -> list[Chain]:
        """The chains ``template`` owns (a step-only template owns its step)."""
        if template in self.chains:
            return self.chains[template]
        return [parse_chain(step) for step, ts in self.steps.items() if template in ts]

    def step_template(self, hop: Hop) -> str:
        """The wording of a step: its most frequent template, else a synthesised one."""
        wordings = self.steps.get(str(hop))
        return wordings[0] if wordings else synthesised_wording(hop)

    def add_synthesised_steps(self, hops: Iterable[Hop]) -> None:
        """Give every step of ``hops`` without a wording its synthesised template."""
        for hop in hops:
            if str(hop) not in self.steps:
                self.steps[str(hop)] = [synthesised_wording(hop)]

    def to_json(self) -> dict[str, object]:
        """The bank as JSON (``format``, ``templates``, ``steps``, ``skipped``)."""
        return {
            "format": BANK_FORMAT,
            "templates": [
                {"text": t, "count": self.counts.get(t, 0), "chains": [chain_text(c) for c in self.chains.get(t, [])]}
                for t in self.templates
            ],
            "steps": self.steps,
            "skipped": self.skipped,
        }

    def save(self, path: str | Path) -> Path:
        """Write the bank as JSON, atomically."""
        return write_json_atomic(path, self.to_json(), indent=1)

    @classmethod
    def load(cls, path: str | Path) -> TemplateBank:
        """Read a bank written by :meth:`save`.

        Raises:
            DataFormatError: The file is not a template bank of this format.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DataFormatError(path, None, f"not a readable template bank: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != BANK_FORMAT:
            raise DataFormatError(path, None, f"not a template bank of format {BANK_FORMAT}")
        bank = cls(steps={k: list(v) for k, v in data.get("steps", {}).items()}, skipped=dict(data.get("skipped", {})))
        for i, row in enumerate(data.get("templates", [])):
            try:
                text = row["text"]
                bank.counts[text] = int(row.get("count", 0))
                if row.get("chains"):
                    bank.chains[text] = [parse_chain(c) for c in row["chains"]]
            except (KeyError, TypeError, ValueError) as exc:
                raise DataFormatError(path, f"templates[{i}]", str(exc)) from None
        return bank


def mine_templates(examples: Iterable[KBQAExample]) -> TemplateBank:
    """Mine a :class:`TemplateBank` from training examples (see the module docstring)."""
    pair_counts: Counter[tuple[str, Chain]] = Counter()
    skipped: Counter[str] = Counter()
    all_hops: set[Hop] = set()
    for ex, seed, chain in chain_examples(examples, skipped):
        template = mask_question(ex.question, topic_mentions(ex, seed))
        if template is None:
            skipped["topic mention not in the question"] += 1
            continue
        pair_counts[(template, chain)] += 1
        all_hops.update(chain)
    by_chain: dict[Chain, Counter[str]] = defaultdict(Counter)
    counts: Counter[str] = Counter()
    for (template, chain), n in pair_counts.items():
        by_chain[chain][template] += n
        counts[template] += n
    bank = TemplateBank(counts=dict(counts), skipped=dict(skipped))
    owned: dict[str, Counter[Chain]] = defaultdict(Counter)
    for chain, templates in by_chain.items():
        best = min(templates, key=lambda t: (-templates[t], t))
        owned[best][chain] = sum(templates.values())
        if len(chain) == 1:
            bank.steps[str(chain[0])] = sorted(templates, key=lambda t: (-templates[t], t))
    bank.chains = {
        t: [c for c, _ in sorted(cs.items(), key=lambda x: (-x[1], chain_text(x[0])))] for t, cs in owned.items()
    }
    bank.add_synthesised_steps(sorted(all_hops))
    return bank


__all__ = [
    "TemplateBank",
    "chain_examples",
    "example_chain",
    "mask_question",
    "mine_templates",
]
