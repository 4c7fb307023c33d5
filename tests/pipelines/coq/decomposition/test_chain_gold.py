"""Gold decompositions from gold relation chains (MetaQA, PathQuestion), on the real files in ../shared/data."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.chain_wording import example_chain, step_wordings, synthesised_wording
from kbqa_lit.data.formats import read_dataset
from kbqa_lit.data.keqing.templates import mine_templates
from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.pipelines.coq.decomposition.chain_gold import chain_decomposition, fill_chain_decompositions
from tests.helpers.shared_data import shared_path

TRAINED = Path(__file__).resolve().parents[4] / "configs" / "coq" / "decompose" / "trained.yaml"


@pytest.fixture(scope="module")
def pathquestion() -> list:
    return list(islice(read_dataset("pathquestion", shared_path("pathquestion", "PQ-2H.txt")), 60))


@pytest.fixture(scope="module")
def metaqa() -> list:
    root = shared_path("metaqa")
    one = list(islice(read_metaqa_hops(root, (1,)), 400))
    two = list(islice(read_metaqa_hops(root, (2,)), 40))
    return one + two


def read_metaqa_hops(root: Path, hops: tuple[int, ...]):
    from kbqa_lit.data.formats.metaqa import read_metaqa

    return read_metaqa(root, split="dev", hops=hops)


def test_a_pathquestion_path_becomes_sub_questions_with_its_intermediate_entity(pathquestion: list) -> None:
    ex = pathquestion[0]  # which nationality is frederica_of_mecklenburg-strelitz 's couple ? (spouse, nationality)
    assert chain_decomposition(ex, step_wordings(pathquestion)) == (
        "[SUBQ] what is the spouse of frederica of mecklenburg-strelitz? [ANS] ernest augustus i of hanover "
        "[SUBQ] what is the nationality of ernest augustus i of hanover? [ANS] united kingdom"
    )


def test_metaqa_hops_are_worded_as_its_one_hop_questions(metaqa: list) -> None:
    wordings = step_wordings(metaqa)
    assert wordings, "MetaQA's one-hop questions word their hops"
    filled, n = fill_chain_decompositions([e for e in metaqa if e.meta["hops"] == 2], wordings)
    assert n == len(filled) == 40
    worded = 0
    for ex in filled:
        _, chain = example_chain(ex)
        assert ex.meta["decomposition_source"] == "chain" and ex.decomposition.count("[SUBQ]") == 2
        name = ex.topic_entities[next(iter(ex.topic_entities))]
        first = ex.decomposition.split(" [ANS] ")[0]
        if chain[0] in wordings:  # the mined wording, the entity in its slot, not a relation-name wording
            assert first == "[SUBQ] " + wordings[chain[0]][0].replace("[mask]", name).rstrip(" ?") + "?"
            assert "what is the" not in first and "what has" not in first
            worded += 1
        assert "[ANS] #1 [SUBQ]" in ex.decomposition  # MetaQA gives no intermediate entity
    assert worded >= 5  # the first 400 one-hop questions ask some of the relations


def test_keqing_and_coq_word_a_hop_the_same(metaqa: list, pathquestion: list) -> None:
    for examples in (metaqa, pathquestion):
        bank, wordings = mine_templates(examples), step_wordings(examples)
        hops = {h for ex in examples if (found := example_chain(ex)) for h in found[1]}
        for hop in hops:  # the most frequent one-hop wording, else the one from the relation's name
            expected = wordings[hop][0] if hop in wordings else synthesised_wording(hop)
            assert bank.step_template(hop) == expected
            if hop not in wordings:
                assert expected.startswith(("what is the", "what has"))


def test_training_rows_from_chains_mask_pathquestion_names_written_with_underscores(
    pathquestion: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.jsonl"
    write_jsonl(pathquestion, train)
    out = tmp_path / "rows.jsonl"
    argv = ["decompose", "--config", str(TRAINED), "--training-rows", "--input", str(train), "--out", str(out)]
    assert main(argv) == 2  # PathQuestion has no gold decompositions of its own
    assert "--chains-from TRAIN.jsonl builds them" in capsys.readouterr().err
    assert main([*argv, "--chains-from", str(train)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["rows"] == summary["from_chains"] == len(pathquestion)
    row = json.loads(out.read_text().splitlines()[0])
    assert row["prompt"] == 'Decompose the question "which nationality is [E0] \'s couple ?" step by step:\n'
    assert row["response"].startswith(
        "[SUBQ] what is the spouse of [E0]? [ANS] #1 [SUBQ] what is the nationality of #1? [ANS] #2 [SCHEMA] [E0]"
    )


def test_chains_from_only_with_training_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["decompose", "--config", str(TRAINED), "--input", "x.jsonl", "--out", str(tmp_path / "o.jsonl")]
    assert main([*argv, "--chains-from", "x.jsonl"]) == 2
    assert "give it with --training-rows" in capsys.readouterr().err
