"""TFS-KBQA fallback (S1 → S2 → S3) with stand-in generators against a real Oxigraph store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.data.tfs.prompts import s2_lf_input
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionEncoder
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.pipelines.tfs.fallback import ChainMember, TFSFallbackPipeline, fallback_metrics, mentions_in
from tests.helpers.triples_store import build_triples_store

NAMES = {
    "m.ada": "Ada Lovelace",
    "m.ada2": "Ada Lovelace",  # a namesake without a birthplace: linked first, executes to nothing
    "m.alan": "Alan Turing",
    "m.london": "London",
    "m.paris": "Paris",
    "m.france": "France",
}
TRIPLES = [
    ("m.ada", "people.person.place_of_birth", "m.london"),
    ("m.alan", "people.person.place_of_birth", "m.paris"),
    ("m.paris", "location.location.containedby", "m.france"),
]
BIRTH = "( join ( reverse [ people , person , place of birth ] ) [ {} ] )"
COUNTRY = "( join ( reverse [ location , location , containedby ] ) " + BIRTH.format("Alan Turing") + " )"
Q1, Q2, Q3, Q4 = (
    "Where was Ada Lovelace born?",
    "In which country was Alan Turing born?",
    "What is the capital of Nowhere?",
    "Why?",
)
ITEMS2 = "[ location , location , containedby ] [ people , person , place of birth ] ; [ Alan Turing ]"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphStore]:
    path = build_triples_store(tmp_path_factory.mktemp("tfs_kb"), TRIPLES, NAMES)
    store = OxigraphStore(path, isolation="thread")
    yield store
    store.close()


def examples() -> list[KBQAExample]:
    return [
        KBQAExample(
            "q1",
            Q1,
            [Answer("m.london", "London")],
            s_expression="(JOIN (R people.person.place_of_birth) m.ada)",
        ),
        KBQAExample(
            "q2",
            Q2,
            [Answer("m.france", "France")],
            topic_entities={"m.alan": "Alan Turing"},
            s_expression="(JOIN (R location.location.containedby) (JOIN (R people.person.place_of_birth) m.alan))",
        ),
        KBQAExample("q3", Q3, [Answer("m.london", "London")]),
        KBQAExample("q4", Q4, [Answer("m.paris", "Paris")], s_expression="(JOIN (R a.b.c) m.paris)"),
    ]


class FixedGenerator:
    """Stand-in model: fixed responses per (task, input); records every call."""

    tokenizer = None

    def __init__(self, responses: dict[tuple[str, str], list[str]]) -> None:
        self.responses = responses
        self.calls: list[tuple[str, list[str], int]] = []

    def generate(self, batch: dict[str, Any], num_beams: int, num_return_sequences: int, max_new_tokens: int):
        assert all(p.endswith("### Response:\n") for p in batch["prompts"])
        self.calls.append((batch["task"][0], list(batch["inputs"]), num_beams))
        return [
            self.responses.get((t, x), [""])[:num_return_sequences]
            for t, x in zip(batch["task"], batch["inputs"], strict=True)
        ]


def member(name: str, responses: dict[tuple[str, str], list[str]], tasks=("s1", "s2_items", "s2_lf", "s3")):
    gen = FixedGenerator(responses)
    return ChainMember(name, {t: gen for t in tasks}, {t: InstructionEncoder(None) for t in tasks}), gen


RESPONSES = {
    ("s1", Q1): ["( join [ oops", BIRTH.format("Ada Lovelace")],  # beam 0 unreadable, beam 1 executes
    ("s1", Q2): ["( join ( reverse [ people , person , nationality ] ) [ Alan Turing ] )"],  # no answers
    ("s2_items", Q2): [ITEMS2],
    ("s2_lf", s2_lf_input(Q2, ITEMS2)): ["( join [ broken", COUNTRY],
    ("s3", Q3): ["London | Atlantis"],
    ("s3", Q4): [""],
}
SURFACE = {"Ada Lovelace": ["m.ada2", "m.ada"], "Alan Turing": ["m.alan"]}


def test_fallback_order_and_bookkeeping(kb) -> None:
    m, gen = member("tiny", RESPONSES)
    pipe = TFSFallbackPipeline([m], kb, surface_index=SURFACE, s1_beams=2, s2_lf_beams=2)
    report = pipe.run(examples())
    pipe.close()
    rows = {r.qid: r for r in report.rows}
    assert [r.strategy for r in report.rows] == ["s1", "s2", "s3", None]
    # S1, q1: beam 0 is unreadable; beam 1's mention has two candidates, m.ada2 (no answer) then m.ada
    r1 = rows["q1"]
    assert r1.answers == ["m.london"] and r1.executable and r1.member == "tiny"
    assert r1.sexpr == "(JOIN (R people.person.place_of_birth) m.ada)" and r1.em == 1.0
    assert [a.strategy for a in r1.attempts] == ["s1"] and r1.attempts[0].chosen_beam == 1
    assert any("unmappable" in e for e in r1.attempts[0].errors)
    assert any("no answers" in e for e in r1.attempts[0].errors)  # the namesake's reading
    # S2, q2: S1 executes to nothing, t1 items feed t2, whose second beam executes
    r2 = rows["q2"]
    assert [(a.strategy, a.answered) for a in r2.attempts] == [("s1", False), ("s2", True)]
    assert r2.attempts[1].items == [ITEMS2] and r2.attempts[1].chosen_beam == 1
    assert r2.answers == ["m.france"] and r2.em == 1.0
    # S3, q3: names mapped to ids where the KB knows them, kept as text otherwise
    r3 = rows["q3"]
    assert r3.answers == ["m.london", "Atlantis"] and not r3.executable and r3.answer_text == "London | Atlantis"
    assert [a.strategy for a in r3.attempts] == ["s1", "s2", "s3"] and r3.em is None
    assert r3.f1 == pytest.approx(2 / 3) and r3.hit1 == 0.5 and r3.hit1_any == 1.0
    # nothing answers q4
    r4 = rows["q4"]
    assert r4.answers == [] and r4.strategy is None and r4.em == 0.0 and len(r4.attempts) == 3
    # each later strategy only sees the questions still pending
    assert [(task, len(inputs)) for task, inputs, _ in gen.calls] == [
        ("s1", 4),
        ("s2_items", 3),
        ("s2_lf", 1),  # q3 and q4 got empty item lists: no t2 input for them
        ("s3", 2),
    ]
    m_ = report.metrics
    assert m_["share/s1"] == m_["share/s2"] == m_["share/s3"] == m_["share/none"] == 0.25
    assert m_["executable"] == 0.5 and m_["n"] == 4
    assert m_["f1"] == pytest.approx((1 + 1 + 2 / 3 + 0) / 4)
    assert m_["hit1"] == pytest.approx((1 + 1 + 0.5 + 0) / 4) and m_["hit1_any"] == pytest.approx(0.75)
    assert m_["em"] == pytest.approx(2 / 3)
    assert m_["share/member/tiny"] == 0.75
    assert fallback_metrics(report.rows, ["tiny"]) == m_


def test_strategy_switches_are_the_ablations(kb) -> None:
    m, gen = member("tiny", RESPONSES)
    pipe = TFSFallbackPipeline([m], kb, use_s1=False, surface_index=SURFACE, s2_lf_beams=2)
    rows = pipe.run(examples()).rows
    assert [r.strategy for r in rows] == [None, "s2", "s3", None]
    assert {task for task, _, _ in gen.calls} == {"s2_items", "s2_lf", "s3"}
    pipe = TFSFallbackPipeline([m], kb, use_s2=False, use_s3=False, surface_index=SURFACE, s1_beams=2)
    rows = pipe.run(examples()).rows
    assert [r.strategy for r in rows] == ["s1", None, None, None]
    assert all(a.strategy == "s1" for r in rows for a in r.attempts)


def test_without_surface_index_only_the_example_labels_link(kb) -> None:
    m, _ = member("tiny", RESPONSES)
    rows = TFSFallbackPipeline([m], kb, s1_beams=2, s2_lf_beams=2).run(examples()).rows
    # q1 has no topic entity: "Ada Lovelace" links to nothing, so S1 fails and S3 has no answer
    assert rows[0].strategy is None and any("no entity matches" in e for e in rows[0].attempts[0].errors)
    # q2's gold topic entity is not an input (linking: predicted): without a surface index nothing links
    assert rows[1].strategy is None
    oracle = TFSFallbackPipeline([m], kb, s1_beams=2, s2_lf_beams=2, linking="gold").run(examples()).rows
    assert oracle[1].strategy == "s2"  # the oracle links q2 through its gold topic entity


def test_chain_of_two_members_in_both_orders(kb) -> None:
    big_responses = {
        ("s1", Q2): ["( join ( reverse [ people , person , nationality ] ) [ Alan Turing ] )"],
        ("s2_items", Q2): [ITEMS2],
        ("s2_lf", s2_lf_input(Q2, ITEMS2)): [COUNTRY],
    }
    small_responses = {("s1", Q2): [COUNTRY], ("s1", Q1): [BIRTH.format("Ada Lovelace")]}
    qs = examples()[:2]
    for order, expected in (("strategy", ("s1", "small")), ("member", ("s2", "big"))):
        big, _ = member("big", big_responses)
        small, _ = member("small", small_responses, tasks=("s1",))  # no S2/S3 adapters: skipped there
        pipe = TFSFallbackPipeline([big, small], kb, order=order, surface_index=SURFACE)
        assert [(s, mm.name) for s, mm in pipe.steps()][:3] == (
            [("s1", "big"), ("s1", "small"), ("s2", "big")]
            if order == "strategy"
            else [("s1", "big"), ("s2", "big"), ("s3", "big")]
        )
        report = pipe.run(qs)
        assert (report.rows[1].strategy, report.rows[1].member) == expected
        assert (report.rows[0].strategy, report.rows[0].member) == ("s1", "small")
        assert report.metrics["share/member/small"] == (1.0 if order == "strategy" else 0.5)


def test_mentions_in_a_normalised_form() -> None:
    assert mentions_in(COUNTRY) == ["Alan Turing"]
    assert mentions_in("( join [ a , b ] [ m.01 ] )") == ["m.01"]


def test_a_real_lora_module_in_the_chain(kb) -> None:
    """The batches a member builds feed LoraCausalLM.generate (an untrained tiny model)."""
    import torch

    from kbqa_lit.backbones.causal import train_causal_tokenizer
    from kbqa_lit.modules.lora_causal_lm import LoraCausalLM

    enc = InstructionEncoder(None)
    texts = [enc.prompt_text(t, q) for t in ("s1", "s3") for q in (Q1, Q2)] + [BIRTH, COUNTRY]
    tok = train_causal_tokenizer(texts * 3, vocab_size=300)
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest and fights no other process
    model = LoraCausalLM(tokenizer=tok).eval()
    chain = ChainMember("tiny", {"s1": model, "s3": model}, {t: InstructionEncoder(tok) for t in ("s1", "s3")})
    pipe = TFSFallbackPipeline([chain], kb, s1_beams=2, max_new_tokens=4, answer_max_new_tokens=4)
    try:
        rows = pipe.run(examples()[:2]).rows
    finally:
        pipe.close()
        torch.set_num_threads(threads)
    for row in rows:
        assert [a.strategy for a in row.attempts][:1] == ["s1"] and len(row.attempts[0].beams) == 2
        assert row.strategy in (None, "s3")  # random weights write no executable logical form


def test_shipped_pipeline_config_fits_the_pipeline() -> None:
    """configs/tfs/pipeline.yaml names only tasks, strategies and options the pipeline accepts."""
    import dataclasses
    import inspect

    import yaml

    from kbqa_lit.data.tfs.prompts import TASKS
    from kbqa_lit.pipelines.tfs.config import LinkingConfig
    from kbqa_lit.pipelines.tfs.fallback import STRATEGIES

    config = yaml.safe_load((Path(__file__).resolve().parents[3] / "configs" / "tfs" / "pipeline.yaml").read_text())
    keys = {"data", "kb", "strategies", "order", "members", "decoding", "linking", "out"}
    assert set(config) <= keys | {"form", "extensions", "answer_chain"}
    assert config["form"] == "paper" and config["extensions"] is None  # the paper's method by default
    assert set(config["strategies"]) <= set(STRATEGIES) and config["order"] in ("strategy", "member")
    accepted = set(inspect.signature(TFSFallbackPipeline.__init__).parameters)
    assert set(config["decoding"]) <= accepted
    assert set(config["linking"]) <= {f.name for f in dataclasses.fields(LinkingConfig)}
    assert config["linking"]["mode"] == "predicted" and config["linking"]["linkers"] == ["kb"]
    for spec in config["members"]:
        assert spec["name"] and set(spec["adapters"]) <= set(TASKS)
    assert config["kb"]["store"] and config["data"]["split"] in ("train", "dev", "test")
