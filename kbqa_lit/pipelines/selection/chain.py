"""The answer chain: ranked candidate logical forms → first executable → KB-path fallback → answer-type check.

:class:`AnswerChain` is one question's selection as CoQ's evaluation callback makes it: the
:class:`~kbqa_lit.pipelines.selection.execution_guided.ExecutionGuidedSelector` executes the
candidates in order and keeps the first that answers; when the KB-path fallback is on, the linked
entities' KB paths come next (and may override a weak first choice); the answer text (a generator's
answer) is the last resort; when the answer-type check is on, an answer that is not of the kind
the question names gives way to the next candidate or path that is. :func:`build_extensions` makes
the two optional steps from their settings, the same way for every caller (CoQ's callback,
FC-KBQA's composition), so the type check shares the fallback's path ranking when both are on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.pipelines.selection.answer_type import AnswerTypes
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, Selection
from kbqa_lit.pipelines.selection.forms import Form
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard


def build_extensions(
    *,
    path_fallback: bool,
    answer_type: bool,
    path_constraints: bool = False,
    encoder: str = MINILM,
    max_hops: int = 2,
    override_margin: float | None = None,
    type_threshold: float = 0.8,
    type_encoder: str | None = None,
    type_max_paths: int = 30,
) -> tuple[PathFallback | None, TypeGuard | None]:
    """The optional steps after the candidates: the KB-path fallback and the answer-type check.

    Args:
        path_fallback: Whether the linked entities' KB paths follow the candidates.
        answer_type: Whether answers are checked against the question's answer noun.
        path_constraints: Whether the KB-path search (of either step) also ranks two-entity joins and
            class-restricted paths (:mod:`~kbqa_lit.pipelines.selection.path_constraints`).
        encoder: The sentence encoder that ranks paths (and compares answer kinds).
        max_hops: Longest path (1 or 2).
        override_margin: How much better a path must score to replace an executable first choice
            (``None``: never).
        type_threshold: Least cosine similarity of an answer noun and a KB class.
        type_encoder: The answer-type check's encoder (default ``encoder``); with the fallback off,
            its own path ranking uses it too.
        type_max_paths: KB paths the answer-type check may try.

    Returns:
        ``(paths, types)``, each ``None`` when off; ``types`` ranks paths with ``paths`` when on.
    """
    paths = (
        PathFallback(encoder, max_hops, override_margin=override_margin, constraints=path_constraints)
        if path_fallback
        else None
    )
    types = None
    if answer_type:
        kinds = type_encoder or encoder
        searched = paths or PathFallback(kinds, constraints=path_constraints)
        types = TypeGuard(AnswerTypes(kinds, type_threshold), searched, type_max_paths)
    return paths, types


@dataclass
class ChainSettings:
    """The settings of the answer chain's optional steps, read only when their extension is on.

    A config section of every system whose answering step offers ``path_fallback`` or
    ``answer_type`` (TFS-KBQA's and Keqing's ``answer_chain:``).

    Attributes:
        encoder: The sentence encoder that ranks KB paths (all-MiniLM-L6-v2 offline).
        max_hops: Longest KB path (1 or 2).
        override_margin: How much better a path must fit the question to replace an executed
            plain join chain (``None``: never).
        type_threshold: Least cosine of an answer noun and a KB class's words.
        type_encoder: The answer-type check's encoder (``None``: ``encoder``).
        type_max_paths: KB paths the answer-type check may try.
    """

    encoder: str = MINILM
    max_hops: int = 2
    override_margin: Optional[float] = None  # noqa: UP045  (jsonargparse resolves typing forms)
    type_threshold: float = 0.8
    type_encoder: Optional[str] = None  # noqa: UP045
    type_max_paths: int = 30

    def build(self, form: Form) -> tuple[PathFallback | None, TypeGuard | None]:
        """The steps ``form`` switches on (:func:`build_extensions`)."""
        return build_extensions(
            path_fallback=form.on("path_fallback"),
            answer_type=form.on("answer_type"),
            path_constraints=form.on("path_constraints"),
            encoder=self.encoder,
            max_hops=self.max_hops,
            override_margin=self.override_margin,
            type_threshold=self.type_threshold,
            type_encoder=self.type_encoder,
            type_max_paths=self.type_max_paths,
        )


@dataclass
class AnswerChain:
    """One question's answers from ranked candidates (see the module docstring).

    Attributes:
        selector: Executes the candidates in order on the knowledge base.
        paths: The KB-path fallback, or ``None`` (off).
        types: The answer-type check, or ``None`` (off).
    """

    selector: ExecutionGuidedSelector
    paths: PathFallback | None = None
    types: TypeGuard | None = None

    def select(
        self,
        candidates: Sequence[str],
        *,
        question: str,
        linked: Mapping[str, str],
        semantics: str,
        label_to_ids: Mapping[str, Sequence[str]],
        entity_candidates: Sequence[tuple[str, str]] = (),
        answer_text: str | None = None,
        name_to_ids: Mapping[str, Sequence[str]] | None = None,
    ) -> Selection:
        """Candidates in order, then the paths (when on), then the answer text; then the type check (when on).

        Args:
            candidates: Normalised S-expressions, best first (a generator's beams).
            question: The question text (paths and answer nouns read it).
            linked: Linked entity id → label, in the linker's order.
            semantics: The answer semantics of the dataset.
            label_to_ids: Entity label → ids for denormalisation.
            entity_candidates: Further (id, label) pairs a label may resolve to.
            answer_text: The generated answer text (the last resort), if any.
            name_to_ids: Maps an answer text to KB ids by name.

        Returns:
            The selection; an answer text is never re-typed.
        """
        common = {"semantics": semantics, "label_to_ids": label_to_ids, "candidates": entity_candidates}
        texts = {"answer_text": answer_text, "name_to_ids": name_to_ids}
        if self.paths is None:
            sel = self.selector.select(candidates, **common, **texts)
        else:
            sel = self.paths.select(self.selector, candidates, question=question, linked=linked, **common, **texts)
        if self.types is None or sel.fallback:
            return sel
        return self.types.after(
            self.selector, sel, candidates, question=question, linked=linked, semantics=semantics,
            label_to_ids=label_to_ids,
        )  # fmt: skip

    def after(
        self,
        sel: Selection,
        candidates: Sequence[str],
        *,
        question: str,
        linked: Mapping[str, str],
        semantics: str,
        label_to_ids: Mapping[str, Sequence[str]] | None = None,
    ) -> Selection:
        """The optional steps after a selection made elsewhere (Keqing's chains): the paths, then the type check.

        Args:
            sel: The selection so far (its ``chosen_sexpr`` is what the override and the type check read).
            candidates: The ranked candidates it was chosen from (the type check's next choices).
            question: The question text.
            linked: Linked entity id → label.
            semantics: The answer semantics of the dataset.
            label_to_ids: Entity label → ids for candidates that name entities by label.

        Returns:
            ``sel``, or the path or candidate that replaced it (flagged as in :meth:`select`).
        """
        if self.paths is not None:
            sel = self.paths.after(
                self.selector, sel, candidates, question=question, linked=linked, semantics=semantics
            )
        if self.types is not None and not sel.fallback:
            sel = self.types.after(
                self.selector, sel, candidates, question=question, linked=linked, semantics=semantics,
                label_to_ids=label_to_ids,
            )  # fmt: skip
        return sel


__all__ = ["AnswerChain", "ChainSettings", "build_extensions"]
