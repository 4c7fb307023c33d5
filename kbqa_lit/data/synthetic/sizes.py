"""How big each size of the synthetic world is: entity counts and question quotas."""

from __future__ import annotations

from dataclasses import dataclass

from kbqa_lit.errors import check_choice


@dataclass(frozen=True)
class SizeSpec:
    """Entity counts and per-split question targets of one world size.

    Attributes:
        countries: Number of countries.
        cities_per_country: Cities in each country.
        people: Number of people.
        films: Number of films.
        albums: Number of albums.
        teams: Number of sports teams.
        universities: Number of universities.
        train: Target number of train questions.
        dev: Target number of dev questions (i.i.d.).
        test_iid: Target number of i.i.d. test questions.
        test_compositional: Target number of compositional test questions.
        test_zero_shot: Target number of zero-shot test questions.
    """

    countries: int
    cities_per_country: int
    people: int
    films: int
    albums: int
    teams: int
    universities: int
    train: int
    dev: int
    test_iid: int
    test_compositional: int
    test_zero_shot: int

    @property
    def iid_total(self) -> int:
        """Questions drawn from the i.i.d. templates (train + dev + i.i.d. test)."""
        return self.train + self.dev + self.test_iid


SIZES: dict[str, SizeSpec] = {
    "small": SizeSpec(8, 5, 320, 90, 60, 12, 10, 400, 150, 100, 30, 20),
    "medium": SizeSpec(14, 10, 1280, 360, 240, 48, 40, 1600, 600, 400, 120, 80),
    "large": SizeSpec(32, 16, 5120, 1440, 960, 192, 160, 6400, 2400, 1600, 480, 320),
}


def size_spec(size: str) -> SizeSpec:
    """Return the spec of ``size`` (``small``, ``medium`` or ``large``).

    Raises:
        UserInputError: For an unknown size.
    """
    return SIZES[check_choice("synthetic world size", size, SIZES)]
