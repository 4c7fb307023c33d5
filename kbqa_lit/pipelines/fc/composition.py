"""FC-KBQA's composition step over detected question files (``kbqa fc compose``).

``composition`` (a setting; see :mod:`kbqa_lit.pipelines.fc.fill` for why filling exists):

- ``fill``: the first filling (:class:`~kbqa_lit.pipelines.fc.fill.SkeletonFiller`, skeleton by
  skeleton, best score first) that executes to a non-empty answer;
- ``generate+fill``: the composer's choice (its first executable constrained beam, read from its
  ``kbqa test`` predictions, ``generated``) when it executed, else the fillings;
- ``fill+generate``: the fillings, else the composer's choice.

``paths`` (off when a config has no such section; ``configs/fc/compose.yaml`` turns it on; not in
the paper, which is silent on questions nothing answers): the
shared KB-path fallback (:mod:`kbqa_lit.pipelines.selection.path_fallback`) over the detected entities —
``fallback: true`` answers a question whose fillings all come back empty with the best-ranked KB
path of its entities; ``override_margin`` also replaces a chosen filling that is a plain join chain
when a path fits the question better by that margin. Such rows have ``composition: path``.

``answer_type`` (off when a config has no such section; on in ``configs/fc/compose.yaml``; ours):
the answer-type check (:mod:`kbqa_lit.pipelines.selection.type_guard`) — when the question names the kind of
its answer (*which country*, *how many countries*) and the chosen answer is of another kind, the
next filling, else KB path (up to three hops through a mediator), whose answers are of that kind
replaces it. Rows then carry ``answer_type: true`` (and ``composition`` says which source won).

Reads each question's ``meta["fc"]`` (what ``kbqa fc detect`` wrote) and its text (literals), never a
gold field; a prediction row names the source of its form (``composition``: ``fill``, ``generate``,
``path`` or ``none``) so ``kbqa eval`` and a reader can tell them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbqa_lit.data.fc.composer_examples import predicted_components
from kbqa_lit.data.fc.literals import detect_literals
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.fc.fill import SkeletonFiller
from kbqa_lit.pipelines.selection.chain import build_extensions
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard

COMPOSITIONS = ("fill", "generate+fill", "fill+generate")

#: ``kbqa fc compose``'s sections and keys with defaults (``None``: required).
COMPOSE_DEFAULTS: dict[str, Any] = {
    "file": None,
    "out": None,
    "kb": {"store": None, "build_from": []},
    "composition": "fill",
    "generated": None,
    "fill": {
        "top_relations": 10,
        "top_classes": 10,
        "max_candidates": 200,
        "use_pairs": True,
        "order": "skeleton",
        "extra_skeletons": 0,
    },
    "max_executions": 100,
    "paths": {
        "fallback": False,
        "override_margin": None,
        "encoder": "all-MiniLM-L6-v2",
        "max_hops": 2,
    },
    "answer_type": {
        "check": False,
        "threshold": 0.8,
        "max_paths": 30,
        "encoder": "all-MiniLM-L6-v2",
    },
}


def extensions_from(
    paths: Mapping[str, Any], answer_type: Mapping[str, Any]
) -> tuple[PathFallback | None, TypeGuard | None]:
    """The ``paths`` and ``answer_type`` sections as the answer chain's optional steps.

    The type check ranks its KB paths with the fallback's ranking when both are on, else with a
    ranking of its own with the section's encoder
    (:func:`~kbqa_lit.pipelines.selection.chain.build_extensions`).

    Raises:
        UserInputError: For an ``override_margin`` without ``fallback``, or bad values.
    """
    if not paths.get("fallback") and paths.get("override_margin") is not None:
        raise UserInputError("paths.override_margin needs paths.fallback: true")
    check = bool(answer_type.get("check"))
    return build_extensions(
        path_fallback=bool(paths.get("fallback")),
        answer_type=check,
        encoder=str(paths["encoder"]),
        max_hops=int(paths["max_hops"]),
        override_margin=paths.get("override_margin"),
        type_threshold=float(answer_type["threshold"]) if check else 0.8,
        type_encoder=str(answer_type["encoder"]) if check else None,
        type_max_paths=int(answer_type["max_paths"]) if check else 30,
    )


class FillComposition:
    """Answer detected questions by filling (and optionally the composer's choice); see the module docstring.

    Args:
        filler: Enumerates and ranks the fillings.
        selector: Executes candidates in order and keeps the first non-empty one.
        composition: ``fill``, ``generate+fill`` or ``fill+generate``.
        generated: The composer's choices by qid (required unless ``fill``).
        paths: The KB-path fallback (see the module docstring; ``None``: off).
        types: The answer-type check (see the module docstring; ``None``: off).
    """

    def __init__(
        self,
        filler: SkeletonFiller,
        selector: ExecutionGuidedSelector,
        composition: str = "fill",
        generated: Mapping[str, Mapping[str, Any]] | None = None,
        paths: PathFallback | None = None,
        types: TypeGuard | None = None,
    ) -> None:
        if composition not in COMPOSITIONS:
            raise UserInputError(f"composition must be one of {', '.join(COMPOSITIONS)}, got {composition!r}")
        if composition != "fill" and generated is None:
            raise UserInputError(f"composition {composition!r} needs the composer's predictions (generated: FILE)")
        self.filler, self.selector, self.composition = filler, selector, composition
        self.generated = generated or {}
        self.paths, self.types = paths, types

    def _generated(self, ex: KBQAExample) -> dict[str, Any] | None:
        if self.composition == "fill":
            return None
        row = self.generated.get(ex.qid)
        if row is None:
            raise UserInputError(f"{ex.qid}: not in the composer's predictions")
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


__all__ = ["COMPOSE_DEFAULTS", "COMPOSITIONS", "FillComposition", "extensions_from"]
