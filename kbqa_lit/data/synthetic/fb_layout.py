"""How many entities of each kind a Freebase-shaped KB of a given size holds, and their index ranges.

Named entities get consecutive indexes kind by kind (countries first, then genders, languages,
genres, cities, people, films, characters, albums, universities, books); CVT nodes are numbered
after them as they are written. An entity's index gives its mid (:func:`~kbqa_lit.data.synthetic.fb_names.mid`).
The counts are fractions of the named-entity total, calibrated so that a KB written for ``T``
triples has about ``T`` triples (within a few per cent).
"""

from __future__ import annotations

from dataclasses import dataclass

from kbqa_lit.data.synthetic import names as nm
from kbqa_lit.errors import UserInputError

#: Triples written per named entity on average (measured; sets the entity count of a size).
TRIPLES_PER_ENTITY = 10.5
MIN_TRIPLES = 1_000
MAX_TRIPLES = 100_000_000
GENDERS = ("Male", "Female")
#: Kinds in index order; a kind's count is ``fixed`` or ``share`` of the named total.
_SHARES = {
    "city": 0.05,
    "person": 0.46,
    "film": 0.10,
    "character": 0.12,
    "album": 0.10,
    "university": 0.02,
    "book": 0.12,
}


@dataclass(frozen=True)
class Layout:
    """Index ranges of the entity kinds of one KB.

    Attributes:
        counts: Entities per kind, in index order.
        starts: First index of each kind.
        named: Named entities in all (CVT indexes start here).
    """

    counts: dict[str, int]
    starts: dict[str, int]
    named: int

    def index(self, kind: str, local: int) -> int:
        """The global index of the ``local``-th entity of ``kind``."""
        return self.starts[kind] + local

    def kind_of(self, index: int) -> tuple[str, int]:
        """``(kind, local index)`` of a named entity's global index."""
        for kind, start in self.starts.items():
            if start <= index < start + self.counts[kind]:
                return kind, index - start
        raise ValueError(f"index {index} is not a named entity")


def layout_for(triples: int) -> Layout:
    """The layout of a KB of about ``triples`` triples.

    Raises:
        UserInputError: When ``triples`` is outside ``[1000, 10**8]``.
    """
    if not MIN_TRIPLES <= triples <= MAX_TRIPLES:
        raise UserInputError(f"--triples must be between {MIN_TRIPLES:.0e} and {MAX_TRIPLES:.0e}, got {triples}")
    total = max(200, int(triples / TRIPLES_PER_ENTITY))
    counts = {
        "country": min(250, max(20, total // 400)),
        "gender": len(GENDERS),
        "language": min(150, max(8, total // 600)),
        "film_genre": len(nm.FILM_GENRES),
        "music_genre": len(nm.MUSIC_GENRES),
    }
    for kind, share in _SHARES.items():
        counts[kind] = max(10, int(total * share))
    starts: dict[str, int] = {}
    at = 0
    for kind, n in counts.items():
        starts[kind] = at
        at += n
    return Layout(counts, starts, at)


__all__ = ["GENDERS", "Layout", "layout_for"]
