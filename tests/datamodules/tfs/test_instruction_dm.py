from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kbqa_lit.data.schema import Answer, KBQAExample, write_jsonl
from kbqa_lit.data.tfs.prompts import (
    DEFAULT_INSTRUCTIONS,
    TASKS,
    answer_target,
    format_prompt,
    items_target,
    lf_target,
    parse_items,
    task_input,
    task_target,
)
from kbqa_lit.datamodules.samplers import UnrepeatedDistributedSampler
from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionEncoder
from kbqa_lit.errors import UserInputError
from tests.helpers.toy import born_in


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("instr")
    write_jsonl(born_in(12, padded=True), d / "train.jsonl")
    write_jsonl(
        born_in(5, offset=1, prefix="v", padded=True) + [KBQAExample(qid="nogold", question="Who?")], d / "dev.jsonl"
    )
    write_jsonl(born_in(3, offset=2, prefix="t", padded=True), d / "test.jsonl")
    return d


@pytest.fixture(scope="module")
def dm(data_dir: Path) -> InstructionDataModule:
    data = InstructionDataModule(
        data_dir=str(data_dir),
        tasks=["s1", "s2_items", "s2_lf", "s3"],
        vocab_size=400,
        batch_size=4,
        max_length=256,
    )
    data.setup("fit")
    return data


# ------------------------------------------------------------------ text


def test_paper_instructions_are_the_defaults() -> None:
    assert DEFAULT_INSTRUCTIONS == {
        "s1": "Please translate the following questions into their corresponding logical forms.",
        "s2_items": "Please translate the following questions into their corresponding relations and "
        "extract entities mentioned in the questions.",
        "s2_lf": "Please generate the target logical form according to the following sentence.",
        "s3": "Please provide answers to the following questions based on your understanding.",
    }


def test_templates() -> None:
    alpaca = format_prompt("alpaca", "Do it.", "Where?")
    assert alpaca.startswith("Below is an instruction that describes a task")
    assert alpaca.endswith("### Instruction:\nDo it.\n\n### Input:\nWhere?\n\n### Response:\n")
    assert format_prompt("llama2_chat", "Do it.", "Where?") == "[INST] Do it.\nWhere? [/INST] "
    chat = format_prompt("llama2_chat", "Do it.", "Where?", system_prompt="Be brief.")
    assert chat == "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nDo it.\nWhere? [/INST] "
    with pytest.raises(ValueError, match="template"):
        format_prompt("vicuna", "a", "b")


def test_task_targets_and_items_round_trip() -> None:
    ex = born_in(1)[0]
    assert lf_target(ex) == "( join ( reverse [ people , person , place of birth ] ) [ Ada Lovelace ] )"
    items = items_target(ex)
    assert items == "[ people , person , place of birth ] ; [ Ada Lovelace ]"
    assert parse_items(items) == (["people.person.place_of_birth"], ["Ada Lovelace"])
    assert task_input("s2_lf", ex) == items  # the paper's Fig. 3: t2 reads the items only
    assert task_input("s2_lf", ex, "question_items") == f"{ex.question} | {items}"
    ex.answers.append(Answer("m.x", ""))
    assert answer_target(ex) == "London | m.x"
    assert answer_target(ex, max_answers=1) == "London"
    assert lf_target(KBQAExample(qid="x", question="?")) is None


# ------------------------------------------------------------------ rows and batches


def test_loss_only_on_the_response(dm: InstructionDataModule) -> None:
    tok = dm.tokenizer
    batch = next(iter(dm.val_dataloader()))
    examples = dm.gold_examples("val")  # the rows are teacher-forced from the file
    for k in range(batch["input_ids"].shape[0]):
        ids, labels, mask = batch["input_ids"][k], batch["labels"][k], batch["attention_mask"][k]
        task = TASKS[int(batch["task"][k])]
        ex = examples[int(batch["index"][k])]
        n = int(mask.sum())
        assert bool((labels[n:] == -100).all())  # padding is ignored
        supervised = labels[labels != -100].tolist()
        prompt = batch["prompt_input_ids"][k][batch["prompt_attention_mask"][k].bool()].tolist()
        assert ids[: len(prompt)].tolist() == prompt  # the prompt, unsupervised
        assert bool((labels[: len(prompt)] == -100).all())
        assert supervised == ids[len(prompt) : n].tolist()
        assert supervised[-1] == tok.eos_token_id and prompt[0] == tok.bos_token_id
        response = tok.decode(supervised, skip_special_tokens=True)
        assert response == task_target(task, ex)
        assert tok.decode(prompt, skip_special_tokens=True) == dm.encoder.prompt_text(task, task_input(task, ex))
    # left-padded prompts: every row's last prompt token is in the last column
    assert bool((batch["prompt_attention_mask"][:, -1] == 1).all())


