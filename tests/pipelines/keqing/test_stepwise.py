"""Keqing as the paper runs it: reasoning per sub-question (Eq. 4), top-K templates retrieved together,
and the fine-tuned reasoner's rows built from the context it sees at inference.

A hand-written KB: Ann Lee directed Red Sky and Blue Sea; Cal Moss wrote Red Sky, Dee Park wrote Blue
Sea; Eve Stone produced Blue Sea. The question asks who wrote the films Ann Lee directed; a real
:class:`~kbqa_lit.llm.backends.DecompositionBackend` (no mock) answers each prompt from a fixed table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kbqa_lit.backbones.causal import build_causal_lm, train_causal_tokenizer
from kbqa_lit.data.keqing.decomposition import Decomposition, chain_decomposition
from kbqa_lit.data.keqing.templates import TemplateBank
from kbqa_lit.data.schema import Answer, KBQAExample, write_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.lf.chains import parse_chain
from kbqa_lit.kb.lf.terms import fb_iri
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.llm.backends import DecompositionBackend, GenerationOutcome
from kbqa_lit.llm.hf_backend import HFCausalLMBackend
from kbqa_lit.pipelines.keqing.config import (
    DataConfig,
    DecomposerConfig,
    KBConfig,
    KeqingConfig,
    LinkingConfig,
    MatchingConfig,
    ReasonerConfig,
    RetrievalConfig,
)
from kbqa_lit.pipelines.keqing.execution import DecompositionExecutor
from kbqa_lit.pipelines.keqing.reasoning import ReasoningResult
from kbqa_lit.pipelines.keqing.reasoning_data import reasoning_rows
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor
from kbqa_lit.pipelines.keqing.run import KeqingRun

DIRECTED, WROTE, PRODUCED = "film.film.directed_by", "film.film.written_by", "film.film.produced_by"
NAMES = {
    "m.d": "Ann Lee",
    "m.a": "Red Sky",
    "m.b": "Blue Sea",
    "m.x": "Cal Moss",
    "m.z": "Dee Park",
    "m.p": "Eve Stone",
}
FACTS = [
    ("m.a", DIRECTED, "m.d"),
    ("m.b", DIRECTED, "m.d"),
    ("m.a", WROTE, "m.x"),
    ("m.b", WROTE, "m.z"),
    ("m.b", PRODUCED, "m.p"),
]
BANK = TemplateBank(
    chains={"who wrote the films directed by [mask]": [parse_chain(f"<{DIRECTED} {WROTE}>")]},
    steps={
        f"<{DIRECTED}": ["what did [mask] direct"],
        f"{WROTE}>": ["who wrote [mask]"],
        f"{PRODUCED}>": ["who produced [mask]"],
    },
    counts={"who wrote the films directed by [mask]": 1},
)
QUESTION = "who wrote the films directed by [Ann Lee]"
EXAMPLE = KBQAExample(
    "q1",
    QUESTION,
    [Answer("m.x", "Cal Moss"), Answer("m.z", "Dee Park")],
    {"m.d": "Ann Lee"},
    f"(JOIN (R {WROTE}) (JOIN {DIRECTED} m.d))",
    meta={"hops": 2},
)
QUESTION_LINE = re.compile(r"\nQuestion: (.*)\nAnswers:$", re.S)


class TableBackend(DecompositionBackend):
    """A deterministic reasoner LLM: the reply to a prompt is looked up by its question line.

    Args:
        replies: Question line → reply; any other question gets ``I don't know``.
    """

    kind = "table"

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies
        self.prompts: list[str] = []

    @property
    def model_name(self) -> str:
        return "table"

    def generation_settings(self) -> dict[str, Any]:
        return {"replies": self.replies}

    def generate_outcomes(self, prompts: Sequence[str]) -> list[GenerationOutcome]:
        self.prompts.extend(prompts)
        out = []
        for p in prompts:
            m = QUESTION_LINE.search(p)
            out.append(GenerationOutcome(self.replies.get(m.group(1) if m else "", "I don't know")))
        return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root: Path = tmp_path_factory.mktemp("keqing_stepwise")
    lines = [f"{fb_iri(s)} {fb_iri(r)} {fb_iri(o)} .\n" for s, r, o in FACTS]
    lines += [f'{fb_iri(e)} {fb_iri("type.object.name")} "{n}"@en .\n' for e, n in NAMES.items()]
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "kb", [root / "kb.nt"], "nt")
    BANK.save(root / "templates.json")
    write_jsonl([EXAMPLE], root / "questions.jsonl")
    store = OxigraphStore(root / "kb")
    yield {"root": root, "store": store}
    store.close()


def keqing(world: dict[str, Any], reasoner: ReasonerConfig) -> KeqingRun:
    root: Path = world["root"]
    return KeqingRun(
        KeqingConfig(
            data=DataConfig(str(root / "questions.jsonl")),
            kb=KBConfig(str(root / "kb")),
            templates=str(root / "templates.json"),
            linking=LinkingConfig(mode="dataset-given"),
            decomposer=DecomposerConfig(source="gold"),
            matching=MatchingConfig(top_k=1, cache_dir=str(root / "cache")),
            retrieval=RetrievalConfig(),
            reasoner=reasoner,
            out=str(root / "out.jsonl"),
        )
    )


def test_the_second_step_is_seeded_only_by_what_the_reasoner_kept_for_the_first(world):
    backend = TableBackend({"what did Ann Lee direct": "Blue Sea", "who wrote Blue Sea": "Dee Park"})
    record = keqing(world, ReasonerConfig(kind="llm", backend=backend)).answer([EXAMPLE])[0]  # default scope
    first, second = record["steps"]
    assert second["seeds"] == ["m.b"]  # Red Sky, dropped by the reasoner, seeds nothing
    assert first["answers"] == ["m.a", "m.b"] and first["chosen"] == ["m.b"]  # both retrieved, one kept
    assert second["answers"] == ["m.z"] and second["chosen"] == ["m.z"]
    assert record["answers"] == ["m.z"] and record["reasoning"] == {"raw": "Dee Park", "error": None}
    asked = [QUESTION_LINE.search(p).group(1) for p in backend.prompts]
    assert asked == ["what did Ann Lee direct", "who wrote Blue Sea"]  # one call per sub-question
    assert "(Blue Sea, written by, Dee Park)" in backend.prompts[1]
    assert "Red Sky" not in backend.prompts[1] and "Cal Moss" not in backend.prompts[1]
    assert "answers: Blue Sea" in record["response"]  # the response shows the kept answers


def test_a_gold_path_dropped_by_an_earlier_steps_reasoner_is_a_reasoning_failure(world):
    backend = TableBackend({"what did Ann Lee direct": "Ann Lee"})  # the seed: no candidate is chosen
    record = keqing(world, ReasonerConfig(kind="llm", backend=backend)).answer([EXAMPLE])[0]
    assert record["steps"][0]["chosen"] == [] and record["steps"][1]["seeds"] == []
    assert record["answers"] == [] and record["failure"] == "reasoning"  # not the retrieval's: it held both films


def test_scope_last_keeps_every_candidate_and_asks_the_whole_question_once(world):
    backend = TableBackend({QUESTION: "Cal Moss"})
    record = keqing(world, ReasonerConfig(kind="llm", backend=backend, scope="last")).answer([EXAMPLE])[0]
    assert record["steps"][1]["seeds"] == ["m.a", "m.b"] and record["steps"][1]["chosen"] is None
    assert record["answers"] == ["m.x"] and len(backend.prompts) == 1
    everything = keqing(world, ReasonerConfig(kind="all")).answer([EXAMPLE])[0]  # no reasoner
    assert everything["answers"] == ["m.x", "m.z"] and everything["steps"][1]["seeds"] == ["m.a", "m.b"]


def test_a_missing_trained_reasoner_is_a_typed_error_not_every_candidate(world, tmp_path):
    missing = HFCausalLMBackend(model=str(tmp_path / "reasoner" / "merged"))
    with pytest.raises(UserInputError, match="no trained reasoner"):
        keqing(world, ReasonerConfig(kind="llm", backend=missing))
    with pytest.raises(UserInputError, match="needs reasoner.backend"):
        keqing(world, ReasonerConfig(kind="llm"))


def test_a_local_model_reasons_per_step_and_never_keeps_more_than_it_names(world, tmp_path):
    """The form ``configs/keqing/reasoner.yaml`` trains (a merged LLaMA on disk), here untrained: it runs."""
    tok = train_causal_tokenizer([f"{n} {QUESTION}" for n in NAMES.values()] * 3, vocab_size=300)
    build_causal_lm(None, tokenizer=tok, init_seed=0).save_pretrained(tmp_path / "merged")
    tok.save_pretrained(tmp_path / "merged")
    local = HFCausalLMBackend(model=str(tmp_path / "merged"), max_new_tokens=6, stop=[], device="cpu")
    record = keqing(world, ReasonerConfig(kind="llm", backend=local)).answer([EXAMPLE])[0]
    first = record["steps"][0]
    assert first["reasoning"]["raw"] is not None and set(first["chosen"]) <= set(first["answers"])
    assert set(record["steps"][1]["seeds"]) == set(first["chosen"])
    assert record["answers"] == (record["steps"][1]["chosen"] or [])


def test_union_is_the_default_and_the_second_templates_chains_add_candidates(world):
    texts = ["what did [mask] direct", "who wrote [mask]"]
    t = BANK.templates
    matches = [[(t.index(texts[0]), 1.0)], [(t.index("who wrote [mask]"), 0.9), (t.index("who produced [mask]"), 0.8)]]
    executor = DecompositionExecutor(BANK, ChainExecutor(world["store"]), RetrievalConfig().select)
    steps = executor.run(Decomposition(chain_decomposition(texts, "[E0]"), "gold"), matches, [["m.d"]], {})
    assert steps[1].answers == ["m.x", "m.z", "m.p"]  # the writers, then Blue Sea's producer
    assert [str(c[0]) for c in steps[1].chains] == [f"{WROTE}>", f"{PRODUCED}>"]
    assert steps[1].template == "who wrote [mask]"
    first = DecompositionExecutor(BANK, ChainExecutor(world["store"]), "first-nonempty")  # ours, still there
    assert first.run(Decomposition(chain_decomposition(texts, "[E0]"), "gold"), matches, [["m.d"]], {})[1].answers == [
        "m.x",
        "m.z",
    ]
    with pytest.raises(UserInputError, match="retrieval select must be one of"):
        DecompositionExecutor(BANK, ChainExecutor(world["store"]), "every")


def test_a_step_reasoner_must_answer_every_step(world):
    executor = DecompositionExecutor(BANK, ChainExecutor(world["store"]))
    d = Decomposition(chain_decomposition(["what did [mask] direct"], "[E0]"), "gold")
    with pytest.raises(UserInputError, match="0 results for 1 steps"):
        executor.run(d, [[(BANK.templates.index("what did [mask] direct"), 1.0)]], [["m.d"]], {}, lambda steps: [])
    kept = executor.run(
        d,
        [[(BANK.templates.index("what did [mask] direct"), 1.0)]],
        [["m.d"]],
        {},
        lambda s: [ReasoningResult(["m.d", "m.a"])],
    )
    assert kept[0].chosen == ["m.a"]  # the seed is in the context but is not a candidate


def test_training_rows_show_what_the_reasoner_sees_at_inference(world):
    label = EntityIndex.for_store(world["store"]).label
    rows, skipped = reasoning_rows([EXAMPLE], ChainExecutor(world["store"]), label, max_triples=200, bank=BANK)
    assert not skipped and [r["step"] for r in rows] == [0, 1]
    assert [r["response"] for r in rows] == ["Red Sky\nBlue Sea", "Cal Moss\nDee Park"]
    replies = {QUESTION_LINE.search(str(r["prompt"])).group(1): str(r["response"]) for r in rows}
    backend = TableBackend(replies)  # a reasoner that writes exactly the training responses
    record = keqing(world, ReasonerConfig(kind="llm", backend=backend)).answer([EXAMPLE])[0]
    assert backend.prompts == [r["prompt"] for r in rows]  # the same contexts, word for word
    assert record["answers"] == ["m.x", "m.z"] and record["failure"] is None
    assert "Question: who wrote Red Sky, Blue Sea\n" in str(rows[1]["prompt"])
    whole, _ = reasoning_rows([EXAMPLE], ChainExecutor(world["store"]), label, context="chain")
    assert len(whole) == 1 and "(Red Sky, directed by, Ann Lee)" in str(whole[0]["prompt"])
    last, _ = reasoning_rows([EXAMPLE], ChainExecutor(world["store"]), label, context="last")
    assert "(Red Sky, directed by" not in str(last[0]["prompt"]) and "(Red Sky, written by" in str(last[0]["prompt"])
    once = TableBackend({QUESTION: "Cal Moss"})
    keqing(world, ReasonerConfig(kind="llm", backend=once, scope="last")).answer([EXAMPLE])
    assert once.prompts == [last[0]["prompt"]]  # scope last: the whole question over the last hop's triples
    with pytest.raises(UserInputError, match="needs the template bank"):
        reasoning_rows([EXAMPLE], ChainExecutor(world["store"]), label)
    with pytest.raises(UserInputError, match="reasoning-data context must be one of"):
        reasoning_rows([EXAMPLE], ChainExecutor(world["store"]), label, context="all", bank=BANK)  # type: ignore[arg-type]
