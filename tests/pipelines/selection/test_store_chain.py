"""StoreChain: one example answered on a real embedded store, from its ranked candidates, then the answer text."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.store import StoreSpec
from kbqa_lit.pipelines.selection.store_chain import StoreChain
from tests.helpers.triples_store import build_triples_store


@pytest.fixture()
def chain(tmp_path: Path):
    store = build_triples_store(
        tmp_path, [("m.ada", "people.person.nationality", "m.uk")], {"m.ada": "Ada Lovelace", "m.uk": "England"}
    )
    chain = StoreChain(StoreSpec(str(store)), workers=1)
    yield chain
    chain.close()


def test_the_first_executable_candidate_answers(chain: StoreChain) -> None:
    ex = KBQAExample(qid="q1", question="where is ada lovelace from?", topic_entities={"m.ada": "Ada Lovelace"})
    with pytest.raises(RuntimeError, match="open"):
        chain.select(ex, ["(JOIN (R people.person.nationality) [ Ada Lovelace ])"])
    chain.open()
    chain.open()  # a second open keeps the same store
    sel = chain.select(
        ex,
        ["(JOIN (R people.person.gender) [ Ada Lovelace ])", "(JOIN (R people.person.nationality) [ Ada Lovelace ])"],
    )
    assert sel.answers == ["m.uk"] and sel.executable and sel.chosen_beam == 1
    assert chain.execute_seconds() > 0.0 and sum(chain.cache_counts()) >= 2
    copy = pickle.loads(pickle.dumps(chain))  # a copy (a spawned DDP worker's) carries no open store
    assert copy.kb is None and copy.selector is None and chain.kb is not None
    with pytest.raises(RuntimeError, match="open"):
        copy.select(ex, ["(JOIN (R people.person.nationality) [ Ada Lovelace ])"])


def test_the_answer_text_is_the_last_resort_and_is_mapped_by_name(chain: StoreChain) -> None:
    chain.open()
    ex = KBQAExample(qid="q2", question="where is ada lovelace from?", topic_entities={"m.ada": "Ada Lovelace"})
    sel = chain.select(ex, ["(JOIN (R people.person.gender) [ Ada Lovelace ])"], answer_text="England")
    assert sel.fallback and not sel.executable and sel.answers == ["m.uk"]
    chain.close()
    assert chain.kb is None and chain.execute_seconds() == 0.0 and chain.cache_counts() == (0, 0)
