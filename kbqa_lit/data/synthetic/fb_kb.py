"""Stream a Freebase-shaped KB of a chosen size to N-Triples, with questions over it.

``write_scale_kb(out, triples=10**6, seed=0)`` writes ``kb.nt`` (about ``triples`` lines),
``questions.jsonl`` (common-schema :class:`~kbqa_lit.data.schema.KBQAExample` lines with gold
S-expressions) and ``summary.json``. What the KB has, as Freebase has it:

- mids (``m.0…``) under ``http://rdf.freebase.com/ns/``; ``type.object.name`` (``@en``) for every
  named entity and ``common.topic.alias`` for some; ``type.object.type`` for every entity with its
  class's ancestors (:mod:`~kbqa_lit.data.synthetic.fb_schema`) and the schema as nodes;
- CVT (mediator) nodes without names: film performances, educations, marriages;
- literals of the XSD types the datasets use: integer, float, date, gYear, gYearMonth, dateTime,
  boolean;
- a heavy-tailed degree distribution: objects are drawn with ``index = n · u**a`` (``u`` uniform),
  so the first countries, genders and genres are hubs (at 10^6 triples, tens of thousands of
  edges), and reverse properties write both directions.

Triples are written as they are drawn (nothing but a few counters per hub is kept), so memory
stays bounded at any size. Every draw comes from one ``random.Random(seed)`` in a fixed order and
names and mids are pure functions of an index (:mod:`~kbqa_lit.data.synthetic.fb_names`): the
same size and seed give byte-identical files. Questions are sampled from a second generator, so
their number does not change the KB; their answers are known when the facts are written.
"""

from __future__ import annotations

import json
import random
import time
from array import array
from pathlib import Path
from typing import IO, Any

from kbqa_lit.data.schema import Answer, KBQAExample, write_jsonl
from kbqa_lit.data.synthetic import fb_names as fn
from kbqa_lit.data.synthetic import names as nm
from kbqa_lit.data.synthetic.fb_layout import GENDERS, Layout, layout_for
from kbqa_lit.data.synthetic.fb_schema import (
    BOOLEAN,
    DATE,
    DATETIME,
    FLOAT,
    INT,
    PROPERTY_BY_ID,
    YEAR,
    YEAR_MONTH,
    ancestors,
    schema_triples,
)
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, NS, TYPE_RELATION
from kbqa_lit.kb.lf.terms import literal_nt

KB_FILE, QUESTIONS_FILE, SUMMARY_FILE = "kb.nt", "questions.jsonl", "summary.json"
#: Skew exponent of object draws (``index = n · u**SKEW``): larger means heavier hubs.
SKEW = 3.0
SEMANTICS = "exclude-topic"


class _Writer:
    """Writes N-Triples lines and keeps the counters the summary and the questions need."""

    def __init__(self, fh: IO[str], layout: Layout, seed: int) -> None:
        self.fh, self.layout, self.seed = fh, layout, seed
        self.lines = 0
        self.degree = array("l", bytes(8 * layout.named))  # fact triples per named entity
        self.next_cvt = layout.named
        self._mids: dict[int, str] = {}

    def mid(self, index: int) -> str:
        if index < self.layout.named and index < 5000:  # hubs and schema-near entities are asked often
            got = self._mids.get(index)
            if got is None:
                got = self._mids[index] = fn.mid(index, self.seed)
            return got
        return fn.mid(index, self.seed)

    def raw(self, s: str, rel: str, obj: str) -> None:
        self.fh.write(f"<{NS}{s}> <{NS}{rel}> {obj} .\n")
        self.lines += 1

    def typed(self, index: int, cls: str, named: bool = True) -> None:
        s = self.mid(index)
        for c in ancestors(cls) if named else [cls]:
            self.raw(s, TYPE_RELATION, f"<{NS}{c}>")

    def extra_type(self, index: int, cls: str) -> None:
        self.raw(self.mid(index), TYPE_RELATION, f"<{NS}{cls}>")

    def name(self, index: int, text: str, alias: str | None = None) -> None:
        s = self.mid(index)
        self.raw(s, NAME_RELATION, literal_nt(text, lang="en"))
        if alias:
            self.raw(s, ALIAS_RELATION, literal_nt(alias, lang="en"))

    def fact(self, s: int, rel: str, o: int) -> None:
        """An entity fact, and its reverse when the property has one."""
        self.raw(self.mid(s), rel, f"<{NS}{self.mid(o)}>")
        reverse = PROPERTY_BY_ID[rel].reverse
        if reverse is not None:
            self.raw(self.mid(o), reverse, f"<{NS}{self.mid(s)}>")
        for x in (s, o):
            if x < self.layout.named:
                self.degree[x] += 2 if reverse is not None else 1

    def lit(self, s: int, rel: str, value: str, datatype: str) -> None:
        self.raw(self.mid(s), rel, literal_nt(value, datatype=datatype))

    def cvt(self, cls: str) -> int:
        index = self.next_cvt
        self.next_cvt += 1
        self.typed(index, cls, named=False)
        return index


