"""The decomposer's rows: the prompt as a backend tokenises it, the loss on the JSON response only."""

from __future__ import annotations

import pytest

from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.datamodules.collate import IGNORE_INDEX
from kbqa_lit.datamodules.keqing.decomposition import KeqingDecompositionDataModule
from kbqa_lit.errors import UserInputError


def examples() -> list[KBQAExample]:
    out = []
    for i, name in enumerate(["Heat", "Alien", "Ronin", "Solaris"]):
        eid = f"m.x{i}"
        out.append(
            KBQAExample(
                f"d{i}",
                f"who directed [{name}]",
                topic_entities={eid: name},
                s_expression=f"(JOIN (R f.f.directed_by) {eid})",
            )
        )
        out.append(
            KBQAExample(
                f"w{i}",
                f"who wrote the films directed by the director of [{name}]",
                topic_entities={eid: name},
                s_expression=f"(JOIN (R f.f.written_by) (JOIN f.f.directed_by (JOIN (R f.f.directed_by) {eid})))",
            )
        )
    out.append(KBQAExample("c", "how many films are there", s_expression="(COUNT (JOIN f.f.directed_by m.x0))"))
    return out


@pytest.fixture
def files(tmp_path):
    write_jsonl(examples(), tmp_path / "train.jsonl")
    write_jsonl(examples()[:2], tmp_path / "dev.jsonl")
    return tmp_path


def test_rows_are_prompt_then_response_with_loss_on_the_response(files):
    dm = KeqingDecompositionDataModule(
        str(files / "train.jsonl"),
        str(files / "dev.jsonl"),
        str(files / "bank.json"),
        instruction="Decompose.",
        batch_size=4,
    )
    assert (files / "bank.json").is_file() and any((files / ".tokenizer").iterdir())
    assert dm.skipped == {"train": 1}
    prompt, response = dm.texts("train")[1]
    assert prompt == "Decompose.\nQuestion: who wrote the films directed by the director of [E0]\nSub-questions: "
    assert response.count("question_text") == 3 and '"seed_entities": ["<ANSWER>-1"]' in response
    row = dm.rows("train")[1]
    prompt_ids = dm.tokenizer(prompt)["input_ids"]  # what HFCausalLMBackend feeds at inference
    assert row["input_ids"][: len(prompt_ids)] == prompt_ids
    assert row["labels"][: len(prompt_ids)] == [IGNORE_INDEX] * len(prompt_ids)
    assert row["labels"][len(prompt_ids) :] == row["input_ids"][len(prompt_ids) :]
    assert dm.tokenizer.decode(row["input_ids"][len(prompt_ids) : -1]) == response
    assert row["input_ids"][-1] == dm.tokenizer.eos_token_id
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert batch["input_ids"].shape == batch["labels"].shape == batch["attention_mask"].shape
    assert batch["input_ids"].shape[0] == 4


def test_chain_targets_and_bad_settings(files):
    dm = KeqingDecompositionDataModule(
        str(files / "train.jsonl"), str(files / "dev.jsonl"), str(files / "bank.json"), target="chains"
    )
    assert '"question_text": "f.f.directed_by>"' in dm.texts("val")[0][1]
    with pytest.raises(UserInputError, match="target"):
        KeqingDecompositionDataModule(
            str(files / "train.jsonl"), str(files / "dev.jsonl"), str(files / "b.json"), target="sparql"
        )
    with pytest.raises(UserInputError, match="no such example file"):
        KeqingDecompositionDataModule(str(files / "nope.jsonl"), str(files / "dev.jsonl"), str(files / "b2.json"))
