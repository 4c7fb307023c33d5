"""Wording of relation chains: masked questions and one wording per hop, shared by the systems that need them.

A question whose gold S-expression is a chain of JOINs from one topic entity
(:func:`~kbqa_lit.kb.lf.chains.chain_from_sexpr`: MetaQA, PathQuestion, most synthetic questions)
says each hop somewhere in its words. Keqing's template bank (:mod:`kbqa_lit.data.keqing.templates`)
and CoQ's chain decompositions (:mod:`kbqa_lit.pipelines.coq.decomposition.chain_gold`) both word a hop
the same way:

- a one-hop training question with its topic mention replaced by a slot (``who directed [mask]``)
  is a wording of its hop (:func:`mask_question`, :func:`step_wordings`);
- a hop that no one-hop training question asks (a relation met only inside longer chains, or a
  dataset without one-hop questions such as PathQuestion) is worded from the relation's name:
  ``what is the {relation words} of [mask]`` forward, ``what has {relation words} [mask]`` backward
  (:func:`synthesised_wording`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import SExprError
from kbqa_lit.kb.lf.chains import Chain, Hop, chain_from_sexpr

#: The slot a masked question or wording writes where the topic entity (or an earlier answer) goes.
MASK = "[mask]"
_BRACKETED = re.compile(r"\[([^\]]+)\]")


def relation_words(relation: str) -> str:
    """A relation's readable name: its last dotted segment, underscores as spaces."""
    return relation.rsplit(".", 1)[-1].replace("_", " ")


def synthesised_wording(hop: Hop) -> str:
    """The wording of a hop no one-hop training question asks for, from the relation's name."""
    words = relation_words(hop.relation)
    return f"what is the {words} of {MASK}" if hop.forward else f"what has {words} {MASK}"


def _norm(text: str) -> str:
    return " ".join(text.replace("_", " ").lower().split())


def mask_question(question: str, mentions: Iterable[str]) -> str | None:
    """The question with its topic mention replaced by ``[mask]``, or ``None`` when not found.

    A bracketed span (MetaQA's ``[Temuera Morrison]``) is the mention when there is one; else the
    first of ``mentions`` that occurs in the question (case-insensitive, ``_`` read as a space).
    The result is lower-cased with single spaces.
    """
    bracketed = _BRACKETED.findall(question)
    if len(bracketed) == 1:
        return _norm(_BRACKETED.sub(MASK, question))
    norm_q = _norm(question)
    for mention in mentions:
        m = _norm(mention)
        if m and re.search(rf"(?<!\w){re.escape(m)}(?!\w)", norm_q):
            return re.sub(rf"(?<!\w){re.escape(m)}(?!\w)", MASK, norm_q, count=1)
    return None


def example_chain(ex: KBQAExample) -> tuple[str, Chain] | None:
    """``(seed, chain)`` of an example whose gold S-expression is a JOIN chain, else ``None``."""
    if not ex.s_expression:
        return None
    try:
        found = chain_from_sexpr(ex.s_expression)
    except SExprError:
        return None
    if found is None or (ex.topic_entities and found[0] not in ex.topic_entities):
        return None
    return found


def topic_mentions(ex: KBQAExample, seed: str) -> list[str]:
    """How the question may name its seed: the entity's name, and PathQuestion's path head as written."""
    mentions = [ex.topic_entities.get(seed, "")] + list((ex.meta.get("path") or [])[:1])
    return [m for m in mentions if m]


def step_wordings(examples: Iterable[KBQAExample]) -> dict[Hop, list[str]]:
    """Each hop's wordings from the one-hop chain questions among ``examples``, most frequent first."""
    counts: dict[Hop, Counter[str]] = defaultdict(Counter)
    for ex in examples:
        found = example_chain(ex)
        if found is None or len(found[1]) != 1:
            continue
        wording = mask_question(ex.question, topic_mentions(ex, found[0]))
        if wording is not None:
            counts[found[1][0]][wording] += 1
    return {hop: sorted(c, key=lambda t: (-c[t], t)) for hop, c in counts.items()}


__all__ = [
    "MASK",
    "example_chain",
    "mask_question",
    "relation_words",
    "step_wordings",
    "synthesised_wording",
    "topic_mentions",
]
