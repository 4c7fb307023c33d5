"""Build FC-KBQA's component stage from a YAML config and trained checkpoints (``kbqa fc detect``).

The config (``configs/fc/detect.yaml``) is a mapping; unknown keys are errors::

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

The relation inventory is the store's; the class inventory the ontology's classes. Linking is
the KB's name index (:class:`~kbqa_lit.pipelines.fc.linking.IndexMentionLinker`) or a
precomputed JSON-lines file (``linking.json``). The skeleton parser is the project's seq2seq
generator, named by ``skeleton.class_path`` in the config (a system folder imports no other
system's: the class comes from the config, as in LightningCLI configs); ``source: neighbours``
ranks the skeletons of the nearest training questions instead
(:mod:`~kbqa_lit.pipelines.fc.skeleton_neighbours`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightning as L

from kbqa_lit.data.fc.schema_source import load_schema, ontology_classes
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.index.relation_inventory import RelationInventory
from kbqa_lit.modules.checkpoint_loading import load_module_checkpoint
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.pipelines.fc.components import ComponentStage
from kbqa_lit.pipelines.fc.detection import ComponentDetector
from kbqa_lit.pipelines.fc.linking import FCEntityLinker, IndexMentionLinker, JsonMentionLinker, MentionLinker
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from kbqa_lit.pipelines.fc.skeleton_neighbours import NeighbourSkeletons

#: Where skeletons come from: the trained seq2seq parser (the paper's) or the nearest training questions.
SKELETON_SOURCES = ("parser", "neighbours")

#: Sections and their keys with defaults (``None``: required when the section is read).
DEFAULTS: dict[str, Any] = {
    "files": [],
    "out_dir": "outputs/fc/detected",
    "kb": {"store": None, "build_from": [], "format": "nt", "timeout": 30.0},
    "ontology": None,
    "relation_extractor": None,
    "class_extractor": None,
    "detection": {"recall_size": 100, "top_k": 10},
    "linking": {"json": None, "max_candidates": 50, "top_k": 10, "prune": True, "on_empty": "keep"},
    "pairs": {"type_match": "kb", "reverse_hops": True},
    "skeleton": {
        "source": "parser",
        "checkpoint": None,
        "class_path": None,
        "beams": 4,
        "max_new_tokens": 48,
        "mask_mentions": True,
        "train_files": [],
        "neighbours": 20,
        "vote": "max",
        "encoder": "all-MiniLM-L6-v2",
    },
}


def resolve_config(
    raw: Mapping[str, Any], overrides: Mapping[str, Any] | None = None, defaults: Mapping[str, Any] = DEFAULTS
) -> dict[str, Any]:
    """The config with defaults filled in and dotted ``overrides`` (``kb.store=...``) applied.

    ``defaults`` names the sections and keys (:data:`DEFAULTS`: ``kbqa fc detect``'s).

    Raises:
        UserInputError: On an unknown section or key, or a section that is not a mapping.
    """
    cfg: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in defaults.items()}

    def put(key: str, value: Any) -> None:
        section, _, sub = key.partition(".")
        if section not in defaults:
            raise UserInputError(f"unknown FC config key {key!r}; sections: {', '.join(defaults)}")
        if not sub:
            if isinstance(defaults[section], dict):
                if not isinstance(value, Mapping):
                    raise UserInputError(f"FC config section {section!r} must be a mapping")
                for k, v in value.items():
                    put(f"{section}.{k}", v)
            else:
                cfg[section] = value
            return
        if not isinstance(defaults[section], dict) or sub not in defaults[section]:
            raise UserInputError(f"unknown FC config key {key!r}")
        cfg[section][sub] = value

    for key, value in raw.items():
        put(str(key), value)
    for key, value in (overrides or {}).items():
        put(str(key), value)
    return cfg


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


def _required(cfg: Mapping[str, Any], key: str) -> Any:
    if not cfg.get(key):
        raise UserInputError(f"the FC config needs {key}")
    return cfg[key]


def build_component_stage(cfg: Mapping[str, Any], store: Any) -> ComponentStage:
    """The component stage of a resolved config (:func:`resolve_config`) over an open store.

    Raises:
        UserInputError: On a missing or wrong checkpoint, ontology or setting.
    """
    ontology, listed = load_schema(_required(cfg, "ontology"))
    hint = "kbqa fit --config configs/fc/{}.yaml"
    rel = load_module_checkpoint(
        _required(cfg, "relation_extractor"), ComponentExtractor, hint.format("relation_extractor")
    )
    rel.set_ontology(ontology)
    cls = None
    if cfg.get("class_extractor"):
        cls = load_module_checkpoint(cfg["class_extractor"], ComponentExtractor, hint.format("class_extractor"))
        cls.set_ontology(ontology)
    det = cfg["detection"]
    detector = ComponentDetector(
        rel.eval(),
        RelationInventory.from_store(store),
        cls.eval() if cls is not None else None,
        ontology_classes(ontology, listed) if cls is not None else (),
        recall_size=int(det["recall_size"]),
        top_k=int(det["top_k"]),
    )
    link = cfg["linking"]
    index = EntityIndex.for_store(store)
    mentions: MentionLinker = (
        JsonMentionLinker(link["json"])
        if link["json"]
        else IndexMentionLinker(index, max_candidates=int(link["max_candidates"]))
    )
    linker = FCEntityLinker(mentions, store, index.degree, int(link["top_k"]), bool(link["prune"]), link["on_empty"])
    pairs = PairBuilder(ontology, store, cfg["pairs"]["type_match"], bool(cfg["pairs"]["reverse_hops"]))
    sk = cfg["skeleton"]
    parser: Any = None
    check_choice("skeleton.source", sk["source"], SKELETON_SOURCES)
    if sk["source"] == "neighbours":
        if not sk["train_files"]:
            raise UserInputError("skeleton.source neighbours needs skeleton.train_files (the training split)")
        missing = [str(f) for f in sk["train_files"] if not Path(f).is_file()]
        if missing:
            raise UserInputError(f"no such skeleton.train_files file: {', '.join(missing)}")
        parser = NeighbourSkeletons(sk["train_files"], int(sk["neighbours"]), str(sk["encoder"]), str(sk["vote"]))
    elif sk["checkpoint"]:
        module_class = _module_class(sk["class_path"])
        parser = load_module_checkpoint(sk["checkpoint"], module_class, hint.format("skeleton_parser")).eval()
    return ComponentStage(
        detector,
        linker,
        pairs,
        parser,
        int(sk["beams"]),
        int(sk["max_new_tokens"]),
        mask_mentions=bool(sk["mask_mentions"]),
    )


__all__ = ["DEFAULTS", "SKELETON_SOURCES", "build_component_stage", "resolve_config"]
