"""The TFS format settings: input-only truncation, S2-t2 input (items / question | items), schema form."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.data.tfs.prompts import (
    items_target,
    lf_target,
    parse_items,
    prompt_parts,
    read_schema_ids,
    resolve_instructions,
    s2_lf_input,
)
from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionEncoder
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr
from kbqa_lit.pipelines.tfs.fallback import ChainMember
from tests.helpers.toy import born_in


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("formats")
    write_jsonl(born_in(8, padded=True), d / "train.jsonl")
    write_jsonl(born_in(3, offset=1, prefix="v", padded=True), d / "dev.jsonl")
    return d


def _dm(data_dir: Path, **kwargs) -> InstructionDataModule:
    return InstructionDataModule(data_dir=str(data_dir), vocab_size=400, **kwargs)


@pytest.fixture(scope="module")
def dm(data_dir: Path) -> InstructionDataModule:
    return _dm(data_dir, tasks=["s1", "s2_lf"])


@pytest.mark.parametrize("template", ["alpaca", "llama2_chat"])
def test_a_long_question_loses_its_end_and_the_template_stays_whole(dm, template: str) -> None:
    tok = dm.tokenizer
    enc = InstructionEncoder(tok, template=template, max_input_length=16)
    long_q = "Where was Ada Lovelace born and who were the parents of Ada Lovelace? " * 20
    prompt = enc.encode_prompt("s1", long_q)
    prefix, _, suffix = prompt_parts(template, resolve_instructions()["s1"], "")
    prefix_ids = tok(prefix, add_special_tokens=False)["input_ids"]
    suffix_ids = tok(suffix, add_special_tokens=False)["input_ids"]
    input_ids = tok(long_q, add_special_tokens=False)["input_ids"]
    assert len(prefix_ids) + len(suffix_ids) > 16  # the template alone is longer than the input budget
    # <s> + the whole template around the first 16 input tokens
    assert prompt == [tok.bos_token_id, *prefix_ids, *input_ids[:16], *suffix_ids]
    text = tok.decode(prompt, skip_special_tokens=True)
    assert text.startswith(prefix.strip()[:20]) and text.endswith(suffix)
    # a short question is left alone; a whole-prompt cap below the template is an error, not a cut template
    short = tok("Where?", add_special_tokens=False)["input_ids"]
    assert enc.encode_prompt("s1", "Where?") == [tok.bos_token_id, *prefix_ids, *short, *suffix_ids]
    with pytest.raises(ValueError, match="shorter than the s1 template"):
        InstructionEncoder(tok, template=template, max_length=len(prefix_ids)).encode_prompt("s1", long_q)


def test_the_datamodule_counts_128_tokens_of_input(dm) -> None:
    """The default: 128 input tokens, no cap on the whole prompt (the template comes on top)."""
    assert dm.encoder.max_input_length == 128 and dm.encoder.max_length is None
    settings = dm.encoder.settings()
    assert settings["s2_lf_input"] == "items" and settings["schema_form"] == "words"


def test_s2_lf_reads_the_items_only_by_default_and_the_pipeline_agrees(data_dir, dm) -> None:
    ex = dm.gold_examples("train")[0]
    items = items_target(ex)
    both = _dm(data_dir, tasks=["s2_lf"], s2_lf_input="question_items")
    for data, expected in ((dm, items), (both, f"{ex.question} | {items}")):
        row = next(r for r in data.rows("train") if r["index"] == 0 and r["task"] == 2)  # task 2: s2_lf
        text = data.tokenizer.decode(row["prompt_ids"], skip_special_tokens=True)
        assert text.endswith(f"### Input:\n{expected}\n\n### Response:\n")
        assert (ex.question in text) == (data is both)
        # inference builds the t2 input from the same recorded setting
        member = ChainMember("m", {}, {"s2_lf": InstructionEncoder(None, **_formats(data.encoder.settings()))})
        assert member.s2_lf_text(ex.question, items) == expected == data.encoder.input_of("s2_lf", ex)
    with pytest.raises(UserInputError, match="s2_lf_input"):
        _dm(data_dir, s2_lf_input="question")
    with pytest.raises(ValueError, match="s2_lf_input"):
        s2_lf_input("q", "i", "both")


def _formats(settings: dict) -> dict:
    return {k: settings[k] for k in ("s2_lf_input", "schema_form")}


def test_schema_form_ids_writes_raw_relations_and_reads_back_like_words(data_dir) -> None:
    ids = _dm(data_dir, tasks=["s1", "s2_items"], schema_form="ids")
    ex = ids.gold_examples("train")[0]
    rows = [r for r in ids.rows("train") if r["index"] == 0]
    responses = [ids.tokenizer.decode([x for x in r["labels"] if x != -100], skip_special_tokens=True) for r in rows]
    assert responses == [
        "( join ( reverse people.person.place_of_birth ) [ Ada Lovelace ] )",
        "[ people.person.place_of_birth ] ; [ Ada Lovelace ]",
    ]
    assert (
        parse_items(responses[1])
        == parse_items(items_target(ex))
        == (["people.person.place_of_birth"], ["Ada Lovelace"])
    )
    labels = {"Ada Lovelace": ["m.ada"]}
    words = denormalize_sexpr(lf_target(ex), labels)
    assert denormalize_sexpr(lf_target(ex, "ids"), labels) == words == "(JOIN (R people.person.place_of_birth) m.ada)"
    # a bracketed raw id (as a model may write it) is a relation in the ids form; entity ids stay bracketed
    bracketed = "( join ( reverse [ people.person.place_of_birth ] ) [ m.ada ] )"
    assert read_schema_ids(bracketed) == "( join ( reverse people.person.place_of_birth ) [ m.ada ] )"
    member = ChainMember("m", {}, {"s1": InstructionEncoder(None, schema_form="ids")})
    assert denormalize_sexpr(member.read_lf("s1", bracketed)) == "(JOIN (R people.person.place_of_birth) m.ada)"
    with pytest.raises(UserInputError, match="schema_form"):
        _dm(data_dir, schema_form="iris")
