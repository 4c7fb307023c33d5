"""Module paths from before the per-system layout still import, with a DeprecationWarning naming the new home."""

from __future__ import annotations

import importlib
import sys

import pytest

from kbqa_lit._deprecated import MOVED_MODULES


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_old_path_is_the_new_module_and_warns(old: str, new: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__.name == new  # the module keeps its own spec (importlib.resources reads it)


def test_old_class_path_gives_the_same_class(monkeypatch: pytest.MonkeyPatch) -> None:
    from jsonargparse import ArgumentParser

    from kbqa_lit.modules.coq.multitask_generator import MultitaskGenerator

    monkeypatch.delitem(sys.modules, "kbqa_lit.modules.multitask_generator", raising=False)
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--model", type=type[MultitaskGenerator])  # how LightningCLI resolves a class_path
    with pytest.warns(DeprecationWarning, match="kbqa_lit.modules.coq.multitask_generator"):
        cfg = parser.parse_args(["--model=kbqa_lit.modules.multitask_generator.MultitaskGenerator"])
    assert cfg.model is MultitaskGenerator


def test_new_paths_do_not_warn() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for new in MOVED_MODULES.values():
            importlib.import_module(new)
