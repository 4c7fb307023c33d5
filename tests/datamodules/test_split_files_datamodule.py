"""SplitFilesDataModule: the shared file arguments, saved and listed as when each datamodule declared them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonargparse import ArgumentParser

from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.coq.classifier import SchemaDataModule
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.datamodules.fc.composer import ComposerDataModule
from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.datamodules.fc.skeleton import SkeletonParserDataModule
from kbqa_lit.datamodules.relation_retrieval import RelationRetrievalDataModule
from kbqa_lit.datamodules.split_files import LinkedSplitFilesDataModule, SplitFilesDataModule
from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.errors import UserInputError

FILE_ARGS = ("data_dir", "train_file", "val_file", "test_file", "predict_file", "synthetic_seed", "synthetic_size")
LINKING_ARGS = ("linking", "linking_store", "linking_build_from", "linking_top_k")

#: The file arguments at their defaults (``data_dir`` is the test's folder).
FILES = {"train_file": None, "val_file": None, "test_file": None, "predict_file": None}
FILES |= {"synthetic_seed": None, "synthetic_size": "small"}
LINKING = {"linking": "predicted", "linking_store": None, "linking_build_from": None, "linking_top_k": 3}
FC = {"oracle": "none", **LINKING, "tokenizer_name_or_path": None, "vocab_size": 300}
FC |= {"max_source_length": 256, "max_target_length": 128, "batch_size": 4, "num_workers": 0}
RETRIEVAL = {**FILES, "store": None, "inventory_file": None, "tokenizer_name_or_path": None, "vocab_size": 2000}
RETRIEVAL |= {"num_negatives": 6, "eval_candidates": 100, "max_length": 64, "batch_size": 8, "eval_batch_size": 8}
RETRIEVAL |= {"num_workers": 0, "seed": 0}

#: The hyper-parameters each datamodule saved before the file arguments moved to SplitFilesDataModule
#: (captured from that code with the arguments of ``BUILDS``), less ``data_dir`` and the store paths.
#: One key is new: the retrieval modules have no predict stage, and now save ``predict_file: None``.
EXPECTED: dict[str, dict[str, Any]] = {
    "generation": {
        **FILES,
        "tokenizer_name_or_path": None,
        "vocab_size": 300,
        "use_decomposition": True,
        "patterns": "none",
        "top_k_patterns": None,
        "answer_task": True,
        "mask_entities": False,
        "max_source_length": 256,
        "max_target_length": 128,
        "batch_size": 4,
        "eval_batch_size": 32,
        "num_workers": 0,
        "bucket_by_length": True,
        "cache_dir": None,
        **LINKING,
    },
    "schema": {
        **FILES,
        "candidates": "auto",
        "num_candidates": 4,
        "negative_seed": 0,
        "use_decomposition": True,
        "max_entity_relations": 8,
        "tokenizer_name_or_path": None,
        "vocab_size": 300,
        "max_length": 256,
        "batch_size": 32,
        "eval_batch_size": 64,
        "predict_batch_size": 8,
        "num_workers": 0,
        "bucket_by_length": True,
        "entity_item_relations": "gold",
        "refined_relations_files": None,
        "num_folds": None,
        "fold": None,
    },
    "skeleton": {**FILES, **FC, "eval_batch_size": 4, "mask_mentions": True},
    "composer": {
        **FILES,
        **FC,
        "eval_batch_size": 32,
        "knowledge": "pairs",
        "input_format": "entity-pairs",
        "train_components": "gold+distractors",
        "use_skeletons": True,
        "mask_entities": True,
        "num_distractors": 3,
        "seed": 0,
        "max_input_words": None,
        "pair_constraint": "bag",
        "chain_heads": 0,
        "pair_partners": "last",
    },
    "relation_retrieval": {**RETRIEVAL, "hard_negative_ratio": 0.5},
    "extractor": {**RETRIEVAL, "hard_negative_ratio": 0.0, "kind": "relation", "ontology": None},
    "instruction": {
        **FILES,
        "tasks": "s1,s3",
        "instructions": None,
        "template": "alpaca",
        "system_prompt": None,
        "tokenizer_name_or_path": None,
        "vocab_size": 400,
        "max_length": None,
        "max_response_length": 128,
        "max_input_length": 128,
        "s2_lf_input": "items",
        "schema_form": "words",
        "max_answers": 10,
        "batch_size": 8,
        "eval_batch_size": 16,
        "num_workers": 0,
        **LINKING,
    },
}

Build = Callable[[Path, Path], SplitFilesDataModule]

#: Each datamodule built from ``(small split folder, world folder)``.
BUILDS: dict[str, Build] = {
    "generation": lambda d, w: GenerationDataModule(data_dir=str(d), vocab_size=300, batch_size=4),
    "schema": lambda d, w: SchemaDataModule(
        data_dir=str(d), store=str(w / "kb"), relations_file=str(w / "schema.json"), vocab_size=300, num_candidates=4
    ),
    "skeleton": lambda d, w: SkeletonParserDataModule(data_dir=str(d), vocab_size=300, batch_size=4, eval_batch_size=4),
    "composer": lambda d, w: ComposerDataModule(
        data_dir=str(d), vocab_size=300, batch_size=4, input_format="entity-pairs", train_components="gold+distractors"
    ),
    "relation_retrieval": lambda d, w: RelationRetrievalDataModule(
        data_dir=str(d), tokenizer_name_or_path=None, num_negatives=6
    ),
    "extractor": lambda d, w: ExtractorDataModule(
        data_dir=str(d), kind="relation", tokenizer_name_or_path=None, num_negatives=6
    ),
    "instruction": lambda d, w: InstructionDataModule(data_dir=str(d), vocab_size=400, tasks="s1,s3"),
}

#: The store path each build passes (the rest of ``EXPECTED`` is path-free).
PATHS: dict[str, Callable[[Path, Path], dict[str, str]]] = {
    "schema": lambda d, w: {"store": str(w / "kb"), "relations_file": str(w / "schema.json")},
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(small, world)``: the synthetic world with its store, and a folder of 12/8/4 of its examples."""
    root = tmp_path_factory.mktemp("split_files_dm")
    world, small = root / "w", root / "small"
    build_world(world, seed=0, size="small")
    from kbqa_lit.kb.store.loaders import build_store

    build_store(world / "kb", [world / "kb.nt"], "nt")
    small.mkdir()
    for name, count in (("train", 12), ("dev", 8), ("test", 4)):
        write_jsonl(list(read_jsonl(world / f"{name}.jsonl"))[:count], small / f"{name}.jsonl")
    return small, world


