"""The Freebase schema loader: real files, glued lines, symmetric reverses, malformed lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.errors import DataFormatError
from kbqa_lit.kb.lf.ontology import Ontology
from tests.helpers.shared_data import SHARED_DATA

ONTOLOGY_DIR = SHARED_DATA / "ontology"


@pytest.fixture(scope="module")
def real() -> Ontology:
    if not (ONTOLOGY_DIR / "fb_roles").exists():
        pytest.skip(f"real ontology files not found: {ONTOLOGY_DIR} (tests read ../shared/data)")
    return Ontology.load(ONTOLOGY_DIR)


def test_real_files_load(real):
    assert len(real.relations) > 19000
    assert real.domain("people.person.nationality") == "people.person"
    assert real.range("people.person.nationality") == "location.country"
    assert "people.person.nationality" in real.relations_of_class("people.person")
    assert real.domain("no.such.relation") is None
    assert real.range("no.such.relation") is None
    assert real.relations_of_class("no.such_class") == ()


def test_real_reverse_is_symmetric(real):
    assert real.reverse("film.film.directed_by") == "film.director.film"
    assert real.reverse("film.director.film") == "film.film.directed_by"
    assert all(real.reverse(rev) == rel for rel, rev in real.reverses.items())
    assert real.reverse("people.person.nationality") is None


def test_real_superclasses(real):
    supers = real.superclasses("film.film")
    assert "common.topic" in supers
    assert "film.film" not in supers
    assert real.superclasses("no.such_class") == ()


def test_real_glued_lines_are_split(real):
    # fb_roles: "... bicycle_wheel.holes type.intbase.litcentral.financial_support_provider ..."
    assert real.range("base.cyclocross.bicycle_wheel.holes") == "type.int"
    assert real.domain("base.litcentral.financial_support_provider.financing_government_agency") == (
        "base.litcentral.financial_support_provider"
    )
    assert real.range("biology.breed_temperament.breeds") == "biology.animal_breed"
    assert real.domain("music.album.supporting_tours") == "music.album"
    # fb_types: "common.topicbase.digitalformatpolicies.significant_characteristics", ".government..."
    assert "common.topic" in real.superclasses("base.concepts.topic")
    assert "common.topic" in real.superclasses("base.digitalformatpolicies.significant_characteristics")
    assert real.superclasses("government.government_office_category") == ("common.topic",)
    assert "common.topicbase.digitalformatpolicies.significant_characteristics" not in real.parents


def _write(tmp_path: Path, roles: str, types: str = "", reverse: str = "") -> Path:
    (tmp_path / "fb_roles").write_text(roles, encoding="utf-8")
    (tmp_path / "fb_types").write_text(types, encoding="utf-8")
    (tmp_path / "reverse_properties").write_text(reverse, encoding="utf-8")
    return tmp_path


def test_small_files(tmp_path):
    onto = Ontology.load(
        _write(
            tmp_path,
            "a.x a.x.to_y b.y\nb.y b.y.to_x a.x\n\na.x a.x.to_y c.z\na.x a.x.size type.int\n",
            "a.x meta.subclassOf a.base .\na.base meta.subclassOf common.topic\n"
            "b.y meta.subclassOf common.topic\na.x meta.subclassOf common.topic\n",
            "a.x.to_y\tb.y.to_x\n",
        )
    )
    assert onto.range("a.x.to_y") == "b.y"  # the first line wins
    assert onto.relations_of_class("a.x") == ("a.x.to_y", "a.x.size")
    assert onto.reverse("b.y.to_x") == "a.x.to_y"
    assert onto.superclasses("a.x") == ("a.base", "common.topic")
    assert onto.superclasses("common.topic") == ()


def test_cycles_in_the_class_hierarchy_terminate(tmp_path):
    onto = Ontology.load(_write(tmp_path, "a.x a.x.r a.x\n", "a.x meta.subclassOf b.y\nb.y meta.subclassOf a.x\n"))
    assert onto.superclasses("a.x") == ("b.y",)


@pytest.mark.parametrize(
    ("file", "roles", "types", "reverse", "lineno", "reason"),
    [
        ("fb_roles", "a.x a.x.r b.y\na.x a.x.r\n", "", "", 2, "got 2 fields"),
        ("fb_roles", "a.x a.x.r b.y\nq.q q.q.r b.yzz.w zz.w.s c.c d.d\n", "", "", 2, "got 6 fields"),
        ("fb_roles", "a.x a.x.r b.yq.w zz.w.s c.c\n", "", "", 1, "got 5 fields"),  # no consistent split
        ("fb_roles", 'a.x "a.x.r" b.y\n', "", "", 1, "not a schema id"),
        ("fb_types", "a.x a.x.r b.y\n", "a.x subclass b.y\n", "", 1, "meta.subclassOf"),
        ("fb_types", "a.x a.x.r b.y\n", "a.x meta.subclassOf b.y extra\n", "", 1, "meta.subclassOf"),
        ("fb_types", "a.x a.x.r b.y\n", "a.x b.y meta.subclassOf meta.subclassOf\n", "", 1, "superclass"),
        ("fb_types", "a.x a.x.r b.y\n", "a.x meta.subclassOf b.y c.z meta.subclassOf\n", "", 1, "superclass"),
        (
            "fb_types",
            "a.x a.x.r b.y\n",
            "a.x meta.subclassOf b.yq.q meta.subclassOf c.c\n",
            "",
            1,
            "superclass",
        ),
        ("reverse_properties", "a.x a.x.r b.y\n", "", "a.x.r\n", 1, "got 1 fields"),
        ("reverse_properties", "a.x a.x.r b.y\n", "", "a.x.r\tb.y.r\tc\n", 1, "got 3 fields"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, file, roles, types, reverse, lineno, reason):
    with pytest.raises(DataFormatError, match=reason) as info:
        Ontology.load(_write(tmp_path, roles, types, reverse))
    assert info.value.path == str(tmp_path / file)
    assert info.value.where == lineno


def test_missing_file_is_a_data_format_error(tmp_path):
    (tmp_path / "fb_roles").write_text("a.x a.x.r b.y\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="not found") as info:
        Ontology.load(tmp_path)
    assert info.value.path == str(tmp_path / "fb_types")
