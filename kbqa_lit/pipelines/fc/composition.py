"""FC-KBQA's answering step over detected question files (``kbqa fc compose``), in either form.

The **paper** form (``form: paper``, the default) answers with the composer's choice alone: the
composer's constrained beams from its ``kbqa test`` predictions (``generated``), the first that
executes (re-executed through the shared :class:`~kbqa_lit.pipelines.selection.chain.AnswerChain`,
so its answers are those of ``kbqa test``). The named extensions
(:mod:`kbqa_lit.pipelines.selection.forms`; ``form: extended`` switches on all of them):

- ``fill_composition`` — composition by filling (:mod:`kbqa_lit.pipelines.fc.fill`, which the
  paper's §4.4 names and rejects as enumeration): ``composition`` then says how filling and the
  composer combine: ``fill`` (the first filling — skeleton by skeleton, best score first — that
  executes to a non-empty answer), ``generate+fill`` (the composer's choice when it executed, else
  the fillings) or ``fill+generate`` (the fillings, else the composer's choice);
- ``path_fallback`` — when nothing executes, the detected entities' best-ranked KB path answers
  (:mod:`kbqa_lit.pipelines.selection.path_fallback`; ``paths.override_margin`` also replaces a
  chosen plain join chain when a path fits the question better by that margin): ``composition: path``;
- ``answer_type`` — when the question names the kind of its answer (*which country*) and the
  chosen answer is of another kind, the next candidate, else KB path, of that kind replaces it
  (:mod:`kbqa_lit.pipelines.selection.type_guard`); rows carry ``answer_type: true``;
- ``neighbour_skeletons`` — the detected file's skeletons come from the nearest training questions
  (``kbqa fc detect`` with ``skeleton.source: neighbours``); the detect step switches it on and writes
  ``meta["fc"]["skeleton_source"]``, which decides what a row records whatever the form asked.

Reads each question's ``meta["fc"]`` (what ``kbqa fc detect`` wrote) and its text (literals), never a
gold field; a prediction row names its form and extensions and the source of its logical form
(``composition``: ``fill``, ``generate``, ``path`` or ``none``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbqa_lit.data.fc.composer_examples import FC_META, Components, predicted_components
from kbqa_lit.data.fc.literals import detect_literals
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.pipelines.fc.compose_config import COMPOSITIONS, AnswerTypeConfig, PathsConfig
from kbqa_lit.pipelines.fc.fill import SkeletonFiller
from kbqa_lit.pipelines.selection.chain import AnswerChain, build_extensions
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector
from kbqa_lit.pipelines.selection.forms import Form, resolve_form
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard


def extensions_from(
    form: Form, paths: PathsConfig, answer_type: AnswerTypeConfig
) -> tuple[PathFallback | None, TypeGuard | None]:
    """The ``path_fallback``, ``path_constraints`` and ``answer_type`` extensions as the answer chain's optional steps.

    The type check ranks its KB paths with the fallback's ranking when both are on, else with a
    ranking of its own with the section's encoder
    (:func:`~kbqa_lit.pipelines.selection.chain.build_extensions`). The sections' settings of an
    extension that is off are not used.
    """
    fallback, check = form.on("path_fallback"), form.on("answer_type")
    return build_extensions(
        path_fallback=fallback,
        answer_type=check,
        path_constraints=form.on("path_constraints"),
        encoder=paths.encoder,
        max_hops=paths.max_hops,
        override_margin=paths.override_margin,
        type_threshold=answer_type.threshold,
        type_encoder=answer_type.encoder if check else None,
        type_max_paths=answer_type.max_paths,
    )


class FillComposition:
    """Answer detected questions in a form (see the module docstring).

    Args:
        filler: Enumerates and ranks the fillings (used with ``fill_composition``).
        selector: Executes candidates in order and keeps the first non-empty one.
        composition: ``fill``, ``generate+fill`` or ``fill+generate`` (with ``fill_composition``).
        generated: The composer's ``kbqa test`` rows by qid (required unless ``fill`` with
            ``fill_composition``).
        paths: The KB-path fallback (``path_fallback``; ``None``: off).
        types: The answer-type check (``answer_type``; ``None``: off).
        form: The resolved form (default: the paper's with ``fill_composition``, as before forms).

    Raises:
        UserInputError: For an unknown ``composition`` or missing composer predictions.
    """

    def __init__(
        self,
        filler: SkeletonFiller,
        selector: ExecutionGuidedSelector,
        composition: str = "fill",
        generated: Mapping[str, Mapping[str, Any]] | None = None,
        paths: PathFallback | None = None,
        types: TypeGuard | None = None,
        form: Form | None = None,
    ) -> None:
        self.form = form or resolve_form("fc", None, ["fill_composition"])
        self.fill = self.form.on("fill_composition")
        check_choice("composition", composition, COMPOSITIONS)
        if (composition != "fill" or not self.fill) and generated is None:
            what = f"composition {composition!r}" if self.fill else "the composer's choice (no fill_composition)"
            raise UserInputError(f"{what} needs the composer's predictions (generated: FILE)")
        self.filler, self.selector, self.composition = filler, selector, composition
        self.generated = generated or {}
        self.paths, self.types = paths, types

    def _composer_row(self, ex: KBQAExample) -> Mapping[str, Any]:
        row = self.generated.get(ex.qid)
        if row is None:
            raise UserInputError(f"{ex.qid}: not in the composer's predictions")
        return row

    def _generated(self, ex: KBQAExample) -> dict[str, Any] | None:
        if self.composition == "fill":
            return None
        row = self._composer_row(ex)
        if not row.get("executable") or not row.get("chosen_sexpr"):
            return None
        return {"answers": list(row.get("answers") or []), "s_expression": row["chosen_sexpr"]}

    def answer(self, ex: KBQAExample) -> dict[str, Any]:
        """The prediction row of one detected question.

        Raises:
            UserInputError: When the question has no ``meta["fc"]`` (not detected) or is missing
                from the composer's predictions.
        """
        comp = predicted_components(ex)
        if comp is None:
            raise UserInputError(f"{ex.qid}: no meta['fc']; run `kbqa fc detect` on the file first")
        row = self._filled(ex, comp) if self.fill else self._composed(ex, comp)
        return {**row, **self._recorded(ex).record()}

    def _recorded(self, ex: KBQAExample) -> Form:
        """The form a row records: ``neighbour_skeletons`` as the detect step wrote (``meta["fc"]``), else as asked."""
        source = (ex.meta.get(FC_META) or {}).get("skeleton_source")
        if source is None or (source == "neighbours") == self.form.on("neighbour_skeletons"):
            return self.form
        if source == "neighbours":
            return self.form.with_extension("neighbour_skeletons")
        return Form("fc", tuple(e for e in self.form.extensions if e != "neighbour_skeletons"))

    def _composed(self, ex: KBQAExample, comp: Components) -> dict[str, Any]:
        """The composer's choice through the answer chain: its executed choice, then its other beams."""
        generated = self._composer_row(ex)
        chosen = generated.get("chosen_sexpr") if generated.get("executable") else None
        beams = [str(b) for b in generated.get("beams") or []]
        candidates = [str(chosen), *beams] if chosen else beams
        sel = AnswerChain(self.selector, self.paths, self.types).select(
            candidates,
            question=ex.question,
            linked=dict(comp.entities),
            semantics=ex.semantics,
            label_to_ids=invert_labels(comp.entities),
            entity_candidates=tuple(comp.entities.items()),
        )
        source = "none" if not sel.executable else ("generate" if sel.chosen_beam is not None else "path")
        row: dict[str, Any] = {"qid": ex.qid, "question": ex.question, "fillings": 0}
        if self.types is not None:
            row["answer_type"] = sel.answer_type
        return {
            **row,
            "answers": sel.answers if sel.executable else [],
            "s_expression": sel.chosen_sexpr if sel.executable else None,
            "executable": sel.executable,
            "composition": source,
            "skeleton": None,
            "tried": sel.beams_tried,
        }

    def _filled(self, ex: KBQAExample, comp: Components) -> dict[str, Any]:
        """Composition by filling (``fill_composition``), with the composer's choice as ``composition`` says."""
        fillings = self.filler.fillings(comp, detect_literals(ex.question))
        generated = self._generated(ex)
        row: dict[str, Any] = {"qid": ex.qid, "question": ex.question, "fillings": len(fillings)}
        if generated is not None and self.composition == "generate+fill":
            return {**row, **generated, "executable": True, "composition": "generate", "skeleton": None}
        chosen = self.selector.select(
            [f.sexpr for f in fillings],
            semantics=ex.semantics,
            label_to_ids={},
            candidates=list(comp.entities.items()),
        )
        sel = chosen
        if self.paths is not None and (generated is None or chosen.executable):
            counted = [chosen.chosen_sexpr] if chosen.chosen_sexpr else [f.sexpr for f in fillings[:1]]
            sel = self.paths.after(
                self.selector, chosen, counted, question=ex.question, linked=dict(comp.entities),
                semantics=ex.semantics,
            )  # fmt: skip
        if self.types is not None:
            row["answer_type"] = False
            if generated is None or sel.executable:
                sel = self.types.after(
                    self.selector, sel, [f.sexpr for f in fillings], question=ex.question,
                    linked=dict(comp.entities), semantics=ex.semantics,
                )  # fmt: skip
                row["answer_type"] = sel.answer_type
        if sel.executable:
            filled = sel.chosen_beam is not None
            return {
                **row,
                "answers": sel.answers,
                "s_expression": sel.chosen_sexpr,
                "executable": True,
                "composition": "fill" if filled else "path",
                "skeleton": fillings[sel.chosen_beam].skeleton if sel.chosen_beam is not None else None,
                "tried": chosen.beams_tried,
            }
        if generated is not None:
            return {**row, **generated, "executable": True, "composition": "generate", "skeleton": None}
        return {
            **row,
            "answers": [],
            "s_expression": None,
            "executable": False,
            "composition": "none",
            "skeleton": None,
            "tried": chosen.beams_tried,
        }


__all__ = ["COMPOSITIONS", "FillComposition", "extensions_from"]