def _schema_object(obj: str | tuple[str, str]) -> str:
    if isinstance(obj, str):
        return f"<{NS}{obj}>"
    value, kind = obj
    return literal_nt(value, lang="en") if kind == "@en" else literal_nt(value, datatype=kind)


def _skewed(rng: random.Random, n: int) -> int:
    return min(n - 1, int(n * rng.random() ** SKEW))


def _date(rng: random.Random, first: int, last: int) -> str:
    return f"{rng.randint(first, last):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


class _Questions:
    """Samples questions while the facts are written; answers are the facts just drawn."""

    def __init__(self, seed: int, layout: Layout, wanted: int) -> None:
        self.rng = random.Random(seed + 1_000_003)
        self.layout, self.seed = layout, seed
        per_subject = wanted / max(1, layout.counts["person"] + layout.counts["film"])
        self.rate = min(1.0, per_subject)
        self.items: list[KBQAExample] = []

    def take(self) -> bool:
        return self.rng.random() < self.rate

    def add(
        self, template: str, question: str, topic: tuple[str, str], sexpr: str, answers: list[Answer], **meta: Any
    ) -> None:
        qid = f"fbscale-{len(self.items):06d}"
        self.items.append(
            KBQAExample(
                qid=qid,
                question=question,
                answers=answers,
                topic_entities={topic[0]: topic[1]},
                s_expression=sexpr,
                meta={"dataset": "fb-scale", "template": template, "semantics": SEMANTICS, **meta},
            )
        )


def _ent(w: _Writer, index: int, name: str) -> Answer:
    return Answer(w.mid(index), name, "entity")


