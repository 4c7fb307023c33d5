"""The shared errors: check_choice's one message, ChoiceError's two faces, find_kbqa_error's chain."""

from __future__ import annotations

from functools import partial

import pytest

from kbqa_lit.errors import (
    ChoiceError,
    DataFormatError,
    KBQAError,
    SExprError,
    UserInputError,
    check_choice,
    find_kbqa_error,
)


def test_check_choice_returns_the_value_when_it_is_a_choice() -> None:
    assert check_choice("linking", "gold", ("predicted", "dataset-given", "gold")) == "gold"
    assert check_choice("max_hops", 2, (1, 2)) == 2
    assert check_choice("split", "val", {"train": 1, "val": 2}) == "val"  # a mapping: its keys
    assert check_choice("mode", "bag", (c for c in ("trie", "bag"))) == "bag"  # any iterable, read once


def test_check_choice_names_the_setting_the_choices_and_the_value() -> None:
    with pytest.raises(ChoiceError) as err:
        check_choice("linking", "gld", ("predicted", "dataset-given", "gold"))
    assert str(err.value) == "linking must be one of predicted, dataset-given, gold; got 'gld'"
    with pytest.raises(ChoiceError, match=r"^max_hops must be one of 1, 2; got 3$"):
        check_choice("max_hops", 3, (1, 2))


def test_check_choice_prefixes_where_and_appends_the_hint() -> None:
    with pytest.raises(ChoiceError) as err:
        check_choice("partners", "all", ("last", "any"), where="fc.yaml", hint="see PairRules")
    assert str(err.value) == "fc.yaml: partners must be one of last, any; got 'all' (see PairRules)"


def test_choice_error_is_a_user_input_error_and_a_value_error() -> None:
    with pytest.raises(UserInputError):
        check_choice("form", "papr", ("paper", "extended"))
    with pytest.raises(ValueError):
        check_choice("form", "papr", ("paper", "extended"))
    assert issubclass(ChoiceError, KBQAError)


def test_check_choice_raises_the_callers_error() -> None:
    with pytest.raises(SExprError, match="ties rule must be one of first, all; got 'some'"):
        check_choice("ties rule", "some", ("first", "all"), error=SExprError)
    with pytest.raises(ValueError) as err:
        check_choice("side", "up", ("domain", "range"), error=ValueError)
    assert type(err.value) is ValueError
    with pytest.raises(DataFormatError) as data_err:
        check_choice("kind", "x", ("Entity", "Value"), error=partial(DataFormatError, "a.json", 3))
    assert str(data_err.value) == "a.json:3: kind must be one of Entity, Value; got 'x'"
    assert data_err.value.where == 3


def test_check_choice_compares_unhashable_values_without_failing() -> None:
    with pytest.raises(ChoiceError, match=r"got \['a'\]"):
        check_choice("mode", ["a"], {"a": 1})


def test_find_kbqa_error_follows_the_explicit_cause_only() -> None:
    inner = UserInputError("bad")
    try:
        try:
            raise inner
        except UserInputError as exc:
            raise ValueError("wrapped") from exc
    except ValueError as outer:
        assert find_kbqa_error(outer) is inner
    try:
        try:
            raise inner
        except UserInputError:
            raise ValueError("unrelated") from None
    except ValueError as outer:
        assert find_kbqa_error(outer) is None


def test_split_key_value_keeps_the_value_and_names_the_flag() -> None:
    from kbqa_lit.errors import split_key_value

    assert split_key_value(" form = a=b ", "--param") == ("form", " a=b ")  # the first "=" splits; the value as written
    assert split_key_value("k=", "--param") == ("k", "")
    for bad in ("novalue", "=x", " =x"):
        with pytest.raises(UserInputError, match=r"--param expects KEY=VALUE, got"):
            split_key_value(bad, "--param")
    with pytest.raises(ValueError, match="--set expects key=value"):
        split_key_value("x", "--set", error=ValueError, form="key=value")
