from __future__ import annotations

import sqlite3

from kbqa_lit.llm.response_cache import DecompositionCache, prompt_key


def test_round_trip_counts_and_persistence(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    with DecompositionCache(path) as cache:
        assert cache.get_many("b1", ["p1", "p2"]) == {}
        assert (cache.hits, cache.misses) == (0, 2)
        assert cache.put_many("b1", {"p1": "out1", "p2": "out2"}) == 2
        cache.put_many("b2", [("p1", "other model")])
        assert cache.get_many("b1", ["p1", "p2", "p3"]) == {"p1": "out1", "p2": "out2"}
        assert (cache.hits, cache.misses) == (2, 3)
        assert cache.get("b2", "p1") == "other model" and cache.get("b2", "p2") is None
        assert len(cache) == 3
    with DecompositionCache(path) as again:  # on disk, another connection
        assert again.get("b1", "p2") == "out2"
        again.put_many("b1", {"p2": "replaced"})
        assert again.get("b1", "p2") == "replaced"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT prompt FROM outputs WHERE prompt_sha256 = ?", (prompt_key("p1"),)).fetchone() == ("p1",)


def test_many_keys_and_unicode(tmp_path):
    prompts = [f'Decompose the question "Wer ist Nr. {i} — ü?"' for i in range(1200)]
    with DecompositionCache(tmp_path / "c.sqlite") as cache:
        cache.put_many("b", {p: p[::-1] for p in prompts[::2]})
        found = cache.get_many("b", prompts)
    assert found == {p: p[::-1] for p in prompts[::2]}


def test_two_connections_see_each_others_writes(tmp_path):
    a = DecompositionCache(tmp_path / "c.sqlite")
    b = DecompositionCache(tmp_path / "c.sqlite")
    a.put_many("b", {"p": "x"})
    assert b.get("b", "p") == "x"
    a.close()
    b.close()


def test_unopenable_cache_is_a_user_error(tmp_path):
    import pytest

    from kbqa_lit.errors import UserInputError

    (tmp_path / "dir").mkdir()
    with pytest.raises(UserInputError, match="cannot open the decomposition cache"):
        DecompositionCache(tmp_path / "dir")
