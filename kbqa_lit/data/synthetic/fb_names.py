"""Names and ids of the Freebase-shaped scale KB, as pure functions of an entity's index.

The scale generator streams its triples and keeps no table of entities: an entity's mid and name
are computed from its index (and the seed) whenever a triple or a question needs them. Mids are
``m.0`` plus six characters of Freebase's mid alphabet, a bijection of the index (an odd multiplier
modulo ``32**6``), so ids are unique, look scattered and need no lookup.
"""

from __future__ import annotations

from kbqa_lit.data.synthetic import names as nm

#: Freebase's mid alphabet (digits and consonants, and ``_``).
MID_ALPHABET = "0123456789bcdfghjklmnpqrstvwxyz_"
MID_WIDTH = 6
MID_SPACE = 32**MID_WIDTH
_MASK64 = (1 << 64) - 1


def mix(i: int, seed: int) -> int:
    """A 64-bit hash of ``(i, seed)`` (splitmix64's finaliser)."""
    z = (i * 0x9E3779B97F4A7C15 + seed * 0xBF58476D1CE4E5B9 + 0x632BE59BD9B4E5) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def unit(i: int, seed: int) -> float:
    """A number in ``[0, 1)`` drawn from ``(i, seed)`` (deterministic)."""
    return (mix(i, seed) >> 11) / float(1 << 53)


def mid(index: int, seed: int) -> str:
    """The Freebase-style id of entity ``index`` (``m.0`` + 6 characters, unique per index below ``32**6``).

    Raises:
        ValueError: When ``index`` is outside ``[0, 32**6)``.
    """
    if not 0 <= index < MID_SPACE:
        raise ValueError(f"entity index {index} is outside [0, {MID_SPACE})")
    value = (index * (0x5DEECE66D | 1) + mix(seed, 7)) % MID_SPACE
    chars = []
    for _ in range(MID_WIDTH):
        value, r = divmod(value, 32)
        chars.append(MID_ALPHABET[r])
    return "m.0" + "".join(reversed(chars))


def _pick(words: tuple[str, ...] | list[str], h: int) -> tuple[str, int]:
    return words[h % len(words)], h // len(words)


def person_name(local: int, seed: int) -> str:
    """A person's name: first name, sometimes a middle initial, last name (namesakes happen)."""
    first, h = _pick(nm.FIRST_NAMES, mix(local, seed + 11))
    last, h = _pick(nm.LAST_NAMES, h)
    initial = "ABCDEFGHJKLMNPRSTW"[h % 18] + ". " if h % 3 else ""
    return f"{first} {initial}{last}"


def country_name(local: int, seed: int) -> str:
    """A country's name (distinct for the first 1,656 countries)."""
    syl_a, syl_b, suffix = nm._SYL_A, nm._SYL_B, nm._COUNTRY_SUFFIX
    n = len(syl_a) * len(syl_b) * len(suffix)
    h = (local * 1009 + seed) % n
    a, h = _pick(syl_a, h)
    b, h = _pick(syl_b, h)
    return f"{a}{b}{suffix[h % len(suffix)]}" + ("" if local < n else f" {local // n + 1}")


def city_name(local: int, seed: int) -> str:
    """A city's name (prefix, two syllables, suffix; some repeat, as city names do)."""
    prefix, h = _pick(nm._CITY_PREFIX, mix(local, seed + 13))
    a, h = _pick(nm._SYL_A, h)
    c, h = _pick(nm._SYL_C, h)
    return f"{prefix}{a}{c}{nm._CITY_SUFFIX[h % len(nm._CITY_SUFFIX)]}"


def film_title(local: int, seed: int) -> str:
    """A film's title (adjective and noun; a sequel number when the pair is taken often)."""
    adj, h = _pick(nm.FILM_ADJ, mix(local, seed + 17))
    noun, h = _pick(nm.FILM_NOUN, h)
    number = h % 40
    return f"{adj} {noun}" + (f" {number}" if number > 1 else "")


def album_title(local: int, seed: int) -> str:
    """An album's title."""
    word, h = _pick(nm.ALBUM_WORDS, mix(local, seed + 19))
    tail, h = _pick(nm.ALBUM_TAILS, h)
    return f"{word} {tail}" + (f" Vol. {h % 30}" if h % 30 > 1 else "")


def character_name(local: int, seed: int) -> str:
    """A film character's name."""
    title, h = _pick(("Captain", "Doctor", "Agent", "Lady", "Sir", "Detective", ""), mix(local, seed + 23))
    first, h = _pick(nm.FIRST_NAMES, h)
    return f"{title} {first}".strip() + f" {nm.LAST_NAMES[h % len(nm.LAST_NAMES)]}"


def university_name(local: int, seed: int) -> str:
    """A university's name."""
    kind, _ = _pick(("University of", "Institute of Technology of", "College of"), mix(local, seed + 29))
    return f"{kind} {city_name(local, seed + 31)}"


def book_title(local: int, seed: int) -> str:
    """A book's title."""
    noun, h = _pick(nm.FILM_NOUN, mix(local, seed + 37))
    last, h = _pick(nm.LAST_NAMES, h)
    return f"The {noun} of {last}" + (f", Part {h % 9}" if h % 9 > 1 else "")


def language_name(local: int, seed: int) -> str:
    """A language's name (from a country's name)."""
    return country_name(local, seed).rstrip("aeiou") + "ish"


__all__ = [
    "MID_ALPHABET",
    "album_title",
    "book_title",
    "character_name",
    "city_name",
    "country_name",
    "film_title",
    "language_name",
    "mid",
    "mix",
    "person_name",
    "unit",
    "university_name",
]
