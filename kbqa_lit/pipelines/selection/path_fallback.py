"""The KB-path fallback: when no beam executes, rank the linked entities' relation paths by meaning.

A generator trained on a few thousand questions never writes a relation that no training question
used (the synthetic world's zero-shot questions), and often drops a hop it has not seen combined
(compositional ones): every beam then comes back empty. Before giving up (or answering with the
generated text), :class:`PathFallback` looks at what the KB has around the linked entities:

1. every one- and two-hop relation path from each linked entity
   (:func:`~kbqa_lit.kb.index.paths.relation_paths`; executable by construction);
2. each path as words, its relations' last two segments joined
   (``music.album.artist`` then ``people.person.place_of_birth`` → ``album artist person place of birth``);
3. the cosine between a pretrained sentence encoder's embedding of the question (the linked
   mentions removed) and of each path's words — all-MiniLM-L6-v2 by default, used as it comes,
   untrained on any KBQA data;
4. the paths best first (ties: the linker's entity order, then one hop before two); when the
   generator's first beam counts (``(COUNT …)``), every path is counted too.

The ranked S-expressions are then executed in order like beams. This uses the question, the
linked entities and the beams — never a gold field. The path texts' embeddings are cached per process.

**Override** (``override_margin``, off by default): when the chosen beam executes but is a plain
chain of joins from a linked entity (``(JOIN (R r2) (JOIN r1 e))`` …), its relations are scored
the same way; when the best path's cosine exceeds the beam's own by more than the margin, the
path's answers replace the beam's. A generator that writes a relation it knows where the question
asks for another (``place of birth`` for "nationality of X's spouse") is corrected; with a wide
margin, chains the generator got right are left alone (the margin is chosen on a validation set).

**Constraints** (``constraints``, the ``path_constraints`` extension, off by default): the ranked
forms also include two-entity joins and class-restricted paths, and forms that use both of two
linked entities rank first (:mod:`~kbqa_lit.pipelines.selection.path_constraints`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import torch

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.backbones.sentence_encoder import CachedEmbeddings, SentenceEncoder
from kbqa_lit.errors import EndpointUnreachableError, StoreError, UserInputError, check_choice
from kbqa_lit.kb.index.paths import RelationPath, mediator_paths, relation_paths
from kbqa_lit.kb.lf.chains import chain_from_sexpr
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, Selection, fallback_answers
from kbqa_lit.pipelines.selection.path_constraints import Candidate, join_candidates, restricted

_COUNT = re.compile(r"^\s*\(\s*count\b", re.IGNORECASE)


def path_words(path: RelationPath) -> str:
    """A path as words: each relation's last two dotted segments, ``_`` as spaces, hops in order."""
    return _words(path.relations)


def _words(relations: Iterable[str]) -> str:
    words: list[str] = []
    for rel in relations:
        words.extend(" ".join(rel.split(".")[-2:]).replace("_", " ").split())
    return " ".join(words)


def question_without_mentions(question: str, labels: Sequence[str]) -> str:
    """The question with each linked label removed (case-insensitive), longest first; spaces squeezed."""
    out = question
    for label in sorted({str(x) for x in labels if str(x).strip()}, key=len, reverse=True):
        out = re.sub(re.escape(label), " ", out, flags=re.IGNORECASE)
    return " ".join(out.split()) or question


