"""The synthetic world's ontology: domains, classes, relations and reverse-property pairs.

The schema imitates Freebase: dotted ids ``domain.class.property``, a relation's domain and range
are classes (or ``type.int`` / ``type.float`` / ``type.datetime`` for literal-valued relations),
and mediator (CVT) classes such as ``film.performance`` and ``sports.sports_team_roster`` link
several entities through an unnamed node. Two relations are stored in both directions, like
Freebase's reverse properties (``film.film.directed_by`` / ``film.director.film``).

``schema.json`` (written by :func:`schema_document`) lists it all for components that need the
ontology (relation retrieval, class constraints, constrained decoding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbqa_lit.kb.lf.iri import NS, XSD

#: The world's domains, each with a one-line description.
DOMAINS: dict[str, str] = {
    "people": "people and their births, nationalities, heights and marriages",
    "location": "countries and cities, populations, capitals and official languages",
    "film": "films, their directors, genres and casts (performance CVTs)",
    "music": "music artists and their albums",
    "sports": "sports teams, arenas and team rosters (roster CVTs with from/to years)",
    "education": "universities and who studied there (education CVTs)",
}

#: Literal range types (Freebase's value types) and the XSD datatype of each.
LITERAL_RANGES: dict[str, str] = {
    "type.int": XSD + "integer",
    "type.float": XSD + "float",
    "type.datetime": XSD + "date",
    "type.year": XSD + "gYear",
}


@dataclass(frozen=True)
class ClassDef:
    """A class of the world.

    Attributes:
        id: Dotted class id, e.g. ``film.film``.
        description: One line of English.
        cvt: Whether instances are mediator (CVT) nodes without names.
    """

    id: str
    description: str
    cvt: bool = False

    @property
    def domain(self) -> str:
        """The domain (first dotted component) of the class."""
        return self.id.split(".", 1)[0]


@dataclass(frozen=True)
class RelationDef:
    """A relation of the world.

    Attributes:
        id: Dotted relation id, e.g. ``film.film.directed_by``.
        domain: Class of the subjects.
        range: Class of the objects, or a literal type (``type.int``, ``type.float``,
            ``type.datetime``, ``type.year``).
        description: One line of English.
    """

    id: str
    domain: str
    range: str
    description: str

    @property
    def is_literal(self) -> bool:
        """Whether the objects are literals."""
        return self.range in LITERAL_RANGES

    @property
    def datatype(self) -> str | None:
        """The XSD datatype IRI of literal objects, or ``None`` for entity-valued relations."""
        return LITERAL_RANGES.get(self.range)


_C = ClassDef
CLASSES: tuple[ClassDef, ...] = (
    _C("people.person", "a person"),
    _C("location.location", "any place"),
    _C("location.country", "a country"),
    _C("location.city", "a city"),
    _C("language.human_language", "a language spoken by people"),
    _C("film.film", "a feature film"),
    _C("film.actor", "a person who acted in a film"),
    _C("film.director", "a person who directed a film"),
    _C("film.film_character", "a character portrayed in a film"),
    _C("film.film_genre", "a genre of film"),
    _C("film.performance", "an actor playing a character in a film", cvt=True),
    _C("music.artist", "a musician or band who recorded albums"),
    _C("music.album", "a music album"),
    _C("music.genre", "a genre of music"),
    _C("sports.sport", "a team sport"),
    _C("sports.sports_team", "a professional sports team"),
    _C("sports.pro_athlete", "a professional athlete"),
    _C("sports.arena", "a stadium or arena where a team plays"),
    _C("sports.sports_team_roster", "a player's stint with a team, from one year to another", cvt=True),
    _C("education.university", "a university or college"),
    _C("education.degree", "an academic degree"),
    _C("education.education", "a person's studies at an institution", cvt=True),
)

_R = RelationDef
RELATIONS: tuple[RelationDef, ...] = (
    _R("people.person.place_of_birth", "people.person", "location.city", "the city where a person was born"),
    _R(
        "people.person.nationality",
        "people.person",
        "location.country",
        "the country a person is a citizen of",
    ),
    _R("people.person.date_of_birth", "people.person", "type.datetime", "a person's date of birth"),
    _R("people.person.height_meters", "people.person", "type.float", "a person's height in metres"),
    _R("people.person.spouse", "people.person", "people.person", "a person's husband or wife"),
    _R(
        "location.location.containedby",
        "location.location",
        "location.location",
        "the place that contains a place",
    ),
    _R("location.country.capital", "location.country", "location.city", "the capital city of a country"),
    _R("location.city.population", "location.city", "type.int", "the number of people living in a city"),
    _R(
        "location.country.official_language",
        "location.country",
        "language.human_language",
        "an official language of a country",
    ),
    _R("film.film.directed_by", "film.film", "film.director", "the director of a film"),
    _R("film.director.film", "film.director", "film.film", "a film directed by a director"),
    _R("film.film.release_year", "film.film", "type.year", "the year a film was released"),
    _R("film.film.genre", "film.film", "film.film_genre", "a genre of a film"),
    _R("film.film.country", "film.film", "location.country", "the country a film was produced in"),
    _R("film.film.runtime_minutes", "film.film", "type.int", "the running time of a film in minutes"),
    _R("film.performance.film", "film.performance", "film.film", "the film of a performance"),
    _R("film.performance.actor", "film.performance", "film.actor", "the actor of a performance"),
    _R(
        "film.performance.character",
        "film.performance",
        "film.film_character",
        "the character played in a performance",
    ),
    _R("music.album.artist", "music.album", "music.artist", "the artist who recorded an album"),
    _R("music.artist.album", "music.artist", "music.album", "an album recorded by an artist"),
    _R("music.album.release_date", "music.album", "type.datetime", "the date an album was released"),
    _R("music.album.genre", "music.album", "music.genre", "the musical genre of an album"),
    _R("music.album.track_count", "music.album", "type.int", "the number of tracks on an album"),
    _R("music.artist.origin", "music.artist", "location.city", "the city an artist comes from"),
    _R("sports.sports_team.sport", "sports.sports_team", "sports.sport", "the sport a team plays"),
    _R("sports.sports_team.location", "sports.sports_team", "location.city", "the city a team is based in"),
    _R("sports.sports_team.founded", "sports.sports_team", "type.year", "the year a team was founded"),
    _R("sports.sports_team.arena", "sports.sports_team", "sports.arena", "the home arena of a team"),
    _R("sports.arena.capacity", "sports.arena", "type.int", "the number of seats of an arena"),
    _R(
        "sports.sports_team_roster.team",
        "sports.sports_team_roster",
        "sports.sports_team",
        "the team of a roster stint",
    ),
    _R(
        "sports.sports_team_roster.player",
        "sports.sports_team_roster",
        "sports.pro_athlete",
        "the player of a roster stint",
    ),
    _R("sports.sports_team_roster.from", "sports.sports_team_roster", "type.year", "the year a stint began"),
    _R(
        "sports.sports_team_roster.to",
        "sports.sports_team_roster",
        "type.year",
        "the year a stint ended (absent while it lasts)",
    ),
    _R("education.university.city", "education.university", "location.city", "the city of a university"),
    _R(
        "education.university.founded",
        "education.university",
        "type.year",
        "the year a university was founded",
    ),
    _R(
        "education.university.number_of_students",
        "education.university",
        "type.int",
        "how many students a university has",
    ),
    _R("education.education.student", "education.education", "people.person", "the student of an education"),
    _R(
        "education.education.institution",
        "education.education",
        "education.university",
        "where the studies took place",
    ),
    _R("education.education.degree", "education.education", "education.degree", "the degree earned"),
)

#: Relations stored in both directions (each maps to its reverse; both keys are present).
REVERSE_PROPERTIES: dict[str, str] = {
    "film.film.directed_by": "film.director.film",
    "film.director.film": "film.film.directed_by",
    "music.album.artist": "music.artist.album",
    "music.artist.album": "music.album.artist",
    "people.person.spouse": "people.person.spouse",
}

CLASS_BY_ID: dict[str, ClassDef] = {c.id: c for c in CLASSES}
RELATION_BY_ID: dict[str, RelationDef] = {r.id: r for r in RELATIONS}
CVT_CLASSES: frozenset[str] = frozenset(c.id for c in CLASSES if c.cvt)


def relation_touches_cvt(rel: RelationDef) -> bool:
    """Whether a relation's domain or range is a CVT class."""
    return rel.domain in CVT_CLASSES or rel.range in CVT_CLASSES


def schema_document() -> dict[str, Any]:
    """Return the JSON document written to ``schema.json``.

    Returns:
        ``{"namespace", "domains", "classes", "relations", "reverse_properties"}``; each class is
        ``{id, domain, description, cvt}`` and each relation ``{id, domain, range, description,
        cvt, literal, datatype}`` (``cvt``: the domain or range is a CVT class; ``datatype``: the
        XSD IRI of literal objects or ``null``), both sorted by id.
    """
    return {
        "namespace": NS,
        "domains": [{"id": d, "description": text} for d, text in sorted(DOMAINS.items())],
        "classes": [
            {"id": c.id, "domain": c.domain, "description": c.description, "cvt": c.cvt}
            for c in sorted(CLASSES, key=lambda c: c.id)
        ],
        "relations": [
            {
                "id": r.id,
                "domain": r.domain,
                "range": r.range,
                "description": r.description,
                "cvt": relation_touches_cvt(r),
                "literal": r.is_literal,
                "datatype": r.datatype,
            }
            for r in sorted(RELATIONS, key=lambda r: r.id)
        ],
        "reverse_properties": dict(sorted(REVERSE_PROPERTIES.items())),
    }