@pytest.mark.parametrize("name", list(BUILDS))
def test_saved_hyperparameters_are_those_of_before_base_defaults_included(name: str, folders) -> None:
    small, world = folders
    dm = BUILDS[name](small, world)
    expected = {"data_dir": str(small), **EXPECTED[name], **PATHS.get(name, lambda d, w: {})(small, world)}
    assert dict(dm.hparams) == expected
    assert list(dm.hparams)[: len(FILE_ARGS)] == list(FILE_ARGS)  # the base's first, then the subclass's
    if isinstance(dm, LinkedSplitFilesDataModule):
        assert list(dm.hparams)[len(FILE_ARGS) : len(FILE_ARGS) + len(LINKING_ARGS)] == list(LINKING_ARGS)


@pytest.mark.parametrize(
    "cls",
    [GenerationDataModule, SchemaDataModule, SkeletonParserDataModule, ComposerDataModule]
    + [RelationRetrievalDataModule, ExtractorDataModule, InstructionDataModule],
    ids=lambda c: c.__name__,
)
def test_the_cli_lists_the_file_arguments_with_type_default_and_help(cls: type) -> None:
    parser = ArgumentParser()
    parser.add_class_arguments(cls, "data")
    linked = issubclass(cls, LinkedSplitFilesDataModule) or "linking" in parser.get_defaults().data
    for arg in FILE_ARGS + (LINKING_ARGS if linked else ()):
        action = next(a for a in parser._actions if a.dest == f"data.{arg}")
        assert action.help and action.help != "==SUPPRESS=="
    assert parser.get_defaults().data.synthetic_size == "small"
    parsed = parser.parse_args(["--data.data_dir=d", "--data.synthetic_seed=3", "--data.val_file=v.jsonl"])
    assert (parsed.data.data_dir, parsed.data.synthetic_seed, parsed.data.val_file) == ("d", 3, "v.jsonl")
    with pytest.raises(SystemExit):
        parser.parse_args(["--data.synthetic_size=huge"])


@pytest.mark.parametrize("cls", [SplitFilesDataModule, LinkedSplitFilesDataModule], ids=lambda c: c.__name__)
def test_file_and_linking_arguments_are_keyword_only(cls: type) -> None:
    with pytest.raises(TypeError):
        cls("data")


def test_linking_is_checked_before_the_files() -> None:
    with pytest.raises(UserInputError, match="linking_top_k must be at least 1"):
        GenerationDataModule(linking_top_k=0)  # no files either: the linking message comes first, as before
