from __future__ import annotations

import pytest

from kbqa_lit.datamodules.coq.classifier import SchemaDataModule
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.datamodules.relation_retrieval import RelationRetrievalDataModule
from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.errors import UserInputError

MODULES = [GenerationDataModule, InstructionDataModule, RelationRetrievalDataModule, SchemaDataModule]


@pytest.mark.parametrize("cls", MODULES, ids=lambda c: c.__name__)
def test_file_arguments_are_checked_by_name(cls) -> None:
    with pytest.raises(UserInputError, match=f"{cls.__name__} needs data_dir or at least one split file"):
        cls()
    with pytest.raises(UserInputError, match="synthetic_seed needs data_dir"):
        cls(train_file="train.jsonl", synthetic_seed=0)
