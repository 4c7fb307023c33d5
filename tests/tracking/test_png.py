"""learning_curves.png, groups.png and comparison.png: real PNG pictures, written atomically; a clear error
without matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.discover import find_runs
from kbqa_lit.tracking.lineage import join_runs
from kbqa_lit.tracking.png import comparison_png, groups_png, learning_curves_png, require_matplotlib
from kbqa_lit.tracking.rows import rows_table
from kbqa_lit.tracking.runs import RunRecord
from tests.tracking.png_checks import colour_stats, png_size

GROUPS = {
    "test_predictions_epoch0.jsonl": {
        "1": {"n": 4, "f1": 1.0, "hit1": 1.0},
        "2": {"n": 4, "f1": 0.75, "hit1": 0.7},
        "3": {"n": 4, "f1": 0.5, "hit1": 0.4},
    }
}


@pytest.fixture(autouse=True)
def _matplotlib() -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[plots]')")


def test_learning_curves_png(experiments_root: Path, tmp_path: Path) -> None:
    experiments = [e for e in join_runs(find_runs([experiments_root])) if e.main.history.get("val/f1")]
    out = learning_curves_png(experiments, ["val/f1", "val/hit1"], tmp_path / "png" / "learning_curves.png")
    width, height = png_size(out)
    assert width >= 800 and height >= 350
    colours, non_white = colour_stats(out)
    assert colours >= 6 and non_white > 0.03, (colours, non_white)  # lines of several runs, axes, text
    assert [p.name for p in out.parent.iterdir()] == ["learning_curves.png"]  # no temporary file left


def test_groups_png(tmp_path: Path) -> None:
    out = groups_png(GROUPS, "hops", ("f1", "hit1"), tmp_path / "groups.png")
    width, height = png_size(out)
    assert width >= 500 and height >= 350
    colours, non_white = colour_stats(out)
    assert colours >= 4 and non_white > 0.05, (colours, non_white)


def test_comparison_png(tmp_path: Path) -> None:
    runs = [
        RunRecord(
            name=f"{system}-{form}",
            kind="wandb",
            path=tmp_path / f"{system}-{form}",
            params={"system": system, "form": form},
            summary={"test/f1": f1, "test/iid/f1": f1 + 0.1, "test/zero-shot/f1": f1 - 0.1},
        )
        for system, form, f1 in (("coq", "paper", 0.4), ("coq", "extended", 0.6), ("tfs", "paper", 0.5))
    ]
    table = rows_table(runs, ["system", "form"], ["test/f1"])
    out = comparison_png(table, tmp_path / "png" / "comparison.png")
    width, height = png_size(out)
    assert width >= 800 and height >= 350
    colours, non_white = colour_stats(out)
    assert colours >= 5 and non_white > 0.05, (colours, non_white)  # three rows' bars, axes, text
    assert [p.name for p in out.parent.iterdir()] == ["comparison.png"]
    no_f1 = [RunRecord(name="x", kind="csv", path=tmp_path / "x", params={"system": "x"}, summary={"test/hit1": 0.3})]
    with pytest.raises(UserInputError, match="no row logged test/f1"):
        comparison_png(rows_table(no_f1, ["system"], ["test/hit1"]), tmp_path / "c.png")
    assert not (tmp_path / "c.png").exists()


def test_nothing_to_draw_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no run logged val/f1"):
        learning_curves_png([], ["val/f1"], tmp_path / "l.png")
    with pytest.raises(UserInputError, match="no question has a 'hops' group"):
        groups_png({}, "hops", ("f1",), tmp_path / "g.png")
    assert list(tmp_path.iterdir()) == []


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    with pytest.raises(UserInputError, match=r"\.\[plots\]"):
        require_matplotlib()
