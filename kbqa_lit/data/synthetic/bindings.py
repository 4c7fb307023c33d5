"""Candidate bindings of question templates: which topic entities (and literal) fill the slots.

A binder looks at the in-memory world and proposes every sensible filling of a template's slots,
in a deterministic order: topic entities of the right class, pairs linked through one CVT node
(a film and a character of one performance), a threshold between the values of a set (so a
comparative keeps some members and drops others), a year inside a roster stint. Binders only
*propose*; the gold answers always come from executing the S-expression on the store.

Sets used by binders (a team's players, a director's films) are read off the world's indexes so
that ARGMAX/ARGMIN bindings can be restricted to sets with one clear winner.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from kbqa_lit.data.synthetic.kb import Lit, World
from kbqa_lit.kb.lf.iri import XSD


@dataclass(frozen=True)
class Binding:
    """One filling of a template's slots.

    Attributes:
        entities: Topic entity ids, in slot order (``{e0}``, ``{e1}``).
        literal: The literal token for the S-expression (``{lit}``), e.g. ``2005^^...#gYear``.
        literal_text: How the literal reads in a question (``2005``, ``1.90``, ``500,000``).
    """

    entities: tuple[str, ...]
    literal: str | None = None
    literal_text: str | None = None


Binder = Callable[[World, random.Random], list[Binding]]
SetFn = Callable[[World, str], list[str]]


# -- sets read off the world -----------------------------------------------------------------
def _through(world: World, start: str, inward: str, outward: str) -> list[str]:
    """Distinct entities reached from ``start`` through the nodes that point at it.

    Args:
        world: The world to read.
        start: The entity the middle nodes point at.
        inward: The relation from a middle node (a CVT: a stint, a performance) to ``start``.
        outward: The relation from a middle node to the entities returned.

    Returns:
        The entities in the order first reached, each once.

    """
    out: list[str] = []
    for mid in world.subjects(start, inward):
        out.extend(x for x in world.entity_objects(mid, outward) if x not in out)
    return out


def team_players(world: World, team: str) -> list[str]:
    """Players who ever had a roster stint with ``team``."""
    return _through(world, team, "sports.sports_team_roster.team", "sports.sports_team_roster.player")


def director_films(world: World, director: str) -> list[str]:
    """Films directed by ``director``."""
    return world.subjects(director, "film.film.directed_by")


def actor_films(world: World, actor: str) -> list[str]:
    """Films with a performance by ``actor``."""
    return _through(world, actor, "film.performance.actor", "film.performance.film")


def film_cast(world: World, film: str) -> list[str]:
    """Actors with a performance in ``film``."""
    return _through(world, film, "film.performance.film", "film.performance.actor")


def artist_albums(world: World, artist: str) -> list[str]:
    """Albums recorded by ``artist``."""
    return world.subjects(artist, "music.album.artist")


def country_cities(world: World, country: str) -> list[str]:
    """Cities contained by ``country``."""
    return [c for c in world.subjects(country, "location.location.containedby") if world.has_class(c, "location.city")]


def person_universities(world: World, person: str) -> list[str]:
    """Universities ``person`` studied at."""
    return _through(world, person, "education.education.student", "education.education.institution")


# -- binder factories ------------------------------------------------------------------------
def instances(cls: str, out: str | None = None, into: str | None = None, min_out: int = 1) -> Binder:
    """Entities of ``cls`` (if given: with ``min_out`` objects of ``out``, with a subject via ``into``)."""

    def bind(world: World, rng: random.Random) -> list[Binding]:
        found = []
        for eid in world.instances(cls):
            if out is not None and len(world.objects(eid, out)) < min_out:
                continue
            if into is not None and not world.subjects(eid, into):
                continue
            found.append(Binding((eid,)))
        return found

    return bind


def linked_pairs(cls: str, rel0: str, rel1: str, require: str | None = None) -> Binder:
    """Pairs ``(e0, e1)`` that one node of ``cls`` (often a CVT) links by ``rel0`` and ``rel1``.

    With ``require``, only nodes that have a value of that relation count.
    """

    def bind(world: World, rng: random.Random) -> list[Binding]:
        seen: set[tuple[str, str]] = set()
        found = []
        for node in world.instances(cls):
            if require is not None and not world.objects(node, require):
                continue
            for a in world.entity_objects(node, rel0):
                for b in world.entity_objects(node, rel1):
                    if (a, b) not in seen:
                        seen.add((a, b))
                        found.append(Binding((a, b)))
        return found

    return bind


def _number(lit: Lit) -> float:
    return float(lit.value.replace("-", "")) if lit.datatype == XSD + "date" else float(lit.value)


def unique_extreme(cls: str, members: SetFn, attr: str, largest: bool) -> Binder:
    """Entities of ``cls`` whose set has at least two valued members and one clear best value of ``attr``."""

    def bind(world: World, rng: random.Random) -> list[Binding]:
        found = []
        for e in world.instances(cls):
            values = [_number(v) for m in members(world, e) if (v := world.value(m, attr)) is not None]
            if len(values) < 2:
                continue
            values.sort(reverse=largest)
            if values[0] != values[1]:
                found.append(Binding((e,)))
        return found

    return bind


def threshold(
    cls: str,
    members: SetFn,
    attr: str,
    render: Callable[[float], tuple[str, str]],
    candidates: Callable[[list[float]], list[float]],
    keep_above: bool,
    max_size: int = 20,
) -> Binder:
    """Entities of ``cls`` with a literal threshold that splits their set on ``attr``.

    ``candidates(values)`` proposes thresholds; one is kept when it leaves some members on both
    sides (``keep_above``: answers are the members above the threshold, else below).
    ``render(t)`` gives ``(S-expression literal token, question text)``.
    """

    def bind(world: World, rng: random.Random) -> list[Binding]:
        found = []
        for e in world.instances(cls):
            ms = members(world, e)
            if len(ms) > max_size:
                continue
            values = [_number(v) for m in ms if (v := world.value(m, attr)) is not None]
            good = [
                t
                for t in candidates(values)
                if any(v > t for v in values)
                and any(v < t for v in values)
                and (sum(v > t for v in values) if keep_above else sum(v < t for v in values)) >= 1
            ]
            if good:
                token, text = render(rng.choice(good))
                found.append(Binding((e,), token, text))
        return found

    return bind


def roster_years(current_year: int) -> Binder:
    """``(athlete, year)`` with the year inside one of the athlete's roster stints (bare year token)."""

    def bind(world: World, rng: random.Random) -> list[Binding]:
        found = []
        for athlete in world.instances("sports.pro_athlete"):
            stints = world.subjects(athlete, "sports.sports_team_roster.player")
            if len(stints) < 2:
                continue
            stint = rng.choice(stints)
            start = world.value(stint, "sports.sports_team_roster.from")
            end = world.value(stint, "sports.sports_team_roster.to")
            if start is None:
                continue
            year = rng.randint(int(start.value), int(end.value) if end else current_year)
            found.append(Binding((athlete,), str(year), str(year)))
        return found

    return bind


