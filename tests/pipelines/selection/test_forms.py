"""Forms and named extensions: presets, explicit lists, what rows record, and clear errors."""

from __future__ import annotations

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.selection.forms import (
    EXTENDED,
    EXTENSIONS,
    OFFERED,
    Form,
    describe,
    form_from_settings,
    resolve_form,
)


def test_paper_is_the_default_and_switches_nothing_on() -> None:
    form = resolve_form("coq")
    assert form == Form("coq", ()) and form.name == "paper" and form.tag() == "paper"
    assert form.record() == {"form": "paper", "extensions": []}
    assert not any(form.on(e) for e in EXTENSIONS)


def test_extended_switches_on_its_preset_in_order() -> None:
    form = resolve_form("fc", "extended")
    assert form.extensions == EXTENDED["fc"] == tuple(e for e in OFFERED["fc"] if e != "path_constraints")
    assert EXTENDED["keqing"] == OFFERED["keqing"]  # Keqing's preset is every extension it offers
    for system, preset in EXTENDED.items():  # each preset: extensions the system offers, in their order
        assert preset and preset == tuple(e for e in OFFERED[system] if e in preset)
    assert form.name == "extended" and form.tag() == "extended"
    assert form.on("fill_composition") and not form.on("constrained_decoding")


def test_an_explicit_list_decides_and_a_partial_list_is_spelled_out() -> None:
    form = resolve_form("coq", None, ["answer_type", "path_fallback"])
    assert form.extensions == ("path_fallback", "answer_type")  # OFFERED's order, not the list's
    assert form.name == "extended" and form.tag() == "paper+path_fallback+answer_type"
    assert resolve_form("coq", None, []).name == "paper"
    assert resolve_form("coq", "paper", ["path_fallback"]).tag() == "paper+path_fallback"  # the list decides
    assert form_from_settings("fc", {"extensions": ["path_fallback"]}).tag() == "paper+path_fallback"
    assert form_from_settings("fc", {"form": "extended"}) == resolve_form("fc", "extended")
    assert form_from_settings("fc", {}) == resolve_form("fc", "paper")


def test_with_extension_keeps_the_order_and_is_idempotent() -> None:
    form = resolve_form("coq", None, ["answer_type"]).with_extension("constrained_decoding")
    assert form.extensions == ("constrained_decoding", "answer_type")
    assert form.with_extension("answer_type") is form


@pytest.mark.parametrize(
    ("system", "form", "extensions", "message"),
    [
        ("cog", "paper", None, "system must be one of coq, fc, keqing, tfs; got 'cog'"),
        ("coq", "papr", None, "form must be one of paper, extended"),
        ("coq", None, ["path_falback"], "unknown extensions ['path_falback']"),
        ("coq", None, ["fill_composition"], "coq does not offer the extensions ['fill_composition']"),
        (
            "keqing",
            None,
            ["fill_composition"],
            "keqing does not offer the extensions ['fill_composition'] (it offers: constrained_decoding, path",
        ),
        ("coq", "extended", [], "form: extended needs at least one extension"),
    ],
)
def test_bad_settings_are_typed_errors_naming_what_was_wrong(system, form, extensions, message) -> None:
    with pytest.raises(UserInputError) as err:
        resolve_form(system, form, extensions)
    assert message in str(err.value)


def test_on_rejects_a_name_that_is_no_extension() -> None:
    with pytest.raises(KeyError):
        resolve_form("coq").on("beam_search")


def test_describe_lists_every_extension_with_its_systems() -> None:
    table = describe().splitlines()
    assert len(table) == len(EXTENSIONS)
    assert any(line.startswith("fill_composition") and " fc " in line for line in table)
    assert any(line.startswith("path_fallback") and "coq,fc" in line for line in table)
