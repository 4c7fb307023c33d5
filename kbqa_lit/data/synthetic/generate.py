"""Populate a :class:`~kbqa_lit.data.synthetic.kb.World`: places, people, films, music, sports, education.

Every draw comes from the world's seeded generator in a fixed order, so one seed and size give one
world. Deliberate ambiguity is planted after the fact: namesakes (two or more people sharing a
name), films titled like a city, remakes sharing a title, and an album named like a film.
"""

from __future__ import annotations

import random

from kbqa_lit.data.synthetic import names as nm
from kbqa_lit.data.synthetic.kb import Lit, World
from kbqa_lit.data.synthetic.sizes import SizeSpec
from kbqa_lit.kb.lf.iri import XSD

INT, FLOAT, DATE, YEAR = XSD + "integer", XSD + "float", XSD + "date", XSD + "gYear"
#: The world's present (like the last Freebase dump, and what ``NOW`` means in a ``TC``): nothing
#: happens after it, and roster stints lasting past it have no ``to`` year (the player is still there).
CURRENT_YEAR = 2015


def _date(rng: random.Random, first_year: int, last_year: int) -> Lit:
    year = rng.randint(first_year, last_year)
    return Lit(f"{year:04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", DATE)


def generate_world(rng: random.Random, spec: SizeSpec) -> World:
    """Build a whole world of the given size.

    Args:
        rng: The seeded generator (the only source of randomness).
        spec: Entity counts.

    Returns:
        The populated world.
    """
    world = World(rng)
    names = nm.NameMaker(rng)
    cities = _places(world, names, spec)
    people = _people(world, names, spec, cities)
    films = _films(world, names, spec, people, cities)
    _music(world, names, spec, people, cities, films)
    _sports(world, names, spec, people, cities)
    _education(world, names, spec, people, cities)
    _plant_namesakes(world, people)
    return world