class PathFallback:
    """Rank the relation paths of a question's linked entities by their similarity to the question.

    Args:
        encoder: Sentence encoder name or folder (all-MiniLM-L6-v2 offline by default).
        max_hops: Longest path considered (1 or 2).
        max_candidates: How many ranked S-expressions :meth:`rank` returns at most.
        limit: Per entity, at most this many paths are kept (the KB reads themselves are bounded by
            :class:`~kbqa_lit.kb.index.neighbourhood.Caps`, whatever the KB's size).
        override_margin: When set, a chosen beam that is a plain join chain is replaced by the
            best path whose cosine exceeds the chain's own by more than this (see the module
            docstring); ``None``: beams that execute are never replaced.
        constraints: Also rank two-entity joins and class-restricted paths, forms that use more
            linked entities first (:mod:`~kbqa_lit.pipelines.selection.path_constraints`).

    Raises:
        UserInputError: When ``max_hops`` is not 1 or 2, ``max_candidates < 1`` or
            ``override_margin < 0``.
    """

    def __init__(
        self,
        encoder: str = MINILM,
        max_hops: int = 2,
        max_candidates: int = 5,
        limit: int = 20000,
        override_margin: float | None = None,
        constraints: bool = False,
    ) -> None:
        check_choice("max_hops", max_hops, (1, 2), where="path fallback")
        if max_candidates < 1:
            raise UserInputError(f"path fallback: max_candidates must be >= 1, got {max_candidates!r}")
        if override_margin is not None and override_margin < 0:
            raise UserInputError(f"path fallback: override_margin must be >= 0, got {override_margin!r}")
        self.override_margin = None if override_margin is None else float(override_margin)
        self.constraints = bool(constraints)
        self.encoder_name = encoder
        self.max_hops = int(max_hops)
        self.max_candidates = int(max_candidates)
        self.limit = int(limit)
        self._texts = CachedEmbeddings(encoder)
        self._last_query: tuple[str, torch.Tensor] | None = None

    @property
    def encoder(self) -> SentenceEncoder:
        """The sentence encoder, loaded on first use."""
        return self._texts.model

    def __getstate__(self) -> dict[str, object]:  # the encoder reloads in a copy (e.g. a spawned rank)
        return {**self.__dict__, "_last_query": None}

    def paths(
        self, kb: object, entities: Sequence[str], mediators: bool = False
    ) -> tuple[list[RelationPath], list[str]]:
        """The paths of each entity in order, and the errors of entities whose paths could not be read.

        With ``mediators``, each entity's three-hop paths through a nameless node
        (:func:`~kbqa_lit.kb.index.paths.mediator_paths`) follow its one- and two-hop ones.
        """
        out: list[RelationPath] = []
        errors: list[str] = []
        for entity in dict.fromkeys(entities):
            try:
                out.extend(relation_paths(kb, entity, self.max_hops, self.limit))
                if mediators:
                    out.extend(mediator_paths(kb, entity, self.limit))
            except EndpointUnreachableError:
                raise  # the endpoint is down (past its retry window): stop, do not answer without the paths
            except StoreError as exc:
                errors.append(str(exc))
        return out, errors

    def _similarities(self, question: str, linked: Mapping[str, str], texts: Sequence[str]) -> list[float]:
        query = question_without_mentions(question, list(linked.values()))
        if self._last_query is None or self._last_query[0] != query:  # the override scores a question twice
            self._last_query = (query, self.encoder.encode([query])[0])
        return (self._texts.embed(texts) @ self._last_query[1]).tolist()

    def _override(
        self,
        selector: ExecutionGuidedSelector,
        sel: Selection,
        question: str,
        linked: Mapping[str, str],
        beams: Sequence[str],
        semantics: str,
    ) -> Selection:
        """``sel``, or the best path's selection when it beats the chosen chain by the margin."""
        # chosen_sexpr executed, so it parses; None: no beam was chosen
        chain = chain_from_sexpr(sel.chosen_sexpr) if sel.chosen_sexpr else None
        if self.override_margin is None or chain is None or chain[0] not in linked:
            return sel
        ranked, scores, _ = self.rank(selector.kb, question, linked, beams)
        if not ranked or ranked[0] == sel.chosen_sexpr:
            return sel
        own = self._similarities(question, linked, [_words(h.relation for h in chain[1])])[0]
        if scores[0] - own <= self.override_margin:
            return sel
        found = selector.select(ranked[:1], semantics=semantics, label_to_ids={})
        if not found.executable:
            return sel
        note = f"path: {ranked[0]} ({scores[0]:.3f}) overrides beam {sel.chosen_beam} ({own:.3f})"
        return replace(
            found, chosen_beam=None, beams_tried=sel.beams_tried, errors=[*sel.errors, note], path_override=True
        )

    def rank(
        self,
        kb: object,
        question: str,
        linked: Mapping[str, str],
        beams: Sequence[str] = (),
        *,
        max_candidates: int | None = None,
        mediators: bool = False,
        counting: bool | None = None,
    ) -> tuple[list[str], list[float], list[str]]:
        """The best ``max_candidates`` S-expressions for a question, their cosines and any read errors.

        Args:
            kb: The knowledge base (``execute(sparql)``).
            question: The question text.
            linked: Linked entity id → label, in the linker's order (the label is removed from the
                question before encoding it).
            beams: The generator's beams, best first (only whether the first one counts is used).
            max_candidates: How many to return (``None``: the instance's ``max_candidates``).
            mediators: Also rank three-hop paths through a nameless node (see :meth:`paths`).
            counting: Whether every path is counted (``None``: when the first beam counts).

        Returns:
            ``(sexprs, scores, errors)``; empty lists when no entity is linked or the KB has no path.
        """
        paths, errors = self.paths(kb, list(linked), mediators)
        cands = [Candidate(p.sexpr, p.relations, 1) for p in paths]
        if self.constraints:
            joins, join_errors = join_candidates(kb, list(linked))
            cands, errors = cands + joins, errors + join_errors
        if not cands:
            return [], [], errors
        scores = self._similarities(question, linked, [_words(c.schema) for c in cands])
        keep = self.max_candidates if max_candidates is None else max_candidates
        order = self._order(cands, scores)
        if self.constraints:
            extra, class_errors = restricted(kb, [cands[i] for i in order[: self.max_candidates]])
            errors += class_errors
            if extra:
                scores += self._similarities(question, linked, [_words(c.schema) for c in extra])
                cands += extra
                order = self._order(cands, scores)
        order = order[:keep]
        if counting is None:
            counting = bool(beams) and bool(_COUNT.match(beams[0]))
        sexprs = [f"(COUNT {cands[i].sexpr})" if counting else cands[i].sexpr for i in order]
        return sexprs, [float(scores[i]) for i in order], errors

    @staticmethod
    def _order(cands: Sequence[Candidate], scores: Sequence[float]) -> list[int]:
        """Forms that use more linked entities first, then best cosine first, then the order given."""
        return sorted(range(len(cands)), key=lambda i: (-cands[i].entities, -round(scores[i], 6), i))

    def select(
        self,
        selector: ExecutionGuidedSelector,
        beams: Sequence[str],
        *,
        question: str,
        linked: Mapping[str, str],
        semantics: str,
        label_to_ids: Mapping[str, Sequence[str]],
        candidates: Sequence[tuple[str, str]] = (),
        answer_text: str | None = None,
        name_to_ids: Mapping[str, Sequence[str]] | None = None,
    ) -> Selection:
        """Beams first, then the ranked paths, then the answer text: one question's selection.

        The arguments are :meth:`ExecutionGuidedSelector.select`'s, plus the question and its
        linked entities. ``beams_tried`` counts the beams only; the errors of the paths that did
        not execute and of entities whose paths could not be read are appended as ``path …``.
        """
        sel = selector.select(
            beams, semantics=semantics, label_to_ids=label_to_ids, candidates=candidates, answer_text=None
        )
        return self.after(
            selector, sel, beams, question=question, linked=linked, semantics=semantics,
            answer_text=answer_text, name_to_ids=name_to_ids,
        )  # fmt: skip

    def after(
        self,
        selector: ExecutionGuidedSelector,
        sel: Selection,
        beams: Sequence[str],
        *,
        question: str,
        linked: Mapping[str, str],
        semantics: str,
        answer_text: str | None = None,
        name_to_ids: Mapping[str, Sequence[str]] | None = None,
    ) -> Selection:
        """The paths' turn after the beams' selection ``sel`` (made without an answer text).

        An executable ``sel`` is kept unless the override replaces it; otherwise the ranked paths
        are executed in order, and when none answers, the answer text is the fallback as in
        :meth:`ExecutionGuidedSelector.select`. ``beams`` only tell whether the first one counts.
        """
        if sel.executable:
            return self._override(selector, sel, question, linked, beams, semantics)
        ranked, _, read_errors = self.rank(selector.kb, question, linked, beams)
        errors = list(sel.errors) + [f"path: {e}" for e in read_errors]
        if ranked:
            found = selector.select(ranked, semantics=semantics, label_to_ids={})
            errors += [f"path {e.removeprefix('beam ')}" for e in found.errors]
            if found.executable:
                return replace(found, chosen_beam=None, beams_tried=sel.beams_tried, errors=errors, path_fallback=True)
        text = fallback_answers(answer_text, name_to_ids) if answer_text is not None else []
        return replace(sel, answers=text, fallback=answer_text is not None, errors=errors)


__all__ = ["PathFallback", "path_words", "question_without_mentions"]
