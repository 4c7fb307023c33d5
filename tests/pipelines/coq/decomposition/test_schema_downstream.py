"""The [SCHEMA] part of a predicted decomposition feeds `kbqa retrieve` (relation queries, entity mentions)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.kb.index.relation_inventory import BM25RelationRanker, RelationInventory
from kbqa_lit.tools.retrieve_tool import link_entities, rank_relations, schema_part

RELATIONS = [f"domain{i}.thing.filler_{i}" for i in range(30)] + [
    "film.film.directed_by",
    "people.person.nationality",
    "film.film.release_year",
]


class WordOverlap:
    """A stand-in cross-encoder: the share of the relation's words found in the query."""

    def rank(self, query: str, rels: Iterable[str], top_l: int = 10, batch_size: int = 64) -> list[tuple[str, float]]:
        words = set(query.lower().replace("?", "").split())
        scored = [(r, len(words & set(r.replace(".", " ").replace("_", " ").split())) / 3) for r in rels]
        return sorted(scored, key=lambda x: -x[1])[:top_l]


def _ex(status: str) -> KBQAExample:
    return KBQAExample(
        qid="q",
        question="Where does the man behind Lantern come from?",
        meta={
            "decomposition_status": status,
            "decomposition_schema": {
                "entities": ["Lantern of the Valley"],
                "relations": ["directed by", "nationality"],
            },
        },
    )


def test_schema_only_from_predicted_decompositions() -> None:
    assert schema_part(_ex("ok"), "relations") == ["directed by", "nationality"]
    assert schema_part(_ex("ok"), "entities") == ["Lantern of the Valley"]
    assert schema_part(_ex("gold"), "relations") == [] and schema_part(_ex("none"), "entities") == []


def test_relation_phrases_are_extra_queries(tmp_path: Path) -> None:
    (tmp_path / "inv.txt").write_text("\n".join(RELATIONS) + "\n")
    bm25 = BM25RelationRanker(RelationInventory.from_file(tmp_path / "inv.txt"), top_n=5)
    ex, model = _ex("ok"), WordOverlap()
    plain = [r for r, _ in rank_relations(model, bm25, ex.question, [], 3, 8)]
    with_schema = [r for r, _ in rank_relations(model, bm25, ex.question, schema_part(ex, "relations"), 3, 8)]
    assert "film.film.directed_by" not in plain and "people.person.nationality" not in plain
    assert {"film.film.directed_by", "people.person.nationality"} <= set(with_schema)
    assert len(with_schema) == 3


@dataclass
class _Cand:
    id: str
    label: str
    score: float


class _Index:
    def search(self, text: str, top_l: int = 10, fuzzy_threshold: float = 0.8) -> list[_Cand]:
        if "Lantern of the Valley" in text:
            return [_Cand("m.lantern", "Lantern of the Valley", 1.0)]
        return [_Cand("m.lamp", "Lantern", 0.6), _Cand("m.lantern", "Lantern of the Valley", 0.3)]


def test_schema_entities_are_extra_mentions() -> None:
    ex = _ex("ok")
    plain = link_entities(_Index(), ex.question, [], 1, 0.8)
    merged = link_entities(_Index(), ex.question, schema_part(ex, "entities"), 2, 0.8)
    assert [c.id for c in plain] == ["m.lamp"]
    assert [(c.id, c.score) for c in merged] == [("m.lantern", 1.0), ("m.lamp", 0.6)]
