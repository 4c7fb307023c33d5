"""FC-KBQA linking on a tiny real store: pruning changes the pick; the JSON linker; literals."""

from __future__ import annotations

import json

import pytest

from kbqa_lit.data.fc.literals import detect_literals
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.fc.linking import FCEntityLinker, IndexMentionLinker, JsonMentionLinker
from kbqa_lit.pipelines.fc.pruning import EntityMention, RelationAwarePruner, ScoredEntity

NS = "http://rdf.freebase.com/ns/"
NAMES = {"m.paris_city": "Paris", "m.paris_person": "Paris", "m.france": "France", "m.helen": "Helen", "m.bob": "Bob"}
FACTS = [
    ("m.paris_city", "location.location.containedby", "m.france"),
    ("m.helen", "people.person.place_of_birth", "m.paris_city"),
    ("m.bob", "people.person.place_of_birth", "m.paris_city"),
    ("m.paris_person", "people.person.spouse", "m.helen"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("fc_linking")
    lines = [f'<{NS}{e}> <{NS}type.object.name> "{n}"@en .\n' for e, n in NAMES.items()]
    lines += [f"<{NS}{s}> <{NS}{p}> <{NS}{o}> .\n" for s, p, o in FACTS]
    (d / "kb.nt").write_text("".join(lines))
    build_store(d / "kb", [d / "kb.nt"], "nt")
    s = open_store(d / "kb")
    yield s
    s.close()


def test_relation_aware_pruning_changes_the_pick(store):
    index = EntityIndex.build(store)
    assert index.degree("m.paris_city") > index.degree("m.paris_person")
    question = "Who is Paris married to?"
    relations = ["people.person.spouse", "film.film.genre"]
    unpruned = FCEntityLinker(IndexMentionLinker(index), store, prune=False).link(question, relations)
    assert [e.id for e in unpruned.entities] == ["m.paris_city"]  # the most popular Paris
    pruned = FCEntityLinker(IndexMentionLinker(index), store).link(question, relations)
    (ent,) = pruned.entities
    assert (ent.id, ent.mention, ent.relations, ent.pruned) == (
        "m.paris_person",
        "Paris",
        ("people.person.spouse",),
        True,
    )
    assert {c.id for c in pruned.mentions[0].candidates} == {"m.paris_city", "m.paris_person"}
    # a birth-place question keeps the city (edge to the top relation, most popular)
    born = FCEntityLinker(IndexMentionLinker(index), store).link(
        "Who was born in Paris?", ["people.person.place_of_birth"]
    )
    assert [e.id for e in born.entities] == ["m.paris_city"]


def test_nothing_survives_keep_or_drop(store):
    mentions = [
        EntityMention(
            "Paris", (ScoredEntity("m.paris_city", 1.0, degree=3), ScoredEntity("m.paris_person", 1.0, degree=1))
        )
    ]
    keep = RelationAwarePruner(store).pick(mentions, ["film.film.genre"])
    assert [(e.id, e.pruned, e.relations) for e in keep] == [("m.paris_city", False, ())]
    assert RelationAwarePruner(store, on_empty="drop").pick(mentions, ["film.film.genre"]) == []
    # only the top-k relations count
    top1 = RelationAwarePruner(store, top_k=1).pick(mentions, ["film.film.genre", "people.person.spouse"])
    assert top1[0].pruned is False
    with pytest.raises(UserInputError):
        RelationAwarePruner(store, on_empty="maybe")


def test_json_linker_feeds_the_same_pruning(store, tmp_path):
    path = tmp_path / "links.jsonl"
    rows = [
        {
            "qid": "q1",
            "mentions": {"Paris": [["m.paris_city", 0.9], {"id": "m.paris_person", "score": 0.5, "degree": 1}]},
        },
        {"question": "Where  is Bob from?", "mentions": {"Bob": [["m.bob", 1.0]]}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    linker = JsonMentionLinker(path)
    fc = FCEntityLinker(linker, store, degree={"m.paris_city": 3}.get)
    assert [e.id for e in fc.link("Who is Paris married to?", ["people.person.spouse"], qid="q1").entities] == [
        "m.paris_person"
    ]
    assert [m.mention for m in linker.mentions("Where is Bob from?")] == ["Bob"]
    assert linker.mentions("unknown?", qid="q9") == []


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not JSON"),
        ('{"qid": "q1"}', "mentions"),
        ('{"mentions": {}}', "qid or a question"),
        ('{"qid": "q1", "mentions": {"x": [["m.a", "high"]]}}', "score of m.a"),
        ('{"qid": "q1", "mentions": {"x": [[1, 2, 3]]}}', "candidate must be"),
    ],
)
def test_bad_json_lines_name_the_file_and_line(tmp_path, line, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"qid": "q0", "mentions": {}}\n\n' + line + "\n")
    with pytest.raises(DataFormatError, match=rf"bad.jsonl:3: .*{reason}"):
        JsonMentionLinker(path)


def test_literals_by_regular_expressions():
    q = "Which films after 1990 and before March 3, 2001 last over 1,200 minutes or 2.5 hours on the A320?"
    assert [(lit.text, lit.kind, lit.value) for lit in detect_literals(q)] == [
        ("1990", "year", "1990"),
        ("March 3, 2001", "date", "2001-03-03"),
        ("1,200", "number", "1200"),
        ("2.5", "number", "2.5"),
    ]
    assert [lit.value for lit in detect_literals("born 1990-03-04 or 4th July 1976")] == ["1990-03-04", "1976-07-04"]
