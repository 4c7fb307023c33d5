"""The ``path_constraints`` extension: the KB-path search also ranks two-entity joins and class-restricted paths.

The KB-path search (:mod:`~kbqa_lit.pipelines.selection.path_fallback`) ranks chains that start
at one linked entity. Two kinds of question are not such chains, and a system whose own answers
are chains (Keqing's sub-question chains) or whose generator missed them falls back to a wrong one:

- **two entities at one node**: "When did Basil Maddox join the Dragons?" is
  ``(JOIN (R roster.from) (AND (JOIN roster.player e1) (JOIN roster.team e2)))``; the chains of
  either entity alone answer every roster of the player, or of the team. With this extension the
  search adds, for each pair of linked entities, the forms that meet both at one node and go one hop
  beyond it (:func:`~kbqa_lit.kb.index.joins.entity_joins`); their words are their relations'.
- **a class among the answers**: "Name the actors born in Valonfield" is
  ``(AND film.actor (JOIN place_of_birth e))``: the chain answers everyone born there. For each of
  the best-ranked candidates, the classes that some but not all of its answers have
  (:func:`class_counts`) each make a restricted candidate ``(AND class form)`` whose words are the
  class's followed by the form's.

The new candidates are scored like the paths (the sentence encoder's cosine with the question) and
ranked with them, **forms that use both entities first**: a form that ties two linked entities
together explains more of the question than a chain from one of them (Keqing on the synthetic
world's dev split: ranking by cosine alone fixed 7 of the 14 questions that this order fixes, and
this order broke none). The order trusts the linker: two wrongly linked entities that share a node
(two teams of one sport) make a form that ranks first — what TFS-KBQA's linking stand-in does, which
is why the extension is in Keqing's ``extended`` preset alone (docs/architecture.md). Only the linked
entities, the KB and the question are read.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.errors import EndpointUnreachableError, StoreError
from kbqa_lit.kb.index.joins import entity_joins
from kbqa_lit.kb.lf.iri import NS, TYPE_RELATION, is_entity_id, local_id
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql

#: Linked entities whose pairs are joined (the linker's first ones).
MAX_JOINED = 3
#: Entity answers whose classes are counted per candidate.
CLASS_SAMPLE = 200
#: Classes that never restrict (every entity has them).
_GENERIC = frozenset({"common.topic", "base.type_ontology.abstract", "base.type_ontology.non_agent"})


@dataclass(frozen=True)
class Candidate:
    """A form the path search ranks.

    Attributes:
        sexpr: The S-expression.
        schema: The class and relation ids, in reading order (their words are ranked).
        entities: How many linked entities it uses (forms that use more rank first).
    """

    sexpr: str
    schema: tuple[str, ...]
    entities: int = 1


def join_candidates(kb: object, linked: Sequence[str]) -> tuple[list[Candidate], list[str]]:
    """The two-entity joins of each pair of the first :data:`MAX_JOINED` linked entities, and read errors."""
    out: dict[str, Candidate] = {}
    errors: list[str] = []
    for a, b in itertools.combinations(list(dict.fromkeys(linked))[:MAX_JOINED], 2):
        try:
            forms = entity_joins(kb, a, b)
        except EndpointUnreachableError:
            raise
        except StoreError as exc:
            errors.append(str(exc))
            continue
        for form in forms:
            out.setdefault(form.sexpr, Candidate(form.sexpr, form.relations, 2))
    return list(out.values()), errors


def class_counts(kb: object, sexpr: str, sample: int = CLASS_SAMPLE) -> tuple[int, dict[str, int]]:
    """How many entity answers ``sexpr`` has (up to ``sample``) and how many of those have each class.

    Raises:
        StoreError: When a query fails.
    """
    result = kb.execute(sexpr_to_sparql(sexpr))  # type: ignore[attr-defined]
    if not result.ok:
        raise StoreError(f"could not execute {sexpr}: {result.error}")
    ids = [a for a in dict.fromkeys(result.answers) if is_entity_id(a)][:sample]
    if not ids:
        return 0, {}
    values = " ".join(f"<{NS}{i}>" for i in ids)
    query = (
        f'SELECT (CONCAT(STR(?c), "\\t", STR(COUNT(DISTINCT ?x))) AS ?v) '
        f"WHERE {{ VALUES ?x {{ {values} }} ?x <{NS}{TYPE_RELATION}> ?c }} GROUP BY ?c"
    )
    counted = kb.execute(query)  # type: ignore[attr-defined]
    if not counted.ok:
        raise StoreError(f"could not read the classes of {len(ids)} answers: {counted.error}")
    out: dict[str, int] = {}
    for value in counted.answers:
        cls, _, n = str(value).rpartition("\t")
        if cls and n.isdigit():
            out[local_id(cls)] = int(n)
    return len(ids), out


def restricted(kb: object, candidates: Sequence[Candidate]) -> tuple[list[Candidate], list[str]]:
    """``(AND class form)`` for each class that some but not all of a candidate's entity answers have."""
    out: list[Candidate] = []
    errors: list[str] = []
    for cand in candidates:
        try:
            total, counts = class_counts(kb, cand.sexpr)
        except EndpointUnreachableError:
            raise
        except StoreError as exc:
            errors.append(str(exc))
            continue
        for cls in sorted(counts):
            if 0 < counts[cls] < total and cls not in _GENERIC:
                out.append(Candidate(f"(AND {cls} {cand.sexpr})", (cls, *cand.schema), cand.entities))
    return out, errors


__all__ = ["CLASS_SAMPLE", "MAX_JOINED", "Candidate", "class_counts", "join_candidates", "restricted"]
