"""``kbqa compare`` end to end on CSV runs: joined fit/test runs, hparams, per-hop groups, PNGs, and the
HTML report rendered by headless Chromium (skipped, with the reason, where no Chromium is installed)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from tests.tracking.conftest import expected_test_f1
from tests.tracking.png_checks import colour_stats, png_size

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome-headless-shell")
WINDOW = (1280, 1800)


@pytest.fixture(scope="module")
def compared(experiments_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    """``kbqa compare`` on the experiments with --png and per-hop groups: (summary, html, output folder)."""
    out = tmp_path_factory.mktemp("compare")
    args = [
        "compare",
        str(experiments_root / "exp"),
        str(experiments_root / "exp2"),
        "--out",
        str(out / "report.html"),
        "--x",
        "epoch",
        "--png",
        str(out / "png"),
        "--group-by",
        "hops",
        "--predictions",
        str(experiments_root / "exp" / "logs" / "version_1" / "test_predictions_epoch0.jsonl"),
        "--gold",
        str(experiments_root / "data" / "metaqa" / "test.jsonl"),
        "--json",
    ]
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stdout", buf)
        assert main(args) == 0
    return json.loads(buf.getvalue()), (out / "report.html").read_text(encoding="utf-8"), out


def test_summary_joins_test_runs_to_their_fit_runs(compared) -> None:
    summary, _, _ = compared
    experiments = {e["name"]: e for e in summary["experiments"]}
    assert len(experiments) == 2 and all(e["stage"] == "fit" for e in experiments.values())
    exp = next(e for e in experiments.values() if e["final"]["val/f1"] is not None and len(e["tests"]) == 1)
    (test,) = exp["tests"]
    assert test["joined_by"] == "checkpoint" and test["ckpt_path"] == "exp/checkpoints/last.ckpt"
    assert exp["final"]["test/f1"] == pytest.approx(expected_test_f1(0.2))  # the test run's value beside the fit run's
    stages = sorted(r["stage"] for r in summary["runs"])
    assert stages == ["fit", "fit", "test", "test", "validate"]
    assert all(r["hparams"]["batch_size"] == 32 for r in summary["runs"])


def test_html_shows_joined_runs_hparams_and_groups(compared) -> None:
    summary, html, _ = compared
    assert html.count("<tr class='joined'>") == 3  # the test and validate runs sit under their fit runs
    assert "(by checkpoint)" in html and "(by config)" in html
    assert html.count("data-experiment=") == 2
    assert re.search(r"data-hparam='alpha'>0\.2<", html) and re.search(r"data-hparam='alpha'>0\.6<", html)
    assert "<tr class='differs'><td class='name'><code>alpha</code>" in html
    by_hop = summary["groups"]["sources"]["test_predictions_epoch0.jsonl"]
    assert {k: (v["n"], v["f1"]) for k, v in by_hop.items()} == {"1": (4, 1.0), "2": (4, 0.75), "3": (4, 0.5)}
    assert "data-group='hops'" in html and 'data-group="hops"' in html  # table and bar chart


def test_png_files_are_written(compared) -> None:
    summary, _, out = compared
    assert summary["png"] == {
        "learning_curves": str(out / "png" / "learning_curves.png"),
        "groups": str(out / "png" / "groups.png"),
        "comparison": None,  # no --rows
        "skipped": {},
    }
    for name in ("learning_curves.png", "groups.png"):
        png_size(out / "png" / name)
        assert colour_stats(out / "png" / name)[0] >= 4


def test_groups_default_to_the_test_runs_own_predictions(experiments_root: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    assert main(["compare", str(experiments_root / "exp"), "--out", str(out), "--group-by", "hops", "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    test_run = experiments_root / "exp" / "logs" / "version_1"
    assert groups["files"] == {
        "logs/version_1": {
            "predictions": str(test_run / "test_predictions_epoch0.jsonl"),
            "gold": str(experiments_root / "data" / "metaqa" / "test.jsonl"),  # its test_file, from where it ran
        }
    }
    assert groups["sources"]["logs/version_1"]["3"]["f1"] == 0.5


def test_group_options_need_each_other(experiments_root: Path, tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "r.html")
    pred = str(experiments_root / "exp" / "logs" / "version_1" / "test_predictions_epoch0.jsonl")
    assert (
        main(["compare", str(experiments_root / "exp"), "--out", out, "--group-by", "hops", "--predictions", pred]) == 2
    )
    assert "--gold" in capsys.readouterr().err
    assert main(["compare", str(experiments_root / "exp"), "--out", out, "--gold", pred]) == 2
    assert "--group-by" in capsys.readouterr().err
    assert main(["compare", str(experiments_root / "lonely"), "--out", out, "--group-by", "hops"]) == 2
    assert "no kbqa test run among the runs left a test_predictions_epoch" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def _chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def test_report_renders_in_headless_chromium(compared, tmp_path: Path) -> None:
    binary = _chromium()
    if binary is None:
        pytest.skip(f"no Chromium binary on PATH ({', '.join(CHROMIUM_NAMES)}); apt-get install chromium")
    _, _, out = compared
    shot = tmp_path / "report.png"
    command = [
        binary,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        (out / "report.html").as_uri(),
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert shot.is_file(), f"{binary} wrote no screenshot (exit {done.returncode}): {done.stderr[-800:]}"
    assert png_size(shot) == WINDOW
    colours, non_white = colour_stats(shot)
    assert colours >= 8 and non_white > 0.04, (colours, non_white)  # text, tables, coloured chart lines and bars


def test_png_with_nothing_to_draw_is_an_error_before_anything_is_written(
    experiments_root: Path, tmp_path: Path, capsys
):
    out = tmp_path / "r.html"
    assert main(["compare", str(experiments_root / "lonely"), "--out", str(out), "--png", str(tmp_path / "png")]) == 2
    err = capsys.readouterr().err
    assert "nothing to draw" in err and "no run logged val/f1, val/hit1 per epoch" in err and "--rows" in err
    assert list(tmp_path.iterdir()) == []


def test_png_of_test_only_runs_skips_the_learning_curves(experiments_root: Path, tmp_path: Path, capsys):
    out, png = tmp_path / "r.html", tmp_path / "png"
    args = [str(experiments_root / "lonely"), "--rows", "alpha", "--out", str(out), "--png", str(png), "--json"]
    assert main(["compare", *args]) == 0
    summary = json.loads(capsys.readouterr().out)["png"]
    assert summary["learning_curves"] is None and summary["comparison"] == str(png / "comparison.png")
    assert "no run logged val/f1, val/hit1 per epoch" in summary["skipped"]["learning_curves.png"]
    assert [p.name for p in png.iterdir()] == ["comparison.png"]
