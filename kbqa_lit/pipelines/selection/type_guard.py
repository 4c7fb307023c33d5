"""The answer-type check after execution-guided selection: keep an answer of the asked-for kind.

Execution-guided selection takes the first candidate that executes to a non-empty answer. When
the question names the kind of its answer ("*which country* …", "*how many countries* …") and
the chosen answer is of another kind (LMIT's city, a country found by ``ARGMAX`` instead of
counted), :class:`TypeGuard` looks further, in order:

1. the remaining candidates (beams or fillings), as they were ranked;
2. the linked entities' KB paths ranked by the path fallback's cosine — one and two hops, and
   three hops through a nameless mediator node ("which cities are the universities X attended
   in": student → education CVT → university → city), counted after *how many*.

The first one that executes and whose answers agree (:class:`~kbqa_lit.pipelines.selection.answer_type.AnswerTypes`)
replaces the selection (``Selection.answer_type``); when none agrees, the selection stands. A
question without an answer noun, or whose noun names no class of the KB, is left alone. Only the
question, the linked entities, the candidates and what they execute to are read. When the KB's
classes cannot be read (a failing or timed-out query), the selection stands and the row's errors
say why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from kbqa_lit.errors import StoreError, UserInputError
from kbqa_lit.pipelines.selection.answer_type import AnswerNoun, AnswerTypes, answer_noun, counted
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, Selection
from kbqa_lit.pipelines.selection.path_fallback import PathFallback


class TypeGuard:
    """Replace a selection whose answers are not of the kind the question asks for.

    Args:
        types: The answer-type agreement (encoder and threshold).
        paths: The KB paths searched after the candidates (``None``: the candidates only).
        max_paths: Ranked paths tried at most.

    Raises:
        UserInputError: When ``max_paths < 0``.
    """

    def __init__(self, types: AnswerTypes, paths: PathFallback | None = None, max_paths: int = 30) -> None:
        if max_paths < 0:
            raise UserInputError(f"answer types: max_paths must be >= 0, got {max_paths!r}")
        self.types, self.paths, self.max_paths = types, paths, int(max_paths)

    def _agrees(
        self, selector: ExecutionGuidedSelector, noun: AnswerNoun, sexpr: str, answers: Sequence[str], semantics: str
    ) -> bool:
        inner = counted(sexpr)
        if noun.counting != (inner is not None):
            return False
        if inner is not None:  # the counted set must be of the kind
            found = selector.select([inner], semantics=semantics, label_to_ids={})
            answers = found.answers if found.executable else []
        try:
            return bool(answers) and self.types.agrees(selector.kb, noun, answers)
        except StoreError:  # classes that cannot be read do not agree
            return False

    def after(
        self,
        selector: ExecutionGuidedSelector,
        sel: Selection,
        candidates: Sequence[str],
        *,
        question: str,
        linked: Mapping[str, str],
        semantics: str,
        label_to_ids: Mapping[str, Sequence[str]] | None = None,
    ) -> Selection:
        """``sel``, or the first candidate or KB path whose answers agree with the question's answer noun.

        Args:
            selector: The selector that made ``sel`` (its KB executes the candidates).
            sel: The selection so far.
            candidates: The ranked candidates ``sel`` was chosen from (at most the selector's
                ``max_beams`` are tried).
            question: The question text.
            linked: Linked entity id → label, in the linker's order (the paths start there).
            semantics: The answer semantics.
            label_to_ids: Entity label → ids for candidates that name entities by label.

        Returns:
            ``sel`` unchanged, or the agreeing candidate's selection with ``answer_type`` set
            (``chosen_beam``: its index among ``candidates``, ``None`` for a path).
        """
        noun = answer_noun(question)
        kb = selector.kb
        try:
            if noun is None or not self.types.expects(kb, noun):
                return sel
        except StoreError as exc:  # the KB's classes cannot be read: the selection stands
            return replace(sel, errors=[*sel.errors, f"answer type: {exc}"])
        agree = self._agrees
        if sel.executable and sel.chosen_sexpr and agree(selector, noun, sel.chosen_sexpr, sel.answers, semantics):
            return sel
        pool = list(candidates if selector.max_beams is None else candidates[: selector.max_beams])
        beams = len(pool)
        if self.paths is not None and self.max_paths:
            ranked, _, _ = self.paths.rank(
                kb, question, linked, max_candidates=self.max_paths, mediators=True, counting=noun.counting
            )  # fmt: skip
            pool += ranked
        for i, sexpr in enumerate(pool):
            if sexpr == sel.chosen_sexpr or noun.counting != (counted(sexpr) is not None):
                continue
            found = selector.select([sexpr], semantics=semantics, label_to_ids=label_to_ids or {})
            chosen = found.chosen_sexpr
            if found.executable and chosen and agree(selector, noun, chosen, found.answers, semantics):
                source = f"beam {i}" if i < beams else "path"
                note = f"answer type: {noun.noun!r} takes {source} {chosen}"
                return replace(
                    found,
                    chosen_beam=i if i < beams else None,
                    beams_tried=max(sel.beams_tried, min(i + 1, beams)),
                    errors=[*sel.errors, note],
                    path_fallback=False,
                    path_override=False,
                    answer_type=True,
                )
        return sel


__all__ = ["TypeGuard"]