def _places(world: World, names: nm.NameMaker, spec: SizeSpec) -> list[str]:
    rng = world.rng
    countries: list[str] = []
    for _ in range(spec.countries):
        name = names.country()
        alias = f"Republic of {name}" if rng.random() < 0.5 else f"the {name} Federation"
        countries.append(world.add_entity(name, ["location.location", "location.country"], [alias]))
    n_languages = max(3, (len(countries) * 2) // 3)
    languages = [
        world.add_entity(names.language(world.name(c)), ["language.human_language"]) for c in countries[:n_languages]
    ]
    cities: list[str] = []
    for i, country in enumerate(countries):
        world.add(country, "location.country.official_language", languages[i % len(languages)])
        if rng.random() < 0.3:
            world.add(country, "location.country.official_language", rng.choice(languages))
        local = []
        for _ in range(spec.cities_per_country):
            city = world.add_entity(names.city(), ["location.location", "location.city"])
            if rng.random() < 0.15:
                world.add_alias(city, f"{world.name(city)} City")
            world.add(city, "location.location.containedby", country)
            world.add(city, "location.city.population", Lit(str(rng.randint(20_000, 4_000_000)), INT))
            local.append(city)
        world.add(country, "location.country.capital", rng.choice(local))
        cities.extend(local)
    return cities


def _people(world: World, names: nm.NameMaker, spec: SizeSpec, cities: list[str]) -> list[str]:
    rng = world.rng
    countries = world.instances("location.country")
    people: list[str] = []
    for _ in range(spec.people):
        name = names.person()
        aliases = [nm.initials_alias(name)] if rng.random() < 0.25 else []
        pid = world.add_entity(name, ["people.person"], aliases)
        city = rng.choice(cities)
        world.add(pid, "people.person.place_of_birth", city)
        home = world.entity_objects(city, "location.location.containedby")[0]
        world.add(pid, "people.person.nationality", home if rng.random() < 0.85 else rng.choice(countries))
        if rng.random() < 0.1:  # dual citizenship
            world.add(pid, "people.person.nationality", rng.choice(countries))
        world.add(pid, "people.person.date_of_birth", _date(rng, 1930, CURRENT_YEAR - 20))
        world.add(pid, "people.person.height_meters", Lit(f"{rng.randint(152, 203) / 100:.2f}", FLOAT))
        people.append(pid)
    shuffled = people[:]
    rng.shuffle(shuffled)
    n_couples = len(people) // 20
    for k in range(n_couples):
        world.add(shuffled[2 * k], "people.person.spouse", shuffled[2 * k + 1])
    return people


def _films(world: World, names: nm.NameMaker, spec: SizeSpec, people: list[str], cities: list[str]) -> list[str]:
    rng = world.rng
    genres = [world.add_entity(g, ["film.film_genre"]) for g in nm.FILM_GENRES]
    directors = rng.sample(people, max(6, spec.films // 3))
    actors = rng.sample(people, max(20, (len(people) * 2) // 5))
    films: list[str] = []
    characters_of: dict[str, list[tuple[str, str]]] = {}
    for _ in range(spec.films):
        prequel = films[rng.randrange(len(films))] if films and rng.random() < 0.15 else None
        if prequel is None:
            title = names.film()
        else:
            title = names.unique("film", lambda p=prequel: f"{world.name(p)} {rng.choice(['II', 'Returns', 'Reborn'])}")
        fid = world.add_entity(title, ["film.film"])
        director = rng.choice(directors)
        world.add_class(director, "film.director")
        world.add(fid, "film.film.directed_by", director)
        world.add(fid, "film.film.release_year", Lit(str(rng.randint(1950, CURRENT_YEAR)), YEAR))
        for genre in rng.sample(genres, 1 if rng.random() < 0.6 else 2):
            world.add(fid, "film.film.genre", genre)
        nationality = world.entity_objects(director, "people.person.nationality")[0]
        world.add(
            fid,
            "film.film.country",
            nationality if rng.random() < 0.7 else world.rng.choice(world.instances("location.country")),
        )
        world.add(fid, "film.film.runtime_minutes", Lit(str(rng.randint(78, 196)), INT))
        cast = rng.sample(actors, rng.randint(3, 6))
        roles: list[tuple[str, str]] = []
        inherited = rng.sample(characters_of[prequel], min(2, len(characters_of[prequel]))) if prequel else []
        for k, actor in enumerate(cast):
            if k < len(inherited):
                old_actor, character = inherited[k]
                actor = old_actor if rng.random() < 0.6 and old_actor not in cast else actor
            else:
                character = world.add_entity(names.character(), ["film.film_character"])
            perf = world.add_cvt("film.performance")
            world.add_class(actor, "film.actor")
            world.add(perf, "film.performance.film", fid)
            world.add(perf, "film.performance.actor", actor)
            world.add(perf, "film.performance.character", character)
            roles.append((actor, character))
        characters_of[fid] = roles
        films.append(fid)
    # ambiguity: films titled like a city, and remakes sharing an earlier film's title
    n_clash = max(2, len(films) // 30)
    for fid in rng.sample(films, n_clash):
        world.rename(fid, world.name(rng.choice(cities)))
    originals = rng.sample(films, n_clash)
    for orig in originals:
        remake = rng.choice(films)
        if remake != orig:
            world.rename(remake, world.name(orig))
    return films


def _music(
    world: World, names: nm.NameMaker, spec: SizeSpec, people: list[str], cities: list[str], films: list[str]
) -> None:
    rng = world.rng
    genres = [world.add_entity(g, ["music.genre"]) for g in nm.MUSIC_GENRES]
    artists = rng.sample(people, max(8, spec.albums // 2))
    for artist in artists:
        world.add_class(artist, "music.artist")
        birth = world.entity_objects(artist, "people.person.place_of_birth")[0]
        world.add(artist, "music.artist.origin", birth if rng.random() < 0.8 else rng.choice(cities))
    albums = []
    for _ in range(spec.albums):
        album = world.add_entity(names.album(), ["music.album"])
        world.add(album, "music.album.artist", rng.choice(artists))
        world.add(album, "music.album.release_date", _date(rng, 1962, CURRENT_YEAR))
        world.add(album, "music.album.genre", rng.choice(genres))
        world.add(album, "music.album.track_count", Lit(str(rng.randint(6, 22)), INT))
        albums.append(album)
    for album in rng.sample(albums, max(1, len(albums) // 40)):  # an album named like a film
        world.rename(album, world.name(rng.choice(films)))


def _sports(world: World, names: nm.NameMaker, spec: SizeSpec, people: list[str], cities: list[str]) -> None:
    rng = world.rng
    sports = [world.add_entity(s, ["sports.sport"]) for s in nm.SPORTS]
    played = sports[: max(2, min(len(sports), spec.teams // 4))]
    teams_by_sport: dict[str, list[str]] = {s: [] for s in played}
    for city in rng.sample(cities, spec.teams):
        team_name = names.team(world.name(city))
        team = world.add_entity(team_name, ["sports.sports_team"], [f"the {team_name.split()[-1]}"])
        sport = played[len(world.instances("sports.sports_team")) % len(played)]
        world.add(team, "sports.sports_team.sport", sport)
        world.add(team, "sports.sports_team.location", city)
        world.add(team, "sports.sports_team.founded", Lit(str(rng.randint(1880, 1995)), YEAR))
        arena = world.add_entity(names.arena(world.name(city)), ["sports.arena"])
        world.add(arena, "sports.arena.capacity", Lit(str(rng.randint(4_000, 95_000)), INT))
        world.add(team, "sports.sports_team.arena", arena)
        teams_by_sport[sport].append(team)
    athletes = [p for p in rng.sample(people, len(people) // 5)]
    for athlete in athletes:
        world.add_class(athlete, "sports.pro_athlete")
        pool = teams_by_sport[rng.choice(played)]
        year = rng.randint(1988, CURRENT_YEAR - 2)
        previous = None
        for _ in range(rng.randint(1, 4)):
            choices = [t for t in pool if t != previous]
            if not choices or year > CURRENT_YEAR:
                break
            team = rng.choice(choices)
            end = year + rng.randint(1, 6)
            stint = world.add_cvt("sports.sports_team_roster")
            world.add(stint, "sports.sports_team_roster.team", team)
            world.add(stint, "sports.sports_team_roster.player", athlete)
            world.add(stint, "sports.sports_team_roster.from", Lit(str(year), YEAR))
            if end >= CURRENT_YEAR:  # still on the team: no end year
                break
            world.add(stint, "sports.sports_team_roster.to", Lit(str(end), YEAR))
            previous, year = team, end + rng.randint(0, 1)


def _education(world: World, names: nm.NameMaker, spec: SizeSpec, people: list[str], cities: list[str]) -> None:
    rng = world.rng
    degrees = [world.add_entity(d, ["education.degree"]) for d in nm.DEGREES]
    universities = []
    for city in rng.sample(cities, spec.universities):
        name = names.university(world.name(city))
        uni = world.add_entity(name, ["education.university"], [nm.acronym(name)] if " " in name else [])
        world.add(uni, "education.university.city", city)
        world.add(uni, "education.university.founded", Lit(str(rng.randint(1600, 1995)), YEAR))
        world.add(uni, "education.university.number_of_students", Lit(str(rng.randint(1_500, 65_000)), INT))
        universities.append(uni)
    for person in people:
        r = rng.random()
        n = 0 if r < 0.5 else (1 if r < 0.85 else 2)
        for uni in rng.sample(universities, n):
            edu = world.add_cvt("education.education")
            world.add(edu, "education.education.student", person)
            world.add(edu, "education.education.institution", uni)
            world.add(edu, "education.education.degree", rng.choice(degrees))


def _plant_namesakes(world: World, people: list[str]) -> None:
    """Give about 3% of the people the name of another person (two different entities, one name)."""
    rng = world.rng
    n = max(3, len(people) // 33)
    picked = rng.sample(people, 2 * n)
    for a, b in zip(picked[:n], picked[n:], strict=True):
        world.rename(b, world.name(a))
