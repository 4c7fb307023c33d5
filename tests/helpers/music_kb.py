"""A small hand-made KB with one- and two-hop paths (an album, its artist, places, a country)."""

from __future__ import annotations

from pathlib import Path

from kbqa_lit.kb.loaders import build_store

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


def build_music_store(root: Path) -> Path:
    """Write the triples as N-Triples under ``root`` and build the embedded store ``root/store``."""
    lines = []
    for s, p, o in TRIPLES:
        obj = o if o.startswith('"') else f"<{NS}{o}>"
        lines.append(f"<{NS}{s}> <{NS}{p}> {obj} .\n")
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"