def write_scale_kb(
    out_dir: str | Path, triples: int = 1_000_000, seed: int = 0, questions: int = 200
) -> dict[str, Any]:
    """Write a Freebase-shaped KB of about ``triples`` triples and questions over it into ``out_dir``.

    Args:
        out_dir: Output folder (created; ``kb.nt``, ``questions.jsonl``, ``summary.json`` are replaced).
        triples: The KB's approximate size (1e3 to 1e8).
        seed: Random seed; one size and seed give byte-identical files.
        questions: About how many questions to sample (besides the hub questions).

    Returns:
        The summary also written to ``summary.json``: triples, named entities, CVT nodes, the
        largest degrees with their mids, hubs of degree >= 10^4, questions, seconds.

    Raises:
        UserInputError: For a size outside the range or a negative question count.
    """
    if questions < 0:
        raise UserInputError(f"--questions must be >= 0, got {questions}")
    start = time.perf_counter()
    layout = layout_for(int(triples))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (KB_FILE + ".tmp")
    rng = random.Random(seed)
    qs = _Questions(seed, layout, questions)
    with tmp.open("w", encoding="utf-8", buffering=1 << 20) as fh:
        w = _Writer(fh, layout, seed)
        for s, rel, o in schema_triples():
            w.raw(s, rel, _schema_object(o))
        hub = _write_entities(w, rng, qs)
    tmp.replace(out / KB_FILE)
    _hub_questions(w, qs, hub)
    n_questions = write_jsonl(qs.items, out / QUESTIONS_FILE)
    order = sorted(range(layout.named), key=lambda i: -w.degree[i])[:10]
    summary = {
        "out": str(out),
        "seed": seed,
        "triples_requested": int(triples),
        "triples": w.lines,
        "entities": layout.named,
        "cvt_nodes": w.next_cvt - layout.named,
        "entity_counts": dict(layout.counts),
        "top_degrees": [[w.mid(i), int(w.degree[i])] for i in order],
        "hubs_1e4": sum(1 for d in w.degree if d >= 10_000),
        "questions": n_questions,
        "seconds": round(time.perf_counter() - start, 3),
    }
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def _write_entities(w: _Writer, rng: random.Random, qs: _Questions) -> dict[str, Any]:
    """Write every named entity and CVT; return what the hub questions need."""
    lay, seed = w.layout, w.seed
    n = lay.counts
    idx = lay.index
    for k in range(n["gender"]):
        w.typed(idx("gender", k), "people.gender")
        w.name(idx("gender", k), GENDERS[k])
    for k in range(n["language"]):
        w.typed(idx("language", k), "language.human_language")
        w.name(idx("language", k), fn.language_name(k, seed))
    for k, genre in enumerate(nm.FILM_GENRES):
        w.typed(idx("film_genre", k), "film.film_genre")
        w.name(idx("film_genre", k), genre)
    for k, genre in enumerate(nm.MUSIC_GENRES):
        w.typed(idx("music_genre", k), "music.genre")
        w.name(idx("music_genre", k), genre)
    languages: dict[int, list[int]] = {}
    for k in range(n["country"]):
        c = idx("country", k)
        name = fn.country_name(k, seed)
        w.typed(c, "location.country")
        w.name(c, name, f"Republic of {name}" if rng.random() < 0.5 else None)
        langs = sorted({k % n["language"], _skewed(rng, n["language"])})
        for lang in langs:
            w.fact(c, "location.country.official_language", idx("language", lang))
        languages[k] = langs
        w.lit(c, "location.location.area", f"{rng.uniform(1e3, 9e6):.1f}", FLOAT)
    has_capital: set[int] = set()
    for k in range(n["city"]):
        city = idx("city", k)
        country = _skewed(rng, n["country"])
        name = fn.city_name(k, seed)
        w.typed(city, "location.citytown")
        w.name(city, name, f"{name} City" if rng.random() < 0.1 else None)
        w.fact(city, "location.location.containedby", idx("country", country))
        w.lit(city, "location.citytown.population", str(rng.randint(2_000, 9_000_000)), INT)
        if country not in has_capital:
            has_capital.add(country)
            w.fact(idx("country", country), "location.country.capital", city)
    nationals = [0] * n["country"]
    _people(w, rng, qs, nationals)
    _films(w, rng, qs)
    _albums_universities_books(w, rng)
    return {"nationals": nationals, "languages": languages}


