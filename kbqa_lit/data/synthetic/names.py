"""Invented names for the synthetic world: people, places, films, albums, teams and the rest.

Everything is drawn from fixed word pools with one seeded :class:`random.Random`, so a seed gives
the same names on every machine. :class:`NameMaker` hands out names that are unique within a
kind of thing; the world adds deliberate clashes (namesakes, a film titled like a city) itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable

FIRST_NAMES = (
    "Ada Alma Amos Anja Arlo Astrid Basil Bea Bram Carmen Cyrus Dalia Dario Della Edgar Elena Elio "
    "Elsa Emil Enzo Esme Ezra Farah Felix Flora Gideon Greta Hana Hugo Ida Idris Ines Ivo Jada "
    "Jonas Juno Kai Kira Lars Leona Levi Lina Lucan Mara Marco Maya Milo Mina Nadia Nico Nils Nora "
    "Odile Oren Otto Paz Petra Quinn Rafe Rhea Rosa Rufus Sabine Saul Selma Silas Sofia Tamsin "
    "Teo Thea Tobias Uma Vera Viggo Wren Xenia Yara Yusuf Zara Zeno"
).split()

LAST_NAMES = (
    "Abbott Alder Ambrose Arden Ashby Bancroft Barlow Beckett Bellamy Birch Blackwood Bramley "
    "Calloway Carver Castell Chandler Corrigan Crane Dalton Darrow Delacroix Draper Dunmore Eastwick "
    "Ellery Everly Fairweather Falk Fenwick Fletcher Garrick Gilmore Grayson Hale Halloway Harlow "
    "Hartigan Hawthorne Holt Ingram Iverson Jarrow Keating Kestrel Kingsley Lachance Langford Larkin "
    "Lindqvist Lockwood Lowell Maddox Marchetti Merriweather Morrow Nakamura Navarro Noble Novak "
    "Oakley Orsini Osei Pembroke Pennington Quill Radcliffe Ravenscroft Redgrave Rinaldi Rowntree "
    "Salazar Sandoval Sheridan Sinclair Solberg Stirling Strand Sutter Tanaka Thackeray Thorne "
    "Tremblay Underhill Valdez Vance Varga Wainwright Waverley Whitlock Winslow Wolfe Yardley Zeller"
).split()

_SYL_A = "Al Ar Bel Cor Dor El Fen Gal Har Il Kor Lor Mar Nor Or Pel Quor Ros Sal Tor Val Ver Zan".split()
_SYL_B = "a an ar e el en i is o on or u".split()
_SYL_C = "bar dor gar ven lis mont ran tis var zen dal mir".split()
_CITY_SUFFIX = "ton ford burg vale haven mouth field port bridge wick stead holm".split()
_CITY_PREFIX = ("", "", "", "", "Port ", "San ", "North ", "Lake ", "New ", "Fort ")
_COUNTRY_SUFFIX = "ia land ova istan ara onia".split()

FILM_ADJ = (
    "Silent Crimson Last Hidden Broken Golden Endless Frozen Distant Burning Hollow Secret Restless "
    "Bitter Wild Quiet Lost Final Shattered Midnight Electric Velvet Iron Paper Glass Forgotten Savage "
    "Gentle Fallen Northern Scarlet Lonely Wicked Little Crooked Bright"
).split()
FILM_NOUN = (
    "River Harbor Garden Shadow Empire Horizon Kingdom Witness Promise Voyage Winter Summer Signal "
    "Mirror Frontier Orchard Lantern Tide Storm Echo Circus Letter Island Tower Bridge Desert Engine "
    "Crown Heart Passage Highway Lighthouse Harvest Canyon Compass Ghost Carnival"
).split()
ALBUM_WORDS = (
    "Neon Static Velvet Paper Satellite Honey Thunder Chrome Ocean Wildflower Midnight Gravity Amber "
    "Polaroid Echoes Tides Embers Lullaby Wires Parade Radio Sirens Mosaic Halcyon Fever Voltage "
    "Cathedral Bloom Arcade Monsoon"
).split()
ALBUM_TAILS = (
    "Dreams Sessions Nights Lines Songs Stories Hearts Skies Roads Letters Waves Machines Hymns Days"
).split()
MASCOTS = (
    "Falcons Wolves Comets Mariners Titans Foxes Ravens Stallions Hornets Pioneers Rangers Lions "
    "Bears Sharks Owls Dragons Giants Rockets Vikings Bison Cougars Herons Thunder Kings"
).split()
CHARACTER_TITLES = ("Captain", "Detective", "Doctor", "Agent", "Professor", "Sergeant", "Lady", "Mayor", "")

FILM_GENRES = (
    "Drama",
    "Comedy",
    "Thriller",
    "Science Fiction",
    "Western",
    "Horror",
    "Animation",
    "Documentary",
    "Romance",
    "Action",
)
MUSIC_GENRES = (
    "Jazz",
    "Rock",
    "Folk",
    "Electronic",
    "Hip Hop",
    "Classical",
    "Blues",
    "Reggae",
    "Pop",
    "Metal",
)
SPORTS = ("Football", "Basketball", "Ice Hockey", "Baseball", "Rugby", "Volleyball")
DEGREES = (
    "Bachelor of Arts",
    "Bachelor of Science",
    "Master of Science",
    "Master of Fine Arts",
    "Doctor of Philosophy",
)


class NameMaker:
    """Draw names that are unique within one kind of thing.

    Args:
        rng: The world's random generator (shared, so draws stay in one deterministic sequence).
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._used: dict[str, set[str]] = {}

    def unique(self, kind: str, make: Callable[[], str], tries: int = 200) -> str:
        """Return a name from ``make`` not yet used for ``kind`` (a numbered variant as a last resort)."""
        used = self._used.setdefault(kind, set())
        name = make()
        for _ in range(tries):
            if name not in used:
                break
            name = make()
        base, n = name, 2
        while name in used:
            name = f"{base} {n}"
            n += 1
        used.add(name)
        return name

    def _stem(self) -> str:
        r = self.rng
        return r.choice(_SYL_A) + r.choice(_SYL_B) + r.choice(_SYL_C)

    def person(self) -> str:
        """A person's full name, e.g. ``"Mara Lindqvist"``."""
        r = self.rng
        return self.unique("person", lambda: f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}")

    def country(self) -> str:
        """A country name, e.g. ``"Valorinia"``."""
        r = self.rng
        return self.unique("place", lambda: (self._stem() + r.choice(_COUNTRY_SUFFIX)).capitalize())

    def city(self) -> str:
        """A city name, e.g. ``"Port Delmont"`` or ``"Corvenford"``."""
        r = self.rng

        def make() -> str:
            stem = r.choice(_SYL_A) + r.choice(_SYL_B) + r.choice(_CITY_SUFFIX)
            return r.choice(_CITY_PREFIX) + stem.capitalize()

        return self.unique("place", make)

    def film(self) -> str:
        """A film title, e.g. ``"The Silent Harbor"``."""
        r = self.rng

        def make() -> str:
            adj, noun, noun2 = r.choice(FILM_ADJ), r.choice(FILM_NOUN), r.choice(FILM_NOUN)
            pattern = r.randrange(4)
            if pattern == 0:
                return f"The {adj} {noun}"
            if pattern == 1:
                return f"{noun} of the {noun2}" if noun != noun2 else f"{adj} {noun}"
            if pattern == 2:
                return f"{adj} {noun}"
            return f"The {noun} and the {noun2}" if noun != noun2 else f"The {noun}"

        return self.unique("film", make)

    def album(self) -> str:
        """An album title, e.g. ``"Neon Sessions"``."""
        r = self.rng

        def make() -> str:
            if r.random() < 0.5:
                return f"{r.choice(ALBUM_WORDS)} {r.choice(ALBUM_TAILS)}"
            first, second = r.sample(ALBUM_WORDS, 2)
            return f"{first} {second}"

        return self.unique("album", make)

    def character(self) -> str:
        """A film character, e.g. ``"Captain Ezra Thorne"``."""
        r = self.rng

        def make() -> str:
            title = r.choice(CHARACTER_TITLES)
            core = f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}" if title == "" else r.choice(LAST_NAMES)
            return f"{title} {core}".strip()

        return self.unique("character", make)

    def team(self, city: str) -> str:
        """A team named after its city, e.g. ``"Corvenford Falcons"``."""
        r = self.rng
        return self.unique("team", lambda: f"{city} {r.choice(MASCOTS)}")

    def university(self, city: str) -> str:
        """A university, e.g. ``"University of Corvenford"`` or ``"Holt College"``."""
        r = self.rng

        def make() -> str:
            pattern = r.randrange(3)
            if pattern == 0:
                return f"University of {city}"
            if pattern == 1:
                return f"{city} Institute of Technology"
            return f"{r.choice(LAST_NAMES)} College"

        return self.unique("university", make)

    def arena(self, city: str) -> str:
        """An arena, e.g. ``"Harlow Arena"`` or ``"Corvenford Stadium"``."""
        r = self.rng
        return self.unique("arena", lambda: f"{r.choice(LAST_NAMES)} Arena" if r.random() < 0.5 else f"{city} Stadium")

    def language(self, country: str) -> str:
        """A language named after a country stem, e.g. ``"Valorinian"``."""
        stem = country.rstrip("aeiou")
        return self.unique("language", lambda: f"{stem}ian" if not stem.endswith("i") else f"{stem}an")


def initials_alias(name: str) -> str:
    """Return ``"M. Lindqvist"`` for ``"Mara Lindqvist"`` (the name itself when it has one word)."""
    parts = name.split()
    return f"{parts[0][0]}. {' '.join(parts[1:])}" if len(parts) > 1 else name


def acronym(name: str) -> str:
    """Return the capital initials of a multi-word name (``"University of Corvenford"`` → ``"UC"``)."""
    return "".join(w[0] for w in name.split() if w[:1].isupper())
