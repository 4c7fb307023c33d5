from __future__ import annotations

import json

import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.schema import KBQAExample, read_jsonl, write_jsonl
from kbqa_lit.data.split import split_examples
from kbqa_lit.errors import UserInputError


def _examples(n: int) -> list[KBQAExample]:
    return [KBQAExample(qid=f"q{i}", question=f"question {i}") for i in range(n)]


def test_split_is_deterministic_stable_and_complete():
    parts = split_examples(_examples(1000), [0.8, 0.1, 0.1], seed=3)
    qids = [ex.qid for name in ("train", "dev", "test") for ex in parts[name]]
    assert sorted(qids) == sorted(f"q{i}" for i in range(1000))
    assert 740 < len(parts["train"]) < 860 and 60 < len(parts["dev"]) < 140
    again = split_examples(list(reversed(_examples(1000))), [0.8, 0.1, 0.1], seed=3)
    assert {e.qid for e in again["dev"]} == {e.qid for e in parts["dev"]}  # order-independent
    grown = split_examples(_examples(1200), [0.8, 0.1, 0.1], seed=3)
    assert {e.qid for e in parts["test"]} <= {e.qid for e in grown["test"]}  # adding questions moves none
    other = split_examples(_examples(1000), [0.8, 0.1, 0.1], seed=4)
    assert {e.qid for e in other["dev"]} != {e.qid for e in parts["dev"]}


@pytest.mark.parametrize("fractions", [[0.5], [0.5, 0.6], [1.2, -0.2], [0.3, 0.3, 0.3, 0.1]])
def test_bad_fractions_are_a_typed_error(fractions):
    with pytest.raises(UserInputError):
        split_examples(_examples(3), fractions)


def test_duplicate_qids_are_refused():
    with pytest.raises(UserInputError, match="duplicate qid"):
        split_examples(_examples(3) + _examples(1), [0.5, 0.5])


def test_split_tool(tmp_path, capsys):
    write_jsonl(_examples(50), tmp_path / "all.jsonl")
    assert (
        main(
            [
                "data",
                "split",
                "--input",
                str(tmp_path / "all.jsonl"),
                "--out",
                str(tmp_path / "s"),
                "--fractions",
                "0.6",
                "0.4",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["examples"]["train"] + out["examples"]["dev"] == 50 and "test" not in out["examples"]
    assert len(list(read_jsonl(tmp_path / "s" / "train.jsonl"))) == out["examples"]["train"]
    assert main(["data", "split", "--input", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_max_per_split_is_a_hash_sample_in_file_order():
    exs = _examples(300)
    full = split_examples(exs, [0.5, 0.25, 0.25], seed=3)
    capped = split_examples(exs, [0.5, 0.25, 0.25], seed=3, max_per_split=20)
    for name in ("train", "dev", "test"):
        assert len(capped[name]) == 20
        assert {e.qid for e in capped[name]} <= {e.qid for e in full[name]}  # same assignment
        order = [exs.index(e) for e in capped[name]]
        assert order == sorted(order)  # file order kept
    # a sample, not the first 20 of the file
    assert [e.qid for e in capped["train"]] != [e.qid for e in full["train"][:20]]
    assert split_examples(exs, [0.5, 0.5], max_per_split=1000)["train"] == full_two(exs)
    with pytest.raises(UserInputError, match="max_per_split"):
        split_examples(exs, [0.5, 0.5], max_per_split=-1)


def full_two(exs):
    return split_examples(exs, [0.5, 0.5])["train"]