def _people(w: _Writer, rng: random.Random, qs: _Questions, nationals: list[int]) -> None:
    lay, seed = w.layout, w.seed
    n, idx = lay.counts, lay.index
    people = n["person"]
    actors, directors = max(2, int(people * 0.3)), max(2, int(people * 0.05))
    for k in range(people):
        p = idx("person", k)
        name = fn.person_name(k, seed)
        w.typed(p, "people.person")
        if k < actors:
            w.extra_type(p, "film.actor")
        if k < directors:
            w.extra_type(p, "film.director")
        if int(people * 0.05) <= k < int(people * 0.15):
            w.extra_type(p, "book.author")
        if int(people * 0.10) <= k < int(people * 0.20):
            w.extra_type(p, "music.artist")
        w.name(p, name, name.split()[0][0] + ". " + name.split()[-1] if rng.random() < 0.2 else None)
        gender = 0 if rng.random() < 0.62 else 1
        w.fact(p, "people.person.gender", idx("gender", gender))
        countries = {_skewed(rng, n["country"])}
        if rng.random() < 0.08:
            countries.add(_skewed(rng, n["country"]))
        for c in sorted(countries):
            w.fact(p, "people.person.nationality", idx("country", c))
            nationals[c] += 1
        city = _skewed(rng, n["city"])
        w.fact(p, "people.person.place_of_birth", idx("city", city))
        born = _date(rng, 1900, 2005)
        w.lit(p, "people.person.date_of_birth", born, DATE)
        if rng.random() < 0.5:
            w.lit(p, "people.person.height_meters", f"{rng.randint(150, 205) / 100:.2f}", FLOAT)
        if rng.random() < 0.3:
            edu = w.cvt("education.education")
            w.fact(edu, "education.education.student", p)
            w.fact(edu, "education.education.institution", idx("university", _skewed(rng, n["university"])))
            w.lit(edu, "education.education.start_date", str(rng.randint(1920, 2015)), YEAR)
        if k % 20 == 0 and k + 1 < people:
            m = w.cvt("people.marriage")
            for spouse in (p, idx("person", k + 1)):
                w.fact(spouse, "people.person.spouse_s", m)
                w.fact(m, "people.marriage.spouse", spouse)
            w.lit(m, "people.marriage.from", f"{rng.randint(1950, 2015)}-{rng.randint(1, 12):02d}", YEAR_MONTH)
        if qs.take():
            topic = (w.mid(p), name)
            ids = [idx("country", c) for c in sorted(countries)]
            names = [fn.country_name(c, seed) for c in sorted(countries)]
            kind = qs.rng.randrange(4)
            if kind == 0:
                qs.add("nationality", f"which country is {name} a citizen of?", topic,
                       f"(JOIN (R people.person.nationality) {topic[0]})",
                       [Answer(w.mid(i), nm_, "entity") for i, nm_ in zip(ids, names, strict=True)])  # fmt: skip
            elif kind == 1:
                qs.add("place_of_birth", f"which city was {name} born in?", topic,
                       f"(JOIN (R people.person.place_of_birth) {topic[0]})",
                       [_ent(w, idx("city", city), fn.city_name(city, seed))])  # fmt: skip
            elif kind == 2:
                qs.add("date_of_birth", f"when was {name} born?", topic,
                       f"(JOIN (R people.person.date_of_birth) {topic[0]})",
                       [Answer(born, born, "literal")])  # fmt: skip
            else:
                qs.add("gender", f"what gender is {name}?", topic, f"(JOIN (R people.person.gender) {topic[0]})",
                       [_ent(w, idx("gender", gender), GENDERS[gender])])  # fmt: skip


def _films(w: _Writer, rng: random.Random, qs: _Questions) -> None:
    lay, seed = w.layout, w.seed
    n, idx = lay.counts, lay.index
    people = n["person"]
    actors, directors = max(2, int(people * 0.3)), max(2, int(people * 0.05))
    character = 0
    for k in range(n["film"]):
        f = idx("film", k)
        title = fn.film_title(k, seed)
        w.typed(f, "film.film")
        w.name(f, title)
        w.lit(f, "film.film.initial_release_date", _date(rng, 1920, 2015), DATE)
        for g in sorted({_skewed(rng, n["film_genre"]) for _ in range(1 if rng.random() < 0.6 else 2)}):
            w.fact(f, "film.film.genre", idx("film_genre", g))
        w.fact(f, "film.film.country", idx("country", _skewed(rng, n["country"])))
        director = _skewed(rng, directors)
        w.fact(f, "film.film.directed_by", idx("person", director))
        w.lit(f, "film.film.runtime_minutes", f"{rng.randint(70, 200)}.0", FLOAT)
        cast: list[int] = []
        for _ in range(rng.randint(2, 5)):
            actor = _skewed(rng, actors)
            if actor in cast:
                continue
            cast.append(actor)
            perf = w.cvt("film.performance")
            w.fact(perf, "film.performance.film", f)
            w.fact(perf, "film.performance.actor", idx("person", actor))
            w.fact(perf, "film.performance.character", idx("character", character % n["character"]))
            character += 1
        if qs.take():
            topic = (w.mid(f), title)
            if qs.rng.random() < 0.5:
                qs.add("directed_by", f"who directed {title}?", topic, f"(JOIN (R film.film.directed_by) {topic[0]})",
                       [_ent(w, idx("person", director), fn.person_name(director, seed))])  # fmt: skip
            else:
                sexpr = f"(JOIN (R film.performance.actor) (JOIN film.performance.film {topic[0]}))"
                qs.add("actors", f"which actors starred in {title}?", topic, sexpr,
                       [_ent(w, idx("person", a), fn.person_name(a, seed)) for a in cast], cvt=True)  # fmt: skip
    for k in range(n["character"]):
        w.typed(idx("character", k), "film.film_character")
        w.name(idx("character", k), fn.character_name(k, seed))


