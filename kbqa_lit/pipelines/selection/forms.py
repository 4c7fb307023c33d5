"""Each system's ``paper`` and ``extended`` forms, and the named extensions that tell them apart.

A system runs in its **paper** form (its paper's method, with named stand-ins where this machine
lacks what the paper used) unless a run switches on **extensions**: additions of ours, each a
named setting that any system's answering step reads from one list. The two forms are presets of
that list: ``paper`` switches none on; ``extended`` switches on the system's chosen ones
(:data:`EXTENDED`: every extension it offers, except ``path_constraints`` outside Keqing). A run
may also name its own list (``extensions: [path_fallback]``: the paper plus one addition), and
its recorded form is then ``paper`` when the list is empty and ``extended`` otherwise, so a row
never claims to be the paper's method when it is not.

The extensions (:data:`EXTENSIONS`):

- ``constrained_decoding``: generation constrained by a grammar beyond the paper's decoding: CoQ's
  logical-form beam search by the schema grammar (the paper decodes freely and executes the beams
  in order); Keqing's decomposer by the template bank (well-formed JSON, sub-questions worded as
  templates: :mod:`kbqa_lit.pipelines.keqing.constrained`). FC-KBQA's pair-constrained decoding is
  its paper's and is not this extension.
- ``path_fallback``: when no candidate executes, the linked entities' KB paths ranked by a
  sentence encoder answer (:mod:`kbqa_lit.pipelines.selection.path_fallback`).
- ``path_constraints``: the KB-path search (of ``path_fallback`` and ``answer_type``) also ranks
  two-entity joins and class-restricted paths, forms of both entities first
  (:mod:`kbqa_lit.pipelines.selection.path_constraints`); in Keqing's ``extended`` form (its chains
  from one seed express neither); CoQ, FC-KBQA and TFS-KBQA offer it to a run that lists it.
- ``answer_type``: an answer of another kind than the question names gives way to the next
  candidate or path of that kind (:mod:`kbqa_lit.pipelines.selection.type_guard`).
- ``fill_composition``: FC-KBQA composes by filling its skeletons with the detected components
  (:mod:`kbqa_lit.pipelines.fc.fill`) instead of the composer's choice alone; its §4.4 names and
  rejects this enumeration.
- ``neighbour_skeletons``: FC-KBQA's skeletons come from the nearest training questions instead
  of the trained skeleton parser (``kbqa fc detect``, ``skeleton.source: neighbours``).

Which system offers which is :data:`OFFERED`; asking a system for one it does not offer is a
:class:`~kbqa_lit.errors.UserInputError` naming the system and the extensions it offers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kbqa_lit.errors import UserInputError, check_choice

#: The forms of every system.
FORMS = ("paper", "extended")
#: The systems.
SYSTEMS = ("coq", "fc", "keqing", "tfs")

#: Every extension, by name, with what it does (one line).
EXTENSIONS: dict[str, str] = {
    "constrained_decoding": "generation under a grammar beyond the paper's (CoQ: schema; Keqing: template bank)",
    "path_fallback": "the linked entities' KB paths answer when no candidate executes",
    "answer_type": "an answer of another kind than the question names gives way",
    "path_constraints": "the KB-path search also ranks two-entity joins and class-restricted paths",
    "fill_composition": "skeletons filled with the detected components (FC-KBQA's rejected enumeration)",
    "neighbour_skeletons": "skeletons of the nearest training questions instead of the skeleton parser",
}

#: The extensions each system's answering step offers today, in the order they act.
OFFERED: dict[str, tuple[str, ...]] = {
    "coq": ("constrained_decoding", "path_fallback", "path_constraints", "answer_type"),
    "fc": ("neighbour_skeletons", "fill_composition", "path_fallback", "path_constraints", "answer_type"),
    "keqing": ("constrained_decoding", "path_fallback", "path_constraints", "answer_type"),
    "tfs": ("path_fallback", "path_constraints", "answer_type"),
}

#: What ``form: extended`` switches on for each system: every extension it offers, except ``path_constraints``
#: where it was not measured to help (CoQ, FC-KBQA and TFS-KBQA may still list it: ``extensions: [...]``).
EXTENDED: dict[str, tuple[str, ...]] = {
    "coq": ("constrained_decoding", "path_fallback", "answer_type"),
    "fc": ("neighbour_skeletons", "fill_composition", "path_fallback", "answer_type"),
    "keqing": OFFERED["keqing"],
    "tfs": ("path_fallback", "answer_type"),
}


@dataclass(frozen=True)
class Form:
    """A system's resolved form: which extensions are on.

    Attributes:
        system: ``coq``, ``fc``, ``keqing`` or ``tfs``.
        extensions: The extensions switched on, in :data:`OFFERED`'s order.
    """

    system: str
    extensions: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``paper`` when no extension is on, else ``extended``."""
        return "extended" if self.extensions else "paper"

    def on(self, extension: str) -> bool:
        """Whether ``extension`` is switched on.

        Raises:
            KeyError: For a name that is no extension (a programming error, not user input).
        """
        if extension not in EXTENSIONS:
            raise KeyError(f"no extension {extension!r}")
        return extension in self.extensions

    def tag(self) -> str:
        """A short label for run names: ``paper``, ``extended`` or ``paper+path_fallback+answer_type``.

        ``extended`` alone means the system's preset (:data:`EXTENDED`); any other list is spelled out.
        """
        if not self.extensions:
            return "paper"
        if set(self.extensions) == set(EXTENDED[self.system]):
            return "extended"
        return "+".join(("paper", *self.extensions))

    def with_extension(self, extension: str) -> Form:
        """This form with ``extension`` switched on too (in :data:`OFFERED`'s order, then :data:`EXTENSIONS`')."""
        if extension in self.extensions:
            return self
        on = {*self.extensions, extension}
        order = dict.fromkeys((*OFFERED[self.system], *EXTENSIONS))
        return Form(self.system, tuple(e for e in order if e in on))

    def record(self) -> dict[str, Any]:
        """The keys that prediction rows and logged hyper-parameters carry."""
        return {"form": self.name, "extensions": list(self.extensions)}


