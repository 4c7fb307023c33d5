"""The YAML config of ``kbqa fc detect`` (FC-KBQA's component stage), typed.

A config names the question files, the knowledge base, the trained parts and the settings of each
stage (see ``configs/fc/detect.yaml``; the paper's pairs and pruning there, ours in
``detect_extended.yaml``)::

    files: [outputs/fc/world/dev.jsonl]        # question files to annotate (common schema)
    out_dir: outputs/fc/detected               # <out_dir>/<file name>, each row with meta["fc"]
    kb: {store: outputs/fc/kb, build_from: [outputs/fc/world/kb.nt]}
    ontology: outputs/fc/world/schema.json     # domains/ranges: extractor texts, pairs
    relation_extractor: <ComponentExtractor .ckpt>
    class_extractor: <ComponentExtractor .ckpt> or null (no classes)
    detection: {recall_size: 100, top_k: 10}
    linking: {json: null, max_candidates: 50, top_k: 10, prune: true, on_empty: keep}
    pairs: {type_match: kb, reverse_hops: true}
    skeleton: {source: parser | neighbours, checkpoint: <.ckpt> or null (no skeletons),
               class_path: <its LightningModule>, beams: 4, max_new_tokens: 48, mask_mentions: true,
               train_files: [train.jsonl], neighbours: 20, vote: max, encoder: all-MiniLM-L6-v2}  # last 4: neighbours
    device: cpu                                # or gpu / cuda / cuda:N / auto: where the trained parts run

One dataclass per section; ``kb:`` is the shared :class:`~kbqa_lit.pipelines.kb_config.KBConfig`.
``kbqa fc detect --set key=value`` puts its overrides into the file's mapping first
(:func:`~kbqa_lit.tools.common.apply_set_pairs`, as for TFS-KBQA and Keqing);
:func:`parse_detect_config` then types it (:func:`~kbqa_lit.pipelines.config_files.build_config`): an
unknown key, a value of the wrong type or an unknown choice is a :class:`~kbqa_lit.errors.UserInputError`
naming the file and the key. :func:`~kbqa_lit.pipelines.fc.build.build_component_stage` builds the stage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.index.connectivity import ASK_SAMPLE
from kbqa_lit.pipelines.config_files import build_config, read_config_mapping
from kbqa_lit.pipelines.fc.pairs import TYPE_MATCHES
from kbqa_lit.pipelines.fc.pruning import ON_EMPTY
from kbqa_lit.pipelines.fc.skeleton_neighbours import VOTES
from kbqa_lit.pipelines.kb_config import KBConfig

#: Where skeletons come from: the trained seq2seq parser (the paper's) or the nearest training questions.
SKELETON_SOURCES = ("parser", "neighbours")


@dataclass
class DetectionConfig:
    """Relation and class detection (:class:`~kbqa_lit.pipelines.fc.detection.ComponentDetector`).

    Attributes:
        recall_size: BM25 candidates per question that the extractor re-ranks.
        top_k: Relations (and classes) kept per question, best first (the paper's 10).
    """

    recall_size: int = 100
    top_k: int = 10


@dataclass
class LinkingConfig:
    """Entity linking with relation-aware pruning (:class:`~kbqa_lit.pipelines.fc.linking.FCEntityLinker`).

    Attributes:
        json: A precomputed linking file (JSON lines: ``qid``, ``question``, ``mentions``) instead
            of the KB's name index; ``None``: the index.
        max_candidates: Entities the name index proposes per mention.
        top_k: Detected relations the pruning checks KB edges to.
        prune: Keep only candidates with an edge to one of them (``False``: the ablation without pruning).
        on_empty: A mention none of whose candidates has such an edge: ``drop`` it (the paper's) or
            ``keep`` its unpruned pick (ours).
    """

    json: str | None = None
    max_candidates: int = 50
    top_k: int = 10
    prune: bool = True
    on_empty: str = "keep"

    def __post_init__(self) -> None:
        check_choice("linking.on_empty", self.on_empty, ON_EMPTY)


@dataclass
class PairsConfig:
    """The KB-connected pairs (:class:`~kbqa_lit.pipelines.fc.pairs.PairBuilder`).

    Attributes:
        type_match: How a class matches a relation's domain or range: ``exact`` (the ontology's
            "is", the paper's), ``hierarchy`` or ``kb`` (the KB's types, ours).
        reverse_hops: Relation–relation pairs may use backward ``(R r)`` hops (ours; ``False``:
            the paper's forward pairs).
        ask_sample: Edges of the first relation (instances of the class) each relation–relation
            (``type_match: kb`` class–relation) ASK follows: a bounded cost on a large KB
            (:data:`~kbqa_lit.kb.index.connectivity.ASK_SAMPLE`); ``null``: every edge (exact, a cost
            that grows with the KB).
    """

    type_match: str = "kb"
    reverse_hops: bool = True
    ask_sample: int | None = ASK_SAMPLE

    def __post_init__(self) -> None:
        check_choice("pairs.type_match", self.type_match, TYPE_MATCHES)
        if self.ask_sample is not None and (isinstance(self.ask_sample, bool) or int(self.ask_sample) < 1):
            raise UserInputError(f"pairs.ask_sample must be a positive integer or null, got {self.ask_sample!r}")


@dataclass
class SkeletonConfig:
    """Where the logical skeletons come from.

    Attributes:
        source: ``parser`` (the trained seq2seq parser, the paper's) or ``neighbours`` (the
            skeletons of the nearest training questions,
            :mod:`~kbqa_lit.pipelines.fc.skeleton_neighbours`).
        checkpoint: The parser's checkpoint (``parser``); ``None``: no skeletons (the −logical
            skeleton ablation).
        class_path: The parser's LightningModule class, ``package.module.Class`` (a system folder
            imports no other system's: the class comes from the config, as in LightningCLI configs).
        beams: Skeleton beams generated per question.
        max_new_tokens: Longest skeleton.
        mask_mentions: Mask entity mentions in the parser's input, as it was trained.
        train_files: The training split (``neighbours``: questions with S-expressions).
        neighbours: Nearest training questions considered (``neighbours``).
        vote: Skeletons ranked by their nearest question (``max``) or summed similarity (``sum``).
        encoder: The sentence encoder of ``neighbours``.
    """

    source: str = "parser"
    checkpoint: str | None = None
    class_path: str | None = None
    beams: int = 4
    max_new_tokens: int = 48
    mask_mentions: bool = True
    train_files: list[str] = field(default_factory=list)
    neighbours: int = 20
    vote: str = "max"
    encoder: str = MINILM

    def __post_init__(self) -> None:
        check_choice("skeleton.source", self.source, SKELETON_SOURCES)
        check_choice("skeleton.vote", self.vote, VOTES)


@dataclass
class DetectConfig:
    """A whole ``kbqa fc detect`` config (see the module docstring).

    Attributes:
        kb: The knowledge base (its store gives the relation inventory, the name index and the pairs).
        files: Question files to annotate (common schema); no gold field is read.
        out_dir: Where each file is written, under its own name, each row with ``meta["fc"]``.
        ontology: The schema file (domains and ranges: extractor texts, pairs; its classes are
            the class inventory). Required by the stage.
        relation_extractor: The relation ``ComponentExtractor`` checkpoint. Required by the stage.
        class_extractor: The class ``ComponentExtractor`` checkpoint; ``None``: no classes.
        detection: Relation and class detection.
        linking: Entity linking and pruning.
        pairs: The KB-connected pairs.
        skeleton: The skeleton source.
        device: Where the extractors, the skeleton parser and the neighbours' encoder run: ``cpu``
            (the default), ``cuda`` / ``cuda:N`` (``gpu`` is read as ``cuda``, as Lightning's
            accelerator name), or ``auto`` (``cuda`` when one is visible).
    """

    kb: KBConfig
    files: list[str] = field(default_factory=list)
    out_dir: str = "outputs/fc/detected"
    ontology: str | None = None
    relation_extractor: str | None = None
    class_extractor: str | None = None
    detection: DetectionConfig = field(default_factory=DetectionConfig)
    linking: LinkingConfig = field(default_factory=LinkingConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)
    skeleton: SkeletonConfig = field(default_factory=SkeletonConfig)
    device: str = "cpu"

    def __post_init__(self) -> None:
        name = str(self.device)
        if name not in ("cpu", "gpu", "cuda", "auto") and not re.fullmatch(r"cuda:\d+", name):
            raise UserInputError(f"device must be cpu, gpu, cuda, cuda:N or auto, got {self.device!r}")


def parse_detect_config(raw: Mapping[str, Any], path: str | Path) -> DetectConfig:
    """The ``kbqa fc detect`` config of a mapping read from ``path`` (``--set`` overrides already in place).

    Raises:
        UserInputError: Naming ``path`` and the key (see :func:`~kbqa_lit.pipelines.config_files.build_config`).
    """
    return build_config(DetectConfig, raw, path, "FC")


def load_detect_config(path: str | Path) -> DetectConfig:
    """:func:`parse_detect_config` of a YAML file.

    Raises:
        UserInputError: A missing or unreadable file, or a config that does not parse.
    """
    return parse_detect_config(read_config_mapping(path, "FC"), path)


__all__ = [
    "SKELETON_SOURCES",
    "DetectConfig",
    "DetectionConfig",
    "LinkingConfig",
    "PairsConfig",
    "SkeletonConfig",
    "load_detect_config",
    "parse_detect_config",
]