def _albums_universities_books(w: _Writer, rng: random.Random) -> None:
    lay, seed = w.layout, w.seed
    n, idx = lay.counts, lay.index
    people = n["person"]
    artists0, artists = int(people * 0.10), max(2, int(people * 0.10))
    authors0, authors = int(people * 0.05), max(2, int(people * 0.10))
    for k in range(n["album"]):
        a = idx("album", k)
        w.typed(a, "music.album")
        w.name(a, fn.album_title(k, seed))
        w.fact(a, "music.album.artist", idx("person", artists0 + _skewed(rng, artists)))
        w.fact(a, "music.album.genre", idx("music_genre", _skewed(rng, n["music_genre"])))
        w.lit(a, "music.album.release_date", _date(rng, 1955, 2015) + f"T{rng.randint(0, 23):02d}:00:00", DATETIME)
        w.lit(a, "music.album.track_count", str(rng.randint(4, 24)), INT)
    for k in range(n["university"]):
        u = idx("university", k)
        w.typed(u, "education.university")
        name = fn.university_name(k, seed)
        w.name(u, name, "".join(x[0] for x in name.split() if x[0].isupper()))
        w.fact(u, "organization.organization.headquarters", idx("city", _skewed(rng, n["city"])))
        w.lit(u, "organization.organization.date_founded", str(rng.randint(1100, 2000)), YEAR)
        w.lit(u, "education.university.number_of_students", str(rng.randint(500, 90_000)), INT)
    for k in range(n["book"]):
        b = idx("book", k)
        w.typed(b, "book.book")
        w.name(b, fn.book_title(k, seed))
        w.fact(b, "book.book.author", idx("person", authors0 + _skewed(rng, authors)))
        w.fact(b, "book.book.genre", idx("film_genre", _skewed(rng, n["film_genre"])))
        w.lit(b, "book.book.in_print", "true" if rng.random() < 0.7 else "false", BOOLEAN)


def _hub_questions(w: _Writer, qs: _Questions, hub: dict[str, Any]) -> None:
    """Questions about the largest hubs: counts over their in-edges, and their own few facts."""
    lay, seed = w.layout, w.seed
    for k in range(min(3, lay.counts["country"])):
        c = lay.index("country", k)
        name = fn.country_name(k, seed)
        topic = (w.mid(c), name)
        count = str(hub["nationals"][k])
        sexpr = f"(COUNT (JOIN people.person.nationality {topic[0]}))"
        qs.add("count_nationals", f"how many people are citizens of {name}?", topic, sexpr,
               [Answer(count, count, "literal")], hub=True)  # fmt: skip
        langs = hub["languages"][k]
        qs.add("official_language", f"which languages are spoken in {name}?", topic,
               f"(JOIN (R location.country.official_language) {topic[0]})",
               [_ent(w, lay.index("language", x), fn.language_name(x, seed)) for x in langs], hub=True)  # fmt: skip


__all__ = ["KB_FILE", "QUESTIONS_FILE", "SUMMARY_FILE", "write_scale_kb"]
