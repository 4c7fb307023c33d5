"""Build FC-KBQA's component stage from a typed config and trained checkpoints (``kbqa fc detect``).

The config is a :class:`~kbqa_lit.pipelines.fc.config.DetectConfig` (``configs/fc/detect.yaml``; its
sections and keys are documented there). The relation inventory is the store's; the class inventory
the ontology's classes. Linking is the KB's name index
(:class:`~kbqa_lit.pipelines.fc.linking.IndexMentionLinker`) or a precomputed JSON-lines file
(``linking.json``). The skeleton parser is the project's seq2seq generator, named by
``skeleton.class_path`` in the config (a system folder imports no other system's: the class comes
from the config, as in LightningCLI configs); ``source: neighbours`` ranks the skeletons of the
nearest training questions instead (:mod:`~kbqa_lit.pipelines.fc.skeleton_neighbours`).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import lightning as L
import torch

from kbqa_lit.data.fc.schema_source import load_schema, ontology_classes
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.index.relation_inventory import RelationInventory
from kbqa_lit.modules.checkpoint_loading import load_module_checkpoint
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.pipelines.fc.components import ComponentStage
from kbqa_lit.pipelines.fc.config import DetectConfig
from kbqa_lit.pipelines.fc.detection import ComponentDetector
from kbqa_lit.pipelines.fc.linking import FCEntityLinker, IndexMentionLinker, JsonMentionLinker, MentionLinker
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from kbqa_lit.pipelines.fc.skeleton_neighbours import NeighbourSkeletons


def _module_class(class_path: str | None) -> type[L.LightningModule]:
    """The LightningModule class a config names (``package.module.Class``)."""
    module_name, _, name = str(class_path or "").rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), name) if module_name else None
    except ImportError as exc:
        raise UserInputError(f"skeleton.class_path {class_path!r}: {exc}") from None
    if not (isinstance(found, type) and issubclass(found, L.LightningModule)):
        raise UserInputError(f"skeleton.class_path must name a LightningModule class, got {class_path!r}")
    return found


def _required(value: str | None, key: str) -> str:
    if not value:
        raise UserInputError(f"the FC config needs {key}")
    return value


def torch_device(name: str) -> torch.device:
    """The torch device of a config's ``device`` (``cpu``, ``gpu``/``cuda``, ``cuda:N``, ``auto``).

    Raises:
        UserInputError: When a CUDA device is asked for and none is visible.
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise UserInputError(f"device {name!r}: no CUDA device is visible (use device: cpu or auto)")
    return torch.device("cuda" if name == "gpu" else name)


def build_component_stage(cfg: DetectConfig, store: Any) -> ComponentStage:
    """The component stage of a parsed config over an open store, its trained parts on ``cfg.device``.

    Raises:
        UserInputError: On a missing or wrong checkpoint, ontology or setting, or a device not there.
    """
    device = torch_device(cfg.device)
    ontology, listed = load_schema(_required(cfg.ontology, "ontology"))
    hint = "kbqa fit --config configs/fc/{}.yaml"
    rel = load_module_checkpoint(
        _required(cfg.relation_extractor, "relation_extractor"), ComponentExtractor, hint.format("relation_extractor")
    ).to(device)
    rel.set_ontology(ontology)
    cls = None
    if cfg.class_extractor:
        cls = load_module_checkpoint(cfg.class_extractor, ComponentExtractor, hint.format("class_extractor")).to(device)
        cls.set_ontology(ontology)
    det = cfg.detection
    detector = ComponentDetector(
        rel.eval(),
        RelationInventory.from_store(store),
        cls.eval() if cls is not None else None,
        ontology_classes(ontology, listed) if cls is not None else (),
        recall_size=det.recall_size,
        top_k=det.top_k,
    )
    link = cfg.linking
    index = EntityIndex.for_store(store)
    mentions: MentionLinker = (
        JsonMentionLinker(link.json) if link.json else IndexMentionLinker(index, max_candidates=link.max_candidates)
    )
    linker = FCEntityLinker(mentions, store, index.degree, link.top_k, link.prune, link.on_empty)
    pairs = PairBuilder(ontology, store, cfg.pairs.type_match, cfg.pairs.reverse_hops, ask_sample=cfg.pairs.ask_sample)
    sk = cfg.skeleton
    parser: Any = None
    if sk.source == "neighbours":
        if not sk.train_files:
            raise UserInputError("skeleton.source neighbours needs skeleton.train_files (the training split)")
        missing = [str(f) for f in sk.train_files if not Path(f).is_file()]
        if missing:
            raise UserInputError(f"no such skeleton.train_files file: {', '.join(missing)}")
        parser = NeighbourSkeletons(sk.train_files, sk.neighbours, sk.encoder, sk.vote, device=str(device))
    elif sk.checkpoint:
        module_class = _module_class(sk.class_path)
        parser = load_module_checkpoint(sk.checkpoint, module_class, hint.format("skeleton_parser")).to(device).eval()
    return ComponentStage(detector, linker, pairs, parser, sk.beams, sk.max_new_tokens, mask_mentions=sk.mask_mentions)


__all__ = ["build_component_stage", "torch_device"]