def current_players() -> Binder:
    """Athletes with an open roster stint (no ``to`` year: still on the team) and an earlier one; ``NOW``."""

    def bind(world: World, rng: random.Random) -> list[Binding]:
        found = []
        for athlete in world.instances("sports.pro_athlete"):
            stints = world.subjects(athlete, "sports.sports_team_roster.player")
            open_ = [s for s in stints if world.value(s, "sports.sports_team_roster.to") is None]
            if open_ and len(stints) > len(open_):
                found.append(Binding((athlete,), "NOW", "now"))
        return found

    return bind


# -- literal renderers -------------------------------------------------------------------------
def year_literal(t: float) -> tuple[str, str]:
    """``2005^^xsd:gYear`` reading ``2005``."""
    return f"{int(t)}^^{XSD}gYear", str(int(t))


def year_start_date(t: float) -> tuple[str, str]:
    """``2000-01-01^^xsd:date`` reading ``2000``, from a ``yyyymmdd`` number."""
    year = int(t) // 10000
    return f"{year:04d}-01-01^^{XSD}date", str(year)


def float_literal(t: float) -> tuple[str, str]:
    """``1.90^^xsd:float`` reading ``1.90``."""
    return f"{t:.2f}^^{XSD}float", f"{t:.2f}"


def integer_literal(t: float) -> tuple[str, str]:
    """``500000^^xsd:integer`` reading ``500,000``."""
    return f"{int(t)}^^{XSD}integer", f"{int(t):,}"


def year_candidates(values: list[float]) -> list[float]:
    """Years strictly between the smallest and largest value."""
    if not values:
        return []
    return [float(y) for y in range(int(min(values)) + 1, int(max(values)))]


def date_year_candidates(values: list[float]) -> list[float]:
    """First days of years (as ``yyyymmdd`` numbers, like the values) inside the range of the values."""
    if not values:
        return []
    lo, hi = int(min(values)) // 10000, int(max(values)) // 10000
    return [float(y * 10000 + 101) for y in range(lo + 1, hi + 1)]


def rounded_candidates(step: float) -> Callable[[list[float]], list[float]]:
    """Multiples of ``step`` strictly inside the range of the values."""

    def make(values: list[float]) -> list[float]:
        if not values:
            return []
        lo, hi = min(values), max(values)
        k = int(lo // step) + 1
        out = []
        while k * step < hi:
            out.append(round(k * step, 2))
            k += 1
        return out

    return make
