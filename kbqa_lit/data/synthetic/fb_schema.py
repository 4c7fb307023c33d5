"""The ontology of the Freebase-shaped scale KB: classes with a hierarchy, properties, schema triples.

The scale generator (:mod:`kbqa_lit.data.synthetic.fb_kb`) types every entity with its class and
that class's ancestors (``common.topic`` for every named entity, as Freebase does), and writes the
schema itself as Freebase does: each class is a node of type ``type.type`` (with a name and its
``freebase.type_hints.included_types``), each property a node of type ``type.property`` with its
``type.property.schema`` (domain), ``type.property.expected_type`` (range) and, where it has one,
``type.property.reverse_property``. So the classes and relations of the KB can be listed from the
schema nodes (a few hundred triples) instead of from a scan of every ``type.object.type`` triple.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kbqa_lit.kb.lf.iri import NAME_RELATION, TYPE_RELATION, XSD

#: Freebase's meta classes and schema relations.
TYPE_TYPE = "type.type"
TYPE_PROPERTY = "type.property"
TYPE_DOMAIN = "type.domain"
PROPERTY_SCHEMA = "type.property.schema"
PROPERTY_EXPECTED_TYPE = "type.property.expected_type"
PROPERTY_REVERSE = "type.property.reverse_property"
INCLUDED_TYPES = "freebase.type_hints.included_types"
MEDIATOR_HINT = "freebase.type_hints.mediator"

INT, FLOAT, DATE, YEAR, YEAR_MONTH, DATETIME, BOOLEAN = (
    XSD + t for t in ("integer", "float", "date", "gYear", "gYearMonth", "dateTime", "boolean")
)
#: Freebase's value types, the ``expected_type`` of a literal property, per XSD datatype.
VALUE_TYPES = {
    INT: "type.int",
    FLOAT: "type.float",
    DATE: "type.datetime",
    YEAR: "type.datetime",
    YEAR_MONTH: "type.datetime",
    DATETIME: "type.datetime",
    BOOLEAN: "type.boolean",
}


@dataclass(frozen=True)
class FbClass:
    """A class: its id, its readable name, its direct superclass and whether it is a mediator (CVT)."""

    id: str
    name: str
    parent: str | None = "common.topic"
    cvt: bool = False


@dataclass(frozen=True)
class FbProperty:
    """A property: id, domain class, range (a class id or an XSD datatype IRI), reverse property."""

    id: str
    domain: str
    range: str
    reverse: str | None = None


CLASSES: tuple[FbClass, ...] = (
    FbClass("common.topic", "Topic", None),
    FbClass("location.location", "Location"),
    FbClass("location.country", "Country", "location.location"),
    FbClass("location.citytown", "City/Town", "location.location"),
    FbClass("people.person", "Person"),
    FbClass("people.gender", "Gender"),
    FbClass("film.actor", "Film actor", "people.person"),
    FbClass("film.director", "Film director", "people.person"),
    FbClass("music.artist", "Musical Artist", "people.person"),
    FbClass("language.human_language", "Human Language"),
    FbClass("film.film", "Film"),
    FbClass("film.film_genre", "Film genre"),
    FbClass("film.film_character", "Film character"),
    FbClass("music.album", "Musical Album"),
    FbClass("music.genre", "Musical genre"),
    FbClass("organization.organization", "Organization"),
    FbClass("education.educational_institution", "Educational Institution", "organization.organization"),
    FbClass("education.university", "College/University", "education.educational_institution"),
    FbClass("book.book", "Book"),
    FbClass("book.author", "Author", "people.person"),
    FbClass("film.performance", "Film performance", None, cvt=True),
    FbClass("education.education", "Education", None, cvt=True),
    FbClass("people.marriage", "Marriage", None, cvt=True),
)
CLASS_BY_ID = {c.id: c for c in CLASSES}

_BORN_HERE = "location.location.people_born_here"
PROPERTIES: tuple[FbProperty, ...] = (
    FbProperty("people.person.gender", "people.person", "people.gender"),
    FbProperty("people.person.nationality", "people.person", "location.country"),
    FbProperty(
        "people.person.place_of_birth", "people.person", "location.citytown", "location.location.people_born_here"
    ),
    FbProperty(
        "location.location.people_born_here", "location.location", "people.person", "people.person.place_of_birth"
    ),
    FbProperty("people.person.date_of_birth", "people.person", DATE),
    FbProperty("people.person.height_meters", "people.person", FLOAT),
    FbProperty("people.person.spouse_s", "people.person", "people.marriage"),
    FbProperty("people.marriage.spouse", "people.marriage", "people.person"),
    FbProperty("people.marriage.from", "people.marriage", YEAR_MONTH),
    FbProperty("location.location.containedby", "location.location", "location.location"),
    FbProperty("location.country.official_language", "location.country", "language.human_language"),
    FbProperty("location.country.capital", "location.country", "location.citytown"),
    FbProperty("location.location.area", "location.location", FLOAT),
    FbProperty("location.citytown.population", "location.citytown", INT),
    FbProperty("film.film.directed_by", "film.film", "film.director", "film.director.film"),
    FbProperty("film.director.film", "film.director", "film.film", "film.film.directed_by"),
    FbProperty("film.film.genre", "film.film", "film.film_genre"),
    FbProperty("film.film.country", "film.film", "location.country"),
    FbProperty("film.film.initial_release_date", "film.film", DATE),
    FbProperty("film.film.runtime_minutes", "film.film", FLOAT),
    FbProperty("film.film.starring", "film.film", "film.performance", "film.performance.film"),
    FbProperty("film.performance.film", "film.performance", "film.film", "film.film.starring"),
    FbProperty("film.performance.actor", "film.performance", "film.actor", "film.actor.film"),
    FbProperty("film.actor.film", "film.actor", "film.performance", "film.performance.actor"),
    FbProperty("film.performance.character", "film.performance", "film.film_character"),
    FbProperty("music.album.artist", "music.album", "music.artist"),
    FbProperty("music.album.genre", "music.album", "music.genre"),
    FbProperty("music.album.release_date", "music.album", DATETIME),
    FbProperty("music.album.track_count", "music.album", INT),
    FbProperty("organization.organization.headquarters", "organization.organization", "location.citytown"),
    FbProperty("organization.organization.date_founded", "organization.organization", YEAR),
    FbProperty("education.university.number_of_students", "education.university", INT),
    FbProperty("education.education.student", "education.education", "people.person"),
    FbProperty("education.education.institution", "education.education", "education.educational_institution"),
    FbProperty("education.education.start_date", "education.education", YEAR),
    FbProperty("book.book.author", "book.book", "book.author"),
    FbProperty("book.book.genre", "book.book", "film.film_genre"),
    FbProperty("book.book.in_print", "book.book", BOOLEAN),
)
PROPERTY_BY_ID = {p.id: p for p in PROPERTIES}


def ancestors(cls: str) -> list[str]:
    """``cls`` and its superclasses, nearest first (``location.citytown``, ``location.location``, ``common.topic``)."""
    out: list[str] = []
    current: str | None = cls
    while current is not None:
        out.append(current)
        current = CLASS_BY_ID[current].parent
    return out


def schema_triples() -> Iterator[tuple[str, str, str | tuple[str, str]]]:
    """The schema as triples ``(subject, relation, object)``; a literal object is ``(value, "@en"|datatype)``."""
    domains = sorted({c.id.split(".")[0] for c in CLASSES} | {p.id.split(".")[0] for p in PROPERTIES})
    for dom in domains:
        yield dom, TYPE_RELATION, TYPE_DOMAIN
    for cls in CLASSES:
        yield cls.id, TYPE_RELATION, TYPE_TYPE
        yield cls.id, NAME_RELATION, (cls.name, "@en")
        if cls.parent is not None:
            yield cls.id, INCLUDED_TYPES, cls.parent
        if cls.cvt:
            yield cls.id, MEDIATOR_HINT, ("true", BOOLEAN)
    for prop in PROPERTIES:
        yield prop.id, TYPE_RELATION, TYPE_PROPERTY
        yield prop.id, NAME_RELATION, (prop.id.rsplit(".", 1)[1].replace("_", " "), "@en")
        yield prop.id, PROPERTY_SCHEMA, prop.domain
        yield prop.id, PROPERTY_EXPECTED_TYPE, VALUE_TYPES.get(prop.range, prop.range)
        if prop.reverse is not None:
            yield prop.id, PROPERTY_REVERSE, prop.reverse


__all__ = [
    "CLASSES",
    "CLASS_BY_ID",
    "PROPERTIES",
    "PROPERTY_BY_ID",
    "TYPE_PROPERTY",
    "TYPE_TYPE",
    "FbClass",
    "FbProperty",
    "ancestors",
    "schema_triples",
]
