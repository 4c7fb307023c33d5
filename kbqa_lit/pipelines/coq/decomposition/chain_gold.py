"""Gold decompositions from gold relation chains, where a dataset has none (MetaQA, PathQuestion).

The paper decomposes every question with few-shot ChatGPT (Fig. 3); on this machine the ``paper``
form stands it in by a small decomposer fine-tuned on the training split's gold decompositions
(:mod:`~kbqa_lit.pipelines.coq.decomposition.training_rows`). The synthetic world writes one per
question; MetaQA and PathQuestion write none, but every gold logical form there is a chain of
relations from the topic entity. :func:`chain_decomposition` writes that chain as the paper's
``[SUBQ] q1 [ANS] a1 [SUBQ] q2 [ANS] a2`` text:

- the k-th sub-question asks hop k of the (k-1)-th answer (the first: of the topic entity), worded
  as the training split's one-hop questions word that hop (MetaQA's ``who directed [mask]``), else
  from the relation's name (PathQuestion's ``what is the spouse of [mask]``:
  :mod:`kbqa_lit.data.chain_wording`, Keqing's template bank words its steps the same way);
- an intermediate answer is the path's entity where the dataset gives it (PathQuestion's
  ``meta.path``), else the placeholder ``#k``; the last answer is the gold answers' names.

It is a stand-in for a stand-in's training data, and says so: each filled example carries
``meta["decomposition_source"] = "chain"``. Only training and validation files are filled: test
questions are decomposed by the trained model from their own words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kbqa_lit.data.chain_wording import MASK, example_chain, synthesised_wording
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.lf.chains import Hop

#: Most gold answer names the last ``[ANS]`` lists.
MAX_ANSWERS = 5


def _intermediate(path: Sequence[str], k: int, hops: int) -> str | None:
    """The k-th intermediate entity of a PathQuestion path ``e0 r1 e1 ... rn en``, ``None`` without one."""
    if len(path) != 2 * hops + 1:
        return None
    return " ".join(str(path[2 * k]).replace("_", " ").split()) or None


def chain_decomposition(ex: KBQAExample, wordings: Mapping[Hop, Sequence[str]]) -> str | None:
    """The ``[SUBQ] ... [ANS] ...`` text of an example whose gold is a JOIN chain (``None`` otherwise).

    Args:
        ex: The example (its gold S-expression, topic entities, answers; PathQuestion's path).
        wordings: Each hop's wordings, most frequent first
            (:func:`~kbqa_lit.data.chain_wording.step_wordings` of the training split).
    """
    found = example_chain(ex)
    if found is None:
        return None
    seed, chain = found
    subject = ex.topic_entities.get(seed) or seed
    path = list(ex.meta.get("path") or [])
    parts: list[str] = []
    for k, hop in enumerate(chain, 1):
        options = wordings.get(hop)
        wording = options[0] if options else synthesised_wording(hop)
        question = " ".join(wording.replace(MASK, subject).split()).rstrip(" ?") + "?"
        if k == len(chain):
            answer = ", ".join(a.name or a.id for a in ex.answers[:MAX_ANSWERS]) or f"#{k}"
        else:
            answer = _intermediate(path, k, len(chain)) or f"#{k}"
        parts.append(f"[SUBQ] {question} [ANS] {answer}")
        subject = answer
    return " ".join(parts)


def fill_chain_decompositions(
    examples: Iterable[KBQAExample], wordings: Mapping[Hop, Sequence[str]]
) -> tuple[list[KBQAExample], int]:
    """The examples, each without a gold decomposition given one from its chain; and how many were filled."""
    out: list[KBQAExample] = []
    filled = 0
    for ex in examples:
        if not (ex.decomposition and ex.decomposition.strip()):
            text = chain_decomposition(ex, wordings)
            if text is not None:
                ex.decomposition = text
                ex.meta["decomposition_source"] = "chain"
                filled += 1
        out.append(ex)
    return out, filled


__all__ = ["MAX_ANSWERS", "chain_decomposition", "fill_chain_decompositions"]
