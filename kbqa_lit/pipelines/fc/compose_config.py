"""The YAML config of ``kbqa fc compose`` (FC-KBQA's answering step), typed.

A config names the detected file, where the predictions go, the knowledge base, the form and the
settings of each extension (see ``configs/fc/compose.yaml``; the forms and extensions in
:mod:`kbqa_lit.pipelines.fc.composition`)::

    file: outputs/fc/detected/test.jsonl       # a file `kbqa fc detect` wrote
    out: outputs/fc/composed/test.jsonl        # prediction lines for `kbqa eval`
    kb: {store: outputs/fc/kb}
    form: paper                                # paper | extended; or extensions: [fill_composition, ...]
    generated: <the composer's kbqa test predictions>
    composition: fill                          # fill | generate+fill | fill+generate (fill_composition)
    fill: {top_relations: 10, top_classes: 10, max_candidates: 200, use_pairs: true, order: skeleton,
           extra_skeletons: 0}
    max_executions: 100
    paths: {override_margin: null, encoder: all-MiniLM-L6-v2, max_hops: 2}
    answer_type: {threshold: 0.8, max_paths: 30, encoder: all-MiniLM-L6-v2}

One dataclass per section; ``kb:`` is the shared :class:`~kbqa_lit.pipelines.kb_config.KBConfig`.
``kbqa fc compose --set key=value`` puts its overrides into the file's mapping first;
:func:`parse_compose_config` then types it (:func:`~kbqa_lit.pipelines.config_files.build_config`): an
unknown key, a value of the wrong type, an unknown choice, form or extension is a
:class:`~kbqa_lit.errors.UserInputError` naming the file and the key, and a key that became an
extension (:data:`MOVED_KEYS`) names that extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.pipelines.config_files import build_config, read_config_mapping
from kbqa_lit.pipelines.fc.fill import ORDERS
from kbqa_lit.pipelines.kb_config import KBConfig
from kbqa_lit.pipelines.selection.forms import Form, resolve_form

#: How filling and the composer combine under the ``fill_composition`` extension.
COMPOSITIONS = ("fill", "generate+fill", "fill+generate")
#: Keys that became extensions (``extensions: [...]``), with the extension that replaced each.
MOVED_KEYS = {"paths.fallback": "path_fallback", "answer_type.check": "answer_type"}


@dataclass
class FillConfig:
    """The ``fill_composition`` extension (:class:`~kbqa_lit.pipelines.fc.fill.SkeletonFiller`, ours).

    Attributes:
        top_relations: Detected relations a slot may take (best first).
        top_classes: Detected classes a slot may take.
        max_candidates: Fillings kept per skeleton, best first.
        use_pairs: Apply the pair constraints (``False``: any combination; the −knowledge-pairs ablation).
        order: ``skeleton`` (the skeleton order decides) or ``mean`` (all fillings by mean score).
        extra_skeletons: Skeletons of the source's ranked list beyond the top-2, filled after them.
    """

    top_relations: int = 10
    top_classes: int = 10
    max_candidates: int = 200
    use_pairs: bool = True
    order: str = "skeleton"
    extra_skeletons: int = 0

    def __post_init__(self) -> None:
        check_choice("fill.order", self.order, ORDERS)


@dataclass
class PathsConfig:
    """The ``path_fallback`` extension (:mod:`~kbqa_lit.pipelines.selection.path_fallback`, ours).

    Attributes:
        override_margin: How much better a KB path must fit the question to replace a chosen plain
            join chain; ``None``: never.
        encoder: The sentence encoder that ranks the paths.
        max_hops: Longest path (1 or 2).
    """

    override_margin: float | None = None
    encoder: str = MINILM
    max_hops: int = 2


@dataclass
class AnswerTypeConfig:
    """The ``answer_type`` extension (:mod:`~kbqa_lit.pipelines.selection.type_guard`, ours).

    Attributes:
        threshold: Least cosine similarity of the answer noun and a class's words to count as that kind.
        max_paths: KB paths tried after the candidates.
        encoder: The sentence encoder (ranks paths too when ``path_fallback`` is off).
    """

    threshold: float = 0.8
    max_paths: int = 30
    encoder: str = MINILM


@dataclass
class ComposeConfig:
    """A whole ``kbqa fc compose`` config (see :mod:`kbqa_lit.pipelines.fc.composition`).

    Attributes:
        kb: The knowledge base the candidates are executed on.
        file: A question file ``kbqa fc detect`` wrote (each row with ``meta["fc"]``). Required.
        out: Where the prediction lines go (written atomically). Required.
        form: ``paper`` or ``extended`` (every extension); ``None``: the paper's unless
            ``extensions`` lists some.
        extensions: The extensions, instead of the form's preset.
        composition: With ``fill_composition``: ``fill``, ``generate+fill`` (the composer's choice,
            else the fillings) or ``fill+generate``.
        generated: The composer's ``kbqa test`` predictions (the paper form's answers).
        fill: The ``fill_composition`` extension's settings.
        max_executions: Candidates executed at most per question.
        paths: The ``path_fallback`` extension's settings.
        answer_type: The ``answer_type`` extension's settings.
    """

    kb: KBConfig
    file: str | None = None
    out: str | None = None
    form: str | None = None
    extensions: list[str] | None = None
    composition: str = "fill"
    generated: str | None = None
    fill: FillConfig = field(default_factory=FillConfig)
    max_executions: int = 100
    paths: PathsConfig = field(default_factory=PathsConfig)
    answer_type: AnswerTypeConfig = field(default_factory=AnswerTypeConfig)

    def __post_init__(self) -> None:
        check_choice("composition", self.composition, COMPOSITIONS)
        self.resolved_form()

    def resolved_form(self) -> Form:
        """The form ``form`` and ``extensions`` ask for.

        Raises:
            UserInputError: For an unknown form or extension, or one FC-KBQA does not offer.
        """
        return resolve_form("fc", self.form, self.extensions)


def parse_compose_config(raw: Mapping[str, Any], path: str | Path) -> ComposeConfig:
    """The ``kbqa fc compose`` config of a mapping read from ``path`` (``--set`` overrides already in place).

    Raises:
        UserInputError: Naming ``path`` and the key (see :func:`~kbqa_lit.pipelines.config_files.build_config`);
            a key of :data:`MOVED_KEYS` names the extension that replaced it.
    """
    for key, extension in MOVED_KEYS.items():
        section, _, sub = key.partition(".")
        if isinstance(raw.get(section), Mapping) and sub in raw[section]:
            raise UserInputError(
                f"bad FC config {path}: {key} is now the {extension!r} extension: list it in extensions"
                " (or form: extended)"
            )
    return build_config(ComposeConfig, raw, path, "FC")


def load_compose_config(path: str | Path) -> ComposeConfig:
    """:func:`parse_compose_config` of a YAML file.

    Raises:
        UserInputError: A missing or unreadable file, or a config that does not parse.
    """
    return parse_compose_config(read_config_mapping(path, "FC"), path)


__all__ = [
    "COMPOSITIONS",
    "MOVED_KEYS",
    "AnswerTypeConfig",
    "ComposeConfig",
    "FillConfig",
    "PathsConfig",
    "load_compose_config",
    "parse_compose_config",
]
