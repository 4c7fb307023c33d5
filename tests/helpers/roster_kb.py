"""A small hand-made KB of two-entity questions: rosters (nameless mediator nodes), films with genres, classes.

- Ida Crane (``m.p1``: a person, an actor and an athlete) played for the Herons (``m.t1``) from 2001
  to 2004 and for the Owls (``m.t2``) from 2006; Bo Lind (``m.p2``: a person and an athlete) for the
  Herons from 2003.
- Both were born in Rome (``m.c1``), as was Cy Moss (``m.p3``: a person only).
- Ida directed two films (``m.f1`` a thriller, ``m.f2`` a western); Bo directed a thriller (``m.f3``).
"""

from __future__ import annotations

from pathlib import Path

from kbqa_lit.kb.store.loaders import build_store

NS = "http://rdf.freebase.com/ns/"
_YEAR = "^^<http://www.w3.org/2001/XMLSchema#gYear>"
R = "sports.sports_team_roster"
NAMES = {
    "m.p1": "Ida Crane", "m.p2": "Bo Lind", "m.p3": "Cy Moss", "m.t1": "Herons", "m.t2": "Owls",
    "m.c1": "Rome", "m.f1": "Night Glass", "m.f2": "Dust Road", "m.f3": "Cold Pier",
    "m.g1": "Thriller", "m.g2": "Western",
}  # fmt: skip
TRIPLES = [
    *[(e, "type.object.name", f'"{n}"@en') for e, n in NAMES.items()],
    *[(p, "type.object.type", "people.person") for p in ("m.p1", "m.p2", "m.p3")],
    ("m.p1", "type.object.type", "film.actor"),
    ("m.p1", "type.object.type", "sports.pro_athlete"),
    ("m.p2", "type.object.type", "sports.pro_athlete"),
    *[(p, "people.person.place_of_birth", "m.c1") for p in ("m.p1", "m.p2", "m.p3")],
    ("m.r1", f"{R}.player", "m.p1"),
    ("m.r1", f"{R}.team", "m.t1"),
    ("m.r1", f"{R}.from", f'"2001"{_YEAR}'),
    ("m.r1", f"{R}.to", f'"2004"{_YEAR}'),
    ("m.r2", f"{R}.player", "m.p1"),
    ("m.r2", f"{R}.team", "m.t2"),
    ("m.r2", f"{R}.from", f'"2006"{_YEAR}'),
    ("m.r3", f"{R}.player", "m.p2"),
    ("m.r3", f"{R}.team", "m.t1"),
    ("m.r3", f"{R}.from", f'"2003"{_YEAR}'),
    ("m.f1", "film.film.directed_by", "m.p1"),
    ("m.f2", "film.film.directed_by", "m.p1"),
    ("m.f3", "film.film.directed_by", "m.p2"),
    ("m.f1", "film.film.genre", "m.g1"),
    ("m.f2", "film.film.genre", "m.g2"),
    ("m.f3", "film.film.genre", "m.g1"),
]


def build_roster_store(root: Path) -> Path:
    """Write :data:`TRIPLES` as N-Triples under ``root`` and build the embedded store ``root/store``."""
    lines = []
    for s, p, o in TRIPLES:
        obj = o if o.startswith('"') else f"<{NS}{o}>"
        lines.append(f"<{NS}{s}> <{NS}{p}> {obj} .\n")
    (root / "kb.nt").write_text("".join(lines), encoding="utf-8")
    build_store(root / "store", [root / "kb.nt"], "nt")
    return root / "store"
