"""A ``kbqa test`` run is joined to the fit run it evaluated (checkpoint lineage, else the same config)."""

from __future__ import annotations

from pathlib import Path

from kbqa_lit.tracking.discover import find_runs
from kbqa_lit.tracking.lineage import checkpoint_dirs, join_runs, run_cwd, run_stage
from kbqa_lit.tracking.runs import MetricPoint, RunRecord, logged_stage


def _by_path(root: Path) -> dict[str, RunRecord]:
    return {r.path.relative_to(root).as_posix(): r for r in find_runs([root])}


def test_stage_and_hparams_of_csv_runs(experiments_root: Path) -> None:
    runs = _by_path(experiments_root)
    fit, test = runs["exp/logs/version_0"], runs["exp/logs/version_1"]
    assert (fit.stage, test.stage, runs["exp2/logs/version_2"].stage) == ("fit", "test", "validate")
    assert fit.hparams == {"alpha": 0.2, "learning_rate": 0.003, "batch_size": 32, "backbone": "t5"}
    assert test.params["ckpt_path"] == "exp/checkpoints/last.ckpt"  # the resolved config's CLI paths stay
    assert run_cwd(fit) == experiments_root and run_cwd(runs["copy/exp/logs/version_0"]) == experiments_root / "copy"
    assert checkpoint_dirs(fit) == ["exp/checkpoints"]
    assert checkpoint_dirs(runs["exp2/logs/version_0"]) == [str(runs["exp2/logs/version_0"].path / "checkpoints")]


def test_fit_and_test_runs_are_joined(experiments_root: Path) -> None:
    runs = find_runs([experiments_root])
    joined = {
        e.main.path.relative_to(experiments_root).as_posix(): [
            (t.path.relative_to(experiments_root).as_posix(), e.joined_by[t.name]) for t in e.tests
        ]
        for e in join_runs(runs)
    }
    assert joined == {
        "copy/exp/logs/version_0": [],  # started later, in another folder: not the test's parent
        "exp/logs/version_0": [("exp/logs/version_1", "checkpoint")],
        "exp2/logs/version_0": [("exp2/logs/version_1", "checkpoint"), ("exp2/logs/version_2", "config")],
        "lonely/logs/version_0": [],
    }


def test_stage_without_logged_stage() -> None:
    def run(*metrics: str) -> RunRecord:
        return RunRecord("r", "csv", Path("r"), history={m: [MetricPoint(0, 0, 1.0)] for m in metrics})

    assert run_stage(run("train/loss", "val/f1")) == "fit"
    assert run_stage(run("test/f1")) == "test" and run_stage(run("val/f1")) == "validate"
    assert logged_stage({"stage": "TrainerFn.TESTING"}) == "test" and logged_stage({"stage": "fit"}) == "fit"
    assert logged_stage({}) is None