def test_index_and_task_map_back_to_examples(dm: InstructionDataModule) -> None:
    rows = dm.rows("val")
    examples = dm.examples("val")
    # the example without gold keeps its s1/s2_items/s3 rows (for generation) but no s2_lf row
    nogold = [r for r in rows if examples[r["index"]].qid == "nogold"]
    assert sorted(TASKS[r["task"]] for r in nogold) == ["s1", "s2_items", "s3"]
    assert all(set(r["labels"]) == {-100} for r in nogold)
    assert len(rows) == 5 * 4 + 3
    # training rows need gold, and every task appears for every example
    train = dm.rows("train")
    assert len(train) == 12 * 4 and all(any(x != -100 for x in r["labels"]) for r in train)


def test_prompt_truncation_keeps_instruction_cue_and_end_token(dm: InstructionDataModule) -> None:
    frame = len(InstructionEncoder(dm.tokenizer, max_input_length=1).encode_prompt("s1", "Where"))  # template + 1
    cap = frame + 9  # a whole-prompt cap (max_length) leaves 10 input tokens here
    enc = InstructionEncoder(dm.tokenizer, max_length=cap, max_response_length=6, max_input_length=1000)
    long_q = "Where was Ada Lovelace born? " * 30
    row = enc.encode("s1", long_q, "( join [ a , b , c ] [ Ada Lovelace ] )")
    prompt = row["prompt_ids"]
    assert len(prompt) == cap
    text = dm.tokenizer.decode(prompt, skip_special_tokens=True)
    assert text.startswith("Below is an instruction") and "### Instruction:" in text
    assert text.endswith("### Response:\n")
    response = [x for x in row["labels"] if x != -100]
    assert len(response) == 6 and response[-1] == dm.tokenizer.eos_token_id
    assert row["input_ids"] == prompt + response
    assert len(enc.encode("s1", "Where?", None)["labels"]) == len(enc.encode_prompt("s1", "Where?"))


def test_instruction_overrides_and_errors(data_dir: Path) -> None:
    dm = InstructionDataModule(
        data_dir=str(data_dir),
        tasks="s3",
        instructions={"s3": "Answer it."},
        template="llama2_chat",
        vocab_size=400,
    )
    assert dm.tasks == ("s3",)
    row = dm.rows("train")[0]
    assert dm.tokenizer.decode(row["prompt_ids"], skip_special_tokens=True).startswith("[INST] Answer it.\n")
    with pytest.raises(UserInputError, match="unknown task"):
        InstructionDataModule(data_dir=str(data_dir), tasks=["s4"])
    with pytest.raises(UserInputError, match="instructions: task must be one of .*; got 's9'"):
        InstructionDataModule(data_dir=str(data_dir), instructions={"s9": "x"})
    with pytest.raises(UserInputError, match="template"):
        InstructionDataModule(data_dir=str(data_dir), template="vicuna")


def test_distributed_eval_sees_each_row_once(dm: InstructionDataModule) -> None:
    n = len(dm.rows("val"))
    seen: list[tuple[int, int]] = []
    for rank in (0, 1):
        dm.trainer = SimpleNamespace(world_size=2, global_rank=rank)  # type: ignore[assignment]
        loader = dm.val_dataloader()
        assert isinstance(loader.sampler, UnrepeatedDistributedSampler)
        seen += [(int(i), int(t)) for b in loader for i, t in zip(b["index"], b["task"], strict=True)]
    dm.trainer = None  # type: ignore[assignment]
    assert len(seen) == n and len(set(seen)) == n


def test_synthetic_world_built_on_first_use(tmp_path: Path) -> None:
    dm = InstructionDataModule(data_dir=str(tmp_path / "syn"), synthetic_seed=0, tasks="s1,s3", batch_size=8)
    assert (tmp_path / "syn" / "train.jsonl").is_file()
    assert next((tmp_path / "syn" / ".tokenizer").glob("bpe-*/tokenizer.json")).is_file()
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert set(batch) >= {"input_ids", "labels", "prompt_input_ids", "index", "task"}
    assert batch["input_ids"].dtype == torch.long and batch["input_ids"].shape[0] == 8
    prompts = [dm.tokenizer.decode(p, skip_special_tokens=True) for p in batch["prompt_input_ids"]]
    for k, text in enumerate(prompts):
        assert dm.examples("train")[int(batch["index"][k])].question in text
