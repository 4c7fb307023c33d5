from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kbqa_lit.backbones import seq2seq as backbones
from kbqa_lit.data.coq.generator_inputs import coq_texts, gold_patterns, render_pattern
from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.datamodules.collate import padding_share
from kbqa_lit.datamodules.coq import encoding
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.datamodules.samplers import LengthBucketSampler, UnrepeatedDistributedSampler
from kbqa_lit.errors import UserInputError
from tests.helpers.coq_toy_data import make_examples, write_splits

EX = KBQAExample(
    qid="x1",
    question="Which country was Ada Lovelace born in?",
    answers=[],
    topic_entities={"m.p1": "Ada Lovelace"},
    s_expression="(JOIN (R location.location.containedby) (JOIN (R people.person.place_of_birth) m.p1))",
    decomposition=("[SUBQ] where was Ada Lovelace born? [ANS] London [SUBQ] which country is London in? [ANS] England"),
    meta={"patterns": [["people.person.place_of_birth", "m.p1"], "free text pattern"]},
)
LF = (
    "( join ( reverse [ location , location , containedby ] ) "
    "( join ( reverse [ people , person , place of birth ] ) [ Ada Lovelace ] ) )"
)
GOLD_P = "[ people , person , place of birth ] , [ Ada Lovelace ]"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_splits(tmp_path_factory.mktemp("toy"))


def make_dm(data_dir: Path, **kw) -> GenerationDataModule:
    kw.setdefault("vocab_size", 300)
    kw.setdefault("batch_size", 4)
    kw.setdefault("eval_batch_size", 3)
    return GenerationDataModule(data_dir=str(data_dir), **kw)


# ------------------------------------------------------------------ the two CoQ inputs


def test_inputs_with_decomposition_and_gold_patterns() -> None:
    t = coq_texts(EX, use_decomposition=True, patterns="gold")
    assert t["source"] == f"Translate to S-expression: {EX.question} | {GOLD_P} | {EX.decomposition}"
    assert t["ans_source"] == f"Answer the question: {EX.question} | {GOLD_P} | {EX.decomposition}"
    assert t["target"] == LF
    assert t["ans_target"] is None  # no answers


def test_inputs_without_decomposition_or_patterns() -> None:
    t = coq_texts(EX, use_decomposition=False, patterns="none")
    assert t["source"] == f"Translate to S-expression: {EX.question}"
    assert t["ans_source"] == f"Answer the question: {EX.question}"


def test_predicted_patterns_and_their_shapes() -> None:
    t = coq_texts(EX, use_decomposition=False, patterns="predicted")
    assert t["source"] == f"Translate to S-expression: {EX.question} | {GOLD_P} | free text pattern"
    assert render_pattern({"relation": "a.b.c_d", "entity": "m.z", "label": "Zed"}, {}) == "[ a , b , c d ] , [ Zed ]"
    assert render_pattern(("a.b.c", "m.unknown"), {}) == "[ a , b , c ] , [ m.unknown ]"
    with pytest.raises(ValueError):
        render_pattern(42, {})
    no_meta = KBQAExample(qid="y", question="q?", s_expression=EX.s_expression)
    assert coq_texts(no_meta, patterns="predicted")["source"] == "Translate to S-expression: q?"


def test_top_k_patterns_keeps_the_first_k() -> None:
    t = coq_texts(EX, use_decomposition=False, patterns="predicted", top_k_patterns=1)
    assert t["source"] == f"Translate to S-expression: {EX.question} | {GOLD_P}"
    assert t["ans_source"] == f"Answer the question: {EX.question} | {GOLD_P}"
    assert coq_texts(EX, use_decomposition=False, patterns="predicted", top_k_patterns=5) == coq_texts(
        EX, use_decomposition=False, patterns="predicted"
    )


def test_datamodule_enforces_top_k_patterns(tmp_path: Path) -> None:
    write_splits(tmp_path)
    val = [json.loads(line) for line in (tmp_path / "dev.jsonl").read_text().splitlines()]
    for row in val:  # three stored patterns, best first (as PatternWriter writes them)
        words = row["question"].split()
        row["meta"]["patterns"] = [words[0], words[1], words[2]]
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in val))
    with pytest.raises(UserInputError, match="top_k_patterns"):
        make_dm(tmp_path, patterns="predicted", top_k_patterns=0)
    seen = {}
    for k in (1, None):
        dm = make_dm(tmp_path, patterns="predicted", top_k_patterns=k, use_decomposition=False)
        dm.setup("validate")
        batch = next(iter(dm.val_dataloader()))
        ex = dm.examples("val")[int(batch["index"][0])]
        seen[k] = dm.tokenizer.decode(batch["input_ids"][0], skip_special_tokens=True)
        expected = coq_texts(ex, use_decomposition=False, patterns="predicted", top_k_patterns=k)["source"]
        assert " ".join(seen[k].split()) == expected
    assert seen[1].count("|") == 1 and seen[None].count("|") == 3  # q | P1  vs  q | P1 | P2 | P3