def resolve_form(system: str, form: str | None = "paper", extensions: Iterable[str] | None = None) -> Form:
    """The form a run asked for: a preset (``paper`` / ``extended``) or an explicit list.

    Args:
        system: The system answering (``coq``, ``fc``, ``keqing``, ``tfs``).
        form: ``paper`` (no extension), ``extended`` (the system's preset, :data:`EXTENDED`) or
            ``None`` (only the explicit list).
        extensions: An explicit list; when given (even empty) it decides over the preset (the
            recorded form is then ``paper`` only for an empty list), except that ``extended`` with
            an empty list is an error.

    Returns:
        The resolved form, extensions in :data:`OFFERED`'s order.

    Raises:
        UserInputError: For an unknown system, form or extension, an extension the system does
            not offer, or ``extended`` with an empty list.
    """
    check_choice("system", system, OFFERED)
    if form is not None:
        check_choice("form", form, FORMS)
    if extensions is None:
        chosen = set(EXTENDED[system]) if form == "extended" else set()
    else:
        names = [str(e) for e in ([extensions] if isinstance(extensions, str) else extensions)]
        unknown = [e for e in names if e not in EXTENSIONS]
        if unknown:
            raise UserInputError(f"unknown extensions {unknown}; expected some of {', '.join(EXTENSIONS)}")
        foreign = [e for e in names if e not in OFFERED[system]]
        if foreign:
            offered = ", ".join(OFFERED[system]) or "none yet"
            raise UserInputError(f"{system} does not offer the extensions {foreign} (it offers: {offered})")
        chosen = set(names)
        if form == "extended" and not chosen:
            raise UserInputError("form: extended needs at least one extension (or leave extensions unset)")
    return Form(system, tuple(e for e in OFFERED[system] if e in chosen))


def form_from_settings(system: str, settings: Mapping[str, Any]) -> Form:
    """:func:`resolve_form` from a mapping's ``form`` and ``extensions`` keys (``form`` defaults to ``paper``)."""
    extensions = settings.get("extensions")
    form = settings.get("form", "paper" if extensions is None else None)
    return resolve_form(system, form, extensions)


def describe() -> str:
    """A table of the extensions, the systems that offer them and what they do (``kbqa extensions`` prints it)."""
    rows = [
        (name, ",".join(s for s in SYSTEMS if name in OFFERED[s]) or "-", what) for name, what in EXTENSIONS.items()
    ]
    wide = max(len(systems) for _, systems, _ in rows)
    return "\n".join(f"{name:22s} {systems:{wide}s} {what}" for name, systems, what in rows)


__all__ = [
    "EXTENDED",
    "EXTENSIONS",
    "FORMS",
    "OFFERED",
    "SYSTEMS",
    "Form",
    "describe",
    "form_from_settings",
    "resolve_form",
]
