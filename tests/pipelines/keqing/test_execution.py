"""Executing decompositions: <ANSWER>-k dependencies carry paths, slots and names seed, select policies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.data.keqing.decomposition import Decomposition, chain_decomposition
from kbqa_lit.data.keqing.templates import TemplateBank
from kbqa_lit.kb.lf.chains import parse_chain
from kbqa_lit.kb.lf.terms import fb_iri
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.keqing.execution import DecompositionExecutor, is_chain_text
from kbqa_lit.pipelines.keqing.retrieval import ChainExecutor

DIRECTED, WROTE = "film.film.directed_by", "film.film.written_by"
# Heat (m.a) and Ronin (m.b) are directed by Mann (m.d); Mann also wrote Heat.
TRIPLES = [("m.a", DIRECTED, "m.d"), ("m.b", DIRECTED, "m.d"), ("m.a", WROTE, "m.d")]
BANK = TemplateBank(
    chains={
        "who directed [mask]": [parse_chain(f"{DIRECTED}>")],
        "what did [mask] direct": [parse_chain(f"<{DIRECTED}")],
        "what did [mask] write": [parse_chain(f"<{WROTE}")],
    }
)
T = BANK.templates  # template index -> text


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphStore]:
    root: Path = tmp_path_factory.mktemp("keqing_exec")
    (root / "kb.nt").write_text("".join(f"{fb_iri(s)} {fb_iri(r)} {fb_iri(o)} .\n" for s, r, o in TRIPLES))
    build_store(root / "store", [root / "kb.nt"], "nt")
    kb = OxigraphStore(root / "store")
    yield kb
    kb.close()


def matches(*templates: str) -> list[list[tuple[int, float]]]:
    return [[(T.index(t), 1.0)] for t in templates]


def run(store, semantics: str, texts: list[str], found, select: str = "first-nonempty", seed: str = "[E0]"):
    ex = DecompositionExecutor(
        BANK, ChainExecutor(store, semantics), select, lookup=lambda name: ["m.d"] if name == "Mann" else []
    )
    return ex.run(Decomposition(chain_decomposition(texts, seed), "raw"), found, [["m.a"]], {"m.a": "Heat"})


def test_answers_of_a_dependency_seed_the_next_step_as_paths(store):
    texts = ["who directed [mask]", "what did [mask] direct"]
    simple = run(store, "simple-path", texts, matches(*texts))
    assert simple[0].answers == ["m.d"] and simple[0].template == "who directed [mask]"
    assert simple[1].seeds == ["m.d"] and simple[1].answers == ["m.b"]  # Heat itself is on the path
    assert simple[1].paths == [("m.a", "m.d", "m.b")]
    plain = run(store, "plain", texts, matches(*texts))
    assert plain[1].answers == ["m.a", "m.b"]


def test_first_nonempty_falls_back_to_the_next_template_and_union_keeps_all(store):
    texts = ["who directed [mask]", "what did [mask] direct"]
    two = [[(T.index("what did [mask] write"), 0.9), (T.index("what did [mask] direct"), 0.8)]]
    first = run(store, "plain", texts, [matches(texts[0])[0], *two])
    assert first[1].template == "what did [mask] write" and first[1].answers == ["m.a"]
    nothing_first = [[(T.index("who directed [mask]"), 0.9), (T.index("what did [mask] direct"), 0.8)]]
    fallback = run(store, "plain", texts, [matches(texts[0])[0], *nothing_first])
    assert fallback[1].template == "what did [mask] direct" and fallback[1].answers == ["m.a", "m.b"]
    union = run(store, "plain", texts, [matches(texts[0])[0], *two], select="union")
    assert union[1].answers == ["m.a", "m.b"] and len(union[1].chains) == 2


def test_name_seeds_chain_texts_and_unresolvable_seeds(store):
    by_name = run(store, "plain", ["what did [mask] direct"], matches("what did [mask] direct"), seed="Mann")
    assert by_name[0].seeds == ["m.d"] and by_name[0].answers == ["m.a", "m.b"]
    assert is_chain_text(f"<{DIRECTED}") and not is_chain_text("what did [mask] direct")
    chained = run(store, "plain", [f"<{DIRECTED}"], [[]], seed="Mann")
    assert chained[0].chains == [parse_chain(f"<{DIRECTED}")] and chained[0].answers == ["m.a", "m.b"]
    unknown = run(store, "plain", ["what did [mask] direct"], matches("what did [mask] direct"), seed="Nobody")
    assert unknown[0].error == "seed 'Nobody' links to no entity" and unknown[0].answers == []
    missing_slot = run(store, "plain", ["what did [mask] direct"], matches("what did [mask] direct"), seed="[E3]")
    assert "1 linked mention" in missing_slot[0].error