def test_gold_patterns_come_from_meta_or_the_gold_sexpr() -> None:
    assert gold_patterns(EX.s_expression) == [("people.person.place_of_birth", "m.p1")]
    assert gold_patterns("(AND (JOIN a.b.c m.x) (JOIN (R d.e.f) m.y))") == [
        ("a.b.c", "m.x"),
        ("d.e.f", "m.y"),
    ]
    assert gold_patterns("not an s-expression (") == []
    ex = KBQAExample(qid="z", question="q?", meta={"gold_patterns": ["given"]}, s_expression=EX.s_expression)
    assert coq_texts(ex, use_decomposition=False)["source"] == "Translate to S-expression: q? | given"


def test_answer_target_joins_names() -> None:
    ex = make_examples(3)[2]
    assert coq_texts(ex)["ans_target"] == ex.answers[0].name
    ex.answers = ex.answers * 2
    assert coq_texts(ex)["ans_target"] == f"{ex.answers[0].name} | {ex.answers[0].name}"


# ------------------------------------------------------------------ batches


def test_batch_format_and_index_maps_to_examples(data_dir: Path) -> None:
    dm = make_dm(data_dir, patterns="none")
    dm.setup("fit")
    batch = next(iter(dm.val_dataloader()))
    assert set(batch) == {
        "input_ids",
        "attention_mask",
        "labels",
        "ans_input_ids",
        "ans_attention_mask",
        "ans_labels",
        "index",
    }
    assert all(v.dtype == torch.long for v in batch.values())
    assert batch["index"].tolist() == [0, 1, 2]  # file order
    tok = dm.tokenizer
    for row, i in enumerate(batch["index"].tolist()):
        ex, gold = dm.examples("val")[i], dm.gold_examples("val")[i]  # the input view; targets from the file
        texts = coq_texts(ex, use_decomposition=True, patterns="none", gold=gold)
        n = int(batch["attention_mask"][row].sum())
        assert tok.decode(batch["input_ids"][row, :n], skip_special_tokens=False).endswith("</s>")
        src = tok.decode(batch["input_ids"][row], skip_special_tokens=True)
        assert " ".join(src.split()) == texts["source"].replace("[SUBQ] ", "").replace("[ANS] ", "")
        labels = batch["labels"][row]
        assert tok.decode(labels[labels != -100], skip_special_tokens=True) == texts["target"]
        assert (batch["input_ids"][row, n:] == dm.pad_token_id).all()
    assert dm.vocab_size == len(tok) and dm.pad_token_id == 0


def test_answer_task_off_has_no_ans_fields(data_dir: Path) -> None:
    dm = make_dm(data_dir, answer_task=False)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert set(batch) == {"input_ids", "attention_mask", "labels", "index"}


def test_mask_entities_adds_slot_tokens_that_survive_decoding(data_dir: Path) -> None:
    dm = make_dm(data_dir, mask_entities=True)
    assert "[E0]" in dm.tokenizer.get_vocab() and "[E0]" not in dm.tokenizer.all_special_tokens
    dm.setup("fit")
    ds = dm.dataset("train")
    row = ds[0]
    ex = dm.examples("train")[int(row["index"])]
    target = dm.tokenizer.decode(row["labels"], skip_special_tokens=True)
    assert "[E0]" in target and next(iter(ex.topic_entities.values())) not in target
    assert "[E0]" not in make_dm(data_dir).tokenizer.get_vocab()


def test_train_leaves_out_examples_without_gold(tmp_path: Path) -> None:
    write_splits(tmp_path)
    exs = make_examples(6, seed=9)
    exs[1].s_expression = None
    write_jsonl(exs, tmp_path / "train.jsonl")
    write_jsonl(exs, tmp_path / "dev.jsonl")
    dm = make_dm(tmp_path, bucket_by_length=False)
    dm.setup("fit")
    train_idx = sorted(int(i) for b in dm.train_dataloader() for i in b["index"])
    assert train_idx == [0, 2, 3, 4, 5]
    val = next(iter(dm.val_dataloader()))
    assert val["index"].tolist() == [0, 1, 2]
    assert (val["labels"][1] == -100).all() and (val["labels"][0] != -100).any()


