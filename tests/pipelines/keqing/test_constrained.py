"""Keqing's decomposer under the shared constrained decoding (the ``constrained_decoding`` extension).

An untrained tiny LLaMA on disk as the decomposer (the form ``configs/keqing/decomposer.yaml`` trains):
left to itself it writes text that is no decomposition; constrained, every output parses and every
sub-question is a wording of the template bank. The KB and bank of :mod:`tests.pipelines.keqing.test_stepwise`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.backbones.causal import build_causal_lm, train_causal_tokenizer
from kbqa_lit.data.keqing.decomposition import render_decomposition
from kbqa_lit.data.keqing.targets import gold_subquestions
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.chains import parse_chain
from kbqa_lit.llm.hf_backend import HFCausalLMBackend
from kbqa_lit.llm.openai_backend import OpenAICompatibleBackend
from kbqa_lit.pipelines.keqing.config import DecomposerConfig, ReasonerConfig
from kbqa_lit.pipelines.keqing.constrained import ConstrainedDecomposer, decomposition_texts
from kbqa_lit.pipelines.selection.forms import OFFERED
from tests.pipelines.keqing.test_stepwise import BANK, DIRECTED, EXAMPLE, QUESTION, WROTE, keqing, world  # noqa: F401


@pytest.fixture(scope="module")
def decomposer(tmp_path_factory: pytest.TempPathFactory) -> HFCausalLMBackend:
    folder: Path = tmp_path_factory.mktemp("decomposer") / "merged"
    gold = render_decomposition(gold_subquestions(parse_chain(f"<{DIRECTED} {WROTE}>"), BANK, "[E0]"))
    tok = train_causal_tokenizer([f"{QUESTION} {gold}"] * 20, vocab_size=400)
    build_causal_lm(None, tokenizer=tok, init_seed=3).save_pretrained(folder)
    tok.save_pretrained(folder)
    return HFCausalLMBackend(model=str(folder), max_new_tokens=300, stop=[], device="cpu")


def run_with(world, backend, extensions):  # noqa: F811
    run = keqing(world, ReasonerConfig(kind="all"))
    run.config.decomposer = DecomposerConfig(backend=backend)
    run.config.extensions = extensions
    return type(run)(run.config)


def test_keqing_offers_the_extension():
    assert OFFERED["keqing"][0] == "constrained_decoding"


def test_constrained_the_untrained_decomposer_writes_a_decomposition_of_known_wordings(world, decomposer):  # noqa: F811
    free = run_with(world, decomposer, []).answer([EXAMPLE])[0]
    assert free["decomposition"]["error"] is not None  # unconstrained: no decomposition
    record = run_with(world, decomposer, ["constrained_decoding"]).answer([EXAMPLE])[0]
    decomposition = record["decomposition"]
    assert decomposition["error"] is None and decomposition["subquestions"]
    allowed = set(decomposition_texts(BANK))
    assert all(s["question_text"] in allowed for s in decomposition["subquestions"])
    assert decomposition["subquestions"][0]["seed_entities"] == ["[E0]"]  # the question's one slot
    assert record["extensions"] == ["constrained_decoding"] and record["form"] == "extended"


def test_a_served_decomposer_cannot_be_constrained(world):  # noqa: F811
    with pytest.raises(UserInputError, match="needs a local decomposer"):
        run_with(world, OpenAICompatibleBackend(), ["constrained_decoding"])


def test_the_bank_words_each_step_once_and_caps_the_sub_questions():
    texts = decomposition_texts(BANK)
    assert sorted(texts) == sorted(ts[0] for ts in BANK.steps.values())
    assert decomposition_texts(BANK, "chains") == list(BANK.steps)
    assert ConstrainedDecomposer(BANK).max_subquestions == 2  # the bank's longest chain
