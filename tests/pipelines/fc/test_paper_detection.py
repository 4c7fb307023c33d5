"""``configs/fc/detect.yaml`` builds the paper's pairs and pruning; ``detect_extended.yaml`` ours, on a tiny real store.

The paper (Zhang et al. 2023): a class–relation pair when the ontology's domain or range *is* the class,
relation–relation pairs as forward connections, and an entity with no KB edge to a detected relation pruned. Ours:
pairs by the KB's types and chains with backward hops, and a mention keeping its unpruned pick. Each object is built
from the config's section as :func:`~kbqa_lit.pipelines.fc.build.build_component_stage` builds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.kb.lf.ontology import Ontology
from kbqa_lit.kb.store import open_store
from kbqa_lit.pipelines.fc.config import DetectConfig, load_detect_config
from kbqa_lit.pipelines.fc.linking import FCEntityLinker
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from kbqa_lit.pipelines.fc.pruning import EntityMention, ScoredEntity
from tests.helpers.triples_store import build_typed_store
from tests.pipelines.fc.test_pairs import CONT, DIRECTED, FACTS, NAT, POB, SPOUSE, YEAR
from tests.pipelines.fc.test_pairs import ROLES as PAIR_ROLES
from tests.pipelines.fc.test_pairs import TYPES as PAIR_TYPES

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "fc"
ROLES = {r: roles for r, roles in PAIR_ROLES.items() if r != YEAR}
ONTO = Ontology(domains={r: d for r, (d, _) in ROLES.items()}, ranges={r: g for r, (_, g) in ROLES.items()})
TYPES = {**PAIR_TYPES, "m.zed": ["people.person"]}  # m.zed: no edge at all
RELATIONS = [(POB, 3.0), (CONT, 2.0), (SPOUSE, 1.5), (NAT, 1.0), (DIRECTED, 0.5)]
CLASSES = [("people.person", 1.0), ("film.director", 0.5)]


class _Mentions:
    """A mention linker with fixed candidates: Ada (edges to the relations) and Zed (none)."""

    def mentions(self, question: str, qid: str | None = None) -> list[EntityMention]:
        return [
            EntityMention("Ada", (ScoredEntity("m.ada", 1.0, "Ada", 5),)),
            EntityMention("Zed", (ScoredEntity("m.zed", 1.0, "Zed", 1),)),
        ]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = open_store(build_typed_store(tmp_path_factory.mktemp("fc_paper_detection"), FACTS, TYPES))
    yield s
    s.close()


def _config(name: str) -> DetectConfig:
    return load_detect_config(CONFIGS / name)


def _linker(cfg: DetectConfig, store) -> FCEntityLinker:
    link = cfg.linking
    return FCEntityLinker(_Mentions(), store, None, link.top_k, link.prune, link.on_empty)


def _pairs(cfg: DetectConfig, store) -> PairBuilder:
    return PairBuilder(ONTO, store, cfg.pairs.type_match, cfg.pairs.reverse_hops)


def test_an_entity_with_no_connected_relation_is_pruned_under_the_papers_settings(store):
    relations = [r for r, _ in RELATIONS]
    paper = _linker(_config("detect.yaml"), store).link("Who is Zed, and Ada?", relations)
    assert [(e.id, e.pruned) for e in paper.entities] == [("m.ada", True)]  # Zed has no edge: dropped
    ours = _linker(_config("detect_extended.yaml"), store).link("Who is Zed, and Ada?", relations)
    assert [(e.id, e.pruned, e.relations) for e in ours.entities] == [
        ("m.ada", True, (POB, SPOUSE, NAT, DIRECTED)),
        ("m.zed", False, ()),  # ours: the unpruned pick stays
    ]


def test_the_papers_pairs_are_forward_and_typed_by_the_ontology(store):
    paper, ours = _pairs(_config("detect.yaml"), store), _pairs(_config("detect_extended.yaml"), store)
    rr_paper = {(p.first, p.second) for p in paper.relation_relation(RELATIONS)}
    rr_ours = {(p.first, p.second) for p in ours.relation_relation(RELATIONS)}
    assert rr_paper == {(SPOUSE, POB), (SPOUSE, NAT)}  # forward, range "is" the domain, confirmed on the KB
    assert not any(a.startswith("(R ") or b.startswith("(R ") for a, b in rr_paper)
    assert (f"(R {POB})", NAT) in rr_ours and (POB, CONT) in rr_ours  # ours: backward hops, the KB's types
    cr_paper = {(p.first, p.second) for p in paper.class_relation(CLASSES, RELATIONS)}
    cr_ours = {(p.first, p.second) for p in ours.class_relation(CLASSES, RELATIONS)}
    assert cr_paper == {
        ("people.person", POB),
        ("people.person", SPOUSE),
        ("people.person", f"(R {SPOUSE})"),
        ("people.person", NAT),
        ("film.director", f"(R {DIRECTED})"),
    }
    assert ("film.director", POB) in cr_ours  # a director born somewhere: the KB's types, not the ontology's