def test_tokenized_cache_is_reused(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dm1 = make_dm(data_dir)
    dm1.setup("fit")
    dm1.setup("test")
    first = dm1.encode_count

    def boom(*a, **k):
        raise AssertionError("re-tokenised")

    monkeypatch.setattr(encoding, "encode_examples", boom)
    monkeypatch.setattr(backbones, "train_subword_tokenizer", boom)
    dm2 = make_dm(data_dir)  # tokenizer from data_dir/.tokenizer, splits from the Arrow cache
    dm2.setup("fit")
    dm2.setup("test")
    dm2.setup("predict")  # the test file: same cache entry
    assert first <= 3 and dm2.encode_count == 0
    assert dm2.dataset("train").lengths == dm1.dataset("train").lengths
    assert list((data_dir / ".tokenizer").iterdir())
    monkeypatch.undo()
    dm3 = make_dm(data_dir, use_decomposition=False)  # other settings: a new entry
    dm3.setup("validate")
    assert dm3.encode_count == 1


def test_bucketing_reduces_padding(tmp_path: Path) -> None:
    write_splits(tmp_path, n_train=96)
    share = {}
    for bucket in (False, True):
        dm = make_dm(tmp_path, bucket_by_length=bucket, batch_size=8, patterns="none")
        dm.setup("fit")
        share[bucket] = padding_share(list(dm.train_dataloader()))
    # measured: 27.5% of input tokens are padding when shuffled, 14.1% when bucketed (BPE tokenizer)
    assert share[True] < 0.7 * share[False]


def test_distributed_eval_scores_each_question_once(data_dir: Path) -> None:
    dm = make_dm(data_dir)
    dm.setup("validate")
    n = len(dm.examples("val"))
    assert n % 2 == 1
    seen: list[int] = []
    for rank in (0, 1):
        dm.trainer = SimpleNamespace(world_size=2, global_rank=rank)  # type: ignore[assignment]
        loader = dm.val_dataloader()
        assert isinstance(loader.sampler, UnrepeatedDistributedSampler)
        seen += [int(i) for b in loader for i in b["index"]]
    assert sorted(seen) == list(range(n))


def test_missing_split_file_is_a_clear_error(tmp_path: Path) -> None:
    write_splits(tmp_path)
    (tmp_path / "test.jsonl").unlink()
    dm = make_dm(tmp_path)
    with pytest.raises(UserInputError, match="test"):
        dm.examples("test")
    with pytest.raises(UserInputError):
        GenerationDataModule(data_dir=str(tmp_path), patterns="oracle")


# ------------------------------------------------------------------ samplers


def test_unrepeated_sampler_odd_n() -> None:
    data = list(range(7))
    parts = [list(UnrepeatedDistributedSampler(data, num_replicas=2, rank=r)) for r in (0, 1)]
    assert parts == [[0, 2, 4, 6], [1, 3, 5]]
    assert [len(UnrepeatedDistributedSampler(data, 2, r)) for r in (0, 1)] == [4, 3]


def test_length_bucket_sampler_is_a_seeded_permutation() -> None:
    lengths = [(i * 37) % 50 for i in range(103)]
    s = LengthBucketSampler(lengths, batch_size=8, seed=3)
    first = list(s)
    assert sorted(first) == list(range(103)) and len(s) == 103
    s.set_epoch(0)
    assert list(s) == first  # same epoch → same order
    assert list(s) != first  # next epoch (auto-advanced) → another order
    # batches are length-homogeneous: the spread inside a batch is far below the global spread
    spreads = [max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in s.batches(0)]
    assert max(spreads) <= 20 and sum(spreads) / len(spreads) < 15


def test_length_bucket_sampler_shards_ranks_evenly() -> None:
    lengths = list(range(21))
    ranks = [LengthBucketSampler(lengths, batch_size=4, num_replicas=2, rank=r, seed=1) for r in (0, 1)]
    parts = [list(s) for s in ranks]
    assert len(parts[0]) == len(parts[1]) == len(ranks[0])
    assert set(parts[0]) | set(parts[1]) == set(range(21))
    assert len(parts[0]) + len(parts[1]) == 22  # one repeat pads the last global batch


def test_synthetic_world_is_built_on_first_use(tmp_path: Path) -> None:
    dm = GenerationDataModule(data_dir=str(tmp_path / "syn"), synthetic_seed=0, batch_size=8)
    assert (tmp_path / "syn" / "train.jsonl").is_file()
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    ex = dm.examples("train")[int(batch["index"][0])]
    assert ex.question in dm.tokenizer.decode(batch["input_ids"][0], skip_special_tokens=True)
    info = json.loads(next((tmp_path / "syn" / ".cache" / "generation").glob("train-*/dataset_info.json")).read_text())
    assert "input_ids" in info["features"]


def test_predicted_patterns_on_a_file_without_them_is_an_error(tmp_path: Path) -> None:
    write_splits(tmp_path)  # hand-made examples: no meta.patterns anywhere
    dm = make_dm(tmp_path, patterns="predicted")
    with pytest.raises(UserInputError, match=r"patterns: predicted, but no example of .*test.jsonl has meta.patterns"):
        dm.dataset("test")


def test_oracle_patterns_are_not_read_as_predictions(tmp_path: Path) -> None:
    """PatternWriter(mode: oracle) writes the gold pairs: ``patterns: predicted`` must not take them as predictions."""
    write_splits(tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row["meta"].update(patterns=["[ people , person , place of birth ] , [ Ada ]"], patterns_mode="oracle")
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    dm = make_dm(tmp_path, patterns="predicted")
    with pytest.raises(UserInputError, match=r"carry oracle patterns \(PatternWriter mode: oracle"):
        dm.dataset("test")
    for row in rows:
        row["meta"]["patterns_mode"] = "scored"
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert len(make_dm(tmp_path, patterns="predicted").dataset("test")) == len(rows)
