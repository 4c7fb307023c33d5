"""A small hand-made KB with one- and two-hop paths (an album, its artist, places, a country).

``build_music_store(root, studies=True)`` adds classes (``type.object.type``) and the artist's
studies through a nameless education node: three-hop paths through a mediator.
"""

from __future__ import annotations

from pathlib import Path

from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"
TRIPLES = [
    ("m.a1", "type.object.name", '"Paper Fever"@en'),
    ("m.p1", "type.object.name", '"Ida Crane"@en'),
    ("m.c1", "type.object.name", '"Rome"@en'),
    ("m.k1", "type.object.name", '"Zedland"@en'),
    ("m.l1", "type.object.name", '"Zedish"@en'),
    ("m.a2", "type.object.name", '"Glass Roads"@en'),
    ("m.a1", "music.album.artist", "m.p1"),
    ("m.a2", "music.album.artist", "m.p1"),
    ("m.p1", "people.person.place_of_birth", "m.c1"),
    ("m.p1", "people.person.nationality", "m.k1"),
    ("m.p1", "people.person.date_of_birth", '"1970-01-02"^^<http://www.w3.org/2001/XMLSchema#date>'),
    ("m.c1", "location.location.containedby", "m.k1"),
    ("m.k1", "location.country.official_language", "m.l1"),
    ("m.k1", "location.country.capital", "m.c1"),
]

#: Classes, and the artist's studies: p1 <- student - e1 (no name) - institution -> u1 - city -> c2.
STUDIES = [
    ("m.a1", "type.object.type", "music.album"),
    ("m.a2", "type.object.type", "music.album"),
    ("m.p1", "type.object.type", "people.person"),
    ("m.c1", "type.object.type", "location.city"),
    ("m.c2", "type.object.type", "location.city"),
    ("m.k1", "type.object.type", "location.country"),
    ("m.l1", "type.object.type", "language.human_language"),
    ("m.u1", "type.object.type", "education.university"),
    ("m.e1", "type.object.type", "education.education"),
    ("m.u1", "type.object.name", '"Lake College"@en'),
    ("m.c2", "type.object.name", '"Oslo"@en'),
    ("m.e1", "education.education.student", "m.p1"),
    ("m.e1", "education.education.institution", "m.u1"),
    ("m.u1", "education.university.city", "m.c2"),
    ("m.c2", "location.location.containedby", "m.k1"),
]


def build_music_store(root: Path, studies: bool = False) -> Path:
    """Write the triples as N-Triples under ``root`` and build the embedded store ``root/store``.

    Args:
        root: The folder.
        studies: Also write :data:`STUDIES` (classes and a mediator node).
    """
    lines = []
    for s, p, o in TRIPLES + (STUDIES if studies else []):
        obj = o if o.startswith('"') else f"<{NS}{o}>"
        lines.append(f"<{NS}{s}> <{NS}{p}> {obj} .\n")
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"
