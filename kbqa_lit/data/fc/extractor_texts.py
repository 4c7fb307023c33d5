"""FC-KBQA's extractor inputs: relation and class items, readable names, same-domain negatives.

The relation extractor reads ``q [D] domain-class(r) [N] name(r) [R] range-class(r)`` and the
class extractor ``q [D] domain [N] class-name`` (the paper gives no class format; this is ours).
Readable names are the **last dotted segment with underscores as spaces**:
``people.person.place_of_birth`` → ``place of birth``, ``film.film_genre`` → ``film genre``,
``type.datetime`` → ``datetime``. A relation's domain and range classes come from the ontology;
a relation the ontology does not know takes its id without the last segment as domain class
(Freebase's convention: ``people.person.place_of_birth`` → ``people.person``) and an empty range.
The *domain* of a class (and the negative-sampling domain of a relation) is the first dotted
segment of its id (``film.film_genre`` → ``film``).

The cross-encoder reads the text as the pair ``(q, item)`` —
``[CLS] q [SEP] [D] ... [N] ... [R] ... [SEP]`` — so BERT's separator and segment ids set the
question apart; the markers stay plain text (no new embeddings, any tokenizer works unchanged).
:func:`extractor_text` joins the pair as the paper writes it, for display.

Negatives (:func:`same_domain_negatives`): ``k`` items of the positive's domain (48 by default,
the paper's), drawn without the gold items; when the domain has fewer, every one of them plus a
random draw from the other domains. Draws use ``random.Random(f"{seed}:{key}")``, so a group is
the same on every run, rank and worker.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence

from kbqa_lit.kb.lf.normalize import schema_name
from kbqa_lit.kb.lf.ontology import Ontology

MARK_DOMAIN, MARK_NAME, MARK_RANGE = "[D]", "[N]", "[R]"
#: The paper's negatives per positive.
DEFAULT_NEGATIVES = 48


#: The last dotted segment of a schema id, underscores as spaces (the shared :func:`schema_name`).
readable_name = schema_name


def schema_domain(schema_id: str) -> str:
    """The first dotted segment of a relation or class id (``people.person.nationality`` → ``people``)."""
    return schema_id.split(".", 1)[0]


def relation_domain_class(relation: str, ontology: Ontology | None) -> str:
    """The relation's domain class: the ontology's, else its id without the last segment."""
    known = ontology.domain(relation) if ontology is not None else None
    return known or relation.rsplit(".", 1)[0]


def relation_item(relation: str, ontology: Ontology | None) -> str:
    """``[D] domain-class [N] name [R] range-class`` of a relation, with readable names."""
    rng = ontology.range(relation) if ontology is not None else None
    dom = readable_name(relation_domain_class(relation, ontology))
    return " ".join(
        t for t in (MARK_DOMAIN, dom, MARK_NAME, readable_name(relation), MARK_RANGE, readable_name(rng or "")) if t
    )


def class_item(cls: str) -> str:
    """``[D] domain [N] class-name`` of a class (``film.film_genre`` → ``[D] film [N] film genre``)."""
    return f"{MARK_DOMAIN} {schema_domain(cls)} {MARK_NAME} {readable_name(cls)}"


def extractor_text(question: str, item: str) -> str:
    """The paper's single text ``q [D] ... [N] ...`` (the model reads ``(q, item)`` as a pair)."""
    return f"{' '.join(question.split())} {item}"


def same_domain_negatives(
    positive: str,
    pool: Sequence[str],
    exclude: Collection[str] = (),
    k: int = DEFAULT_NEGATIVES,
    seed: int | str = 0,
    key: str = "",
) -> list[str]:
    """``k`` negatives of ``positive`` from ``pool``: its domain first, other domains when too few.

    Args:
        positive: The gold item (a relation or class id).
        pool: Every candidate item (the inventory), in a fixed order.
        exclude: Items that may not be negatives (the example's gold items; ``positive`` always is).
        k: Negatives wanted; fewer come back when the pool is smaller.
        seed: The sampling seed.
        key: Makes the draw specific to a group (e.g. the question id).

    Returns:
        The same-domain negatives (in draw order), then the other-domain fill.
    """
    banned = set(exclude) | {positive}
    domain = schema_domain(positive)
    items = list(dict.fromkeys(x for x in pool if x not in banned))
    same = [x for x in items if schema_domain(x) == domain]
    rng = random.Random(f"{seed}:{key}:{positive}")
    if len(same) >= k:
        return rng.sample(same, k)
    others = [x for x in items if schema_domain(x) != domain]
    return rng.sample(same, len(same)) + rng.sample(others, min(k - len(same), len(others)))


__all__ = [
    "DEFAULT_NEGATIVES",
    "MARK_DOMAIN",
    "MARK_NAME",
    "MARK_RANGE",
    "class_item",
    "extractor_text",
    "readable_name",
    "relation_domain_class",
    "relation_item",
    "same_domain_negatives",
    "schema_domain",
]
