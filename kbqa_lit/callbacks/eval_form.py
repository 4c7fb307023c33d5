"""The form an evaluation answers in: which named extensions are on, and what rows and loggers record.

:class:`AnsweringForm` resolves the callback's ``system`` / ``form`` / ``extensions`` settings
(:mod:`kbqa_lit.pipelines.selection.forms`), builds the optional steps of the answer chain from
them (:func:`~kbqa_lit.pipelines.selection.chain.build_extensions`) and says which form a batch's
rows record: CoQ's beams decoded under a grammar count as the ``constrained_decoding`` extension,
whatever the form asked for, so a row never claims the paper's method when it is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import lightning as L

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.selection.chain import build_extensions
from kbqa_lit.pipelines.selection.forms import EXTENDED, Form, resolve_form
from kbqa_lit.pipelines.selection.path_fallback import PathFallback
from kbqa_lit.pipelines.selection.type_guard import TypeGuard

#: The extensions this step can apply (FC-KBQA's filling and neighbour skeletons are its own commands').
APPLIED = ("constrained_decoding", "path_fallback", "path_constraints", "answer_type")


@dataclass
class AnsweringForm:
    """The resolved form of an evaluation and the answer chain's optional steps.

    Attributes:
        asked: The form the settings asked for.
        paths: The KB-path fallback, or ``None`` (off).
        types: The answer-type check, or ``None`` (off).
    """

    asked: Form
    paths: PathFallback | None = None
    types: TypeGuard | None = None

    @classmethod
    def build(
        cls,
        system: str,
        form: str | None,
        extensions: Sequence[str] | None,
        *,
        encoder: str,
        max_hops: int,
        override_margin: float | None,
        type_threshold: float,
    ) -> AnsweringForm:
        """Resolve the settings and build the steps they switch on.

        ``form: extended`` switches on the extensions of ``system`` that this step applies (:data:`APPLIED`).

        Raises:
            UserInputError: For an unknown system, form or extension, one the system does not offer, or
                one this step does not apply.
        """
        if extensions is None and form == "extended":  # every extension of the system that this step applies
            extensions = [e for e in EXTENDED.get(system, ()) if e in APPLIED]
            form = None
        asked = resolve_form(system, form, extensions)
        elsewhere = [e for e in asked.extensions if e not in APPLIED]
        if elsewhere:
            raise UserInputError(
                f"the evaluation callback applies {', '.join(APPLIED)}; {', '.join(elsewhere)} belong to "
                f"{system}'s own commands (kbqa fc detect / compose)"
            )
        paths, types = build_extensions(
            path_fallback=asked.on("path_fallback"),
            answer_type=asked.on("answer_type"),
            path_constraints=asked.on("path_constraints"),
            encoder=encoder,
            max_hops=max_hops,
            override_margin=override_margin,
            type_threshold=type_threshold,
        )
        return cls(asked, paths, types)

    def default_constraint(self) -> str:
        """The decoding constraint when none is set: ``schema`` with ``constrained_decoding``, else ``none``."""
        return "schema" if self.asked.on("constrained_decoding") else "none"

    def recorded(self, constrained: str) -> Form:
        """The form rows record for beams decoded with ``constrained``."""
        if self.asked.system == "coq" and constrained != "none":
            return self.asked.with_extension("constrained_decoding")
        return self.asked

    def log(self, trainer: L.Trainer, constrained: str) -> None:
        """Log the form as hyper-parameters of every logger (``answering/system``, ``/form``, ``/extensions``)."""
        form = self.recorded(constrained)
        values = {"answering/system": form.system, "answering/form": form.name, "answering/extensions": form.tag()}
        for logger in trainer.loggers:
            logger.log_hyperparams(values)


__all__ = ["AnsweringForm"]
