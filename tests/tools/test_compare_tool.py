"""``kbqa compare`` on real run directories: Lightning CSVLogger runs and a W&B offline run, made in tmp."""

from __future__ import annotations

import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from lightning.pytorch.loggers import CSVLogger

from kbqa_lit.cli import main
from kbqa_lit.errors import UserInputError
from kbqa_lit.tracking.charts import Series, bar_chart, line_chart
from kbqa_lit.tracking.comparison import differing_params, resolve_param
from kbqa_lit.tracking.csv_runs import read_csv_run
from kbqa_lit.tracking.runs import RunRecord, flatten, run_params
from kbqa_lit.tracking.wandb_runs import records_to_run

METRICS = ("val/f1", "val/hit1", "val/hit1_any", "val/em", "val/executable")
CSV_ALPHAS = (0.2, 0.6, 1.0)
WANDB_ALPHA = 0.4
STEPS_PER_EPOCH = 5
EPOCHS = 3


def val_metrics(alpha: float, epoch: int) -> dict[str, float]:
    """Made-up but distinct validation metrics of the run with ``alpha`` after ``epoch``."""
    f1 = round(0.3 + 0.1 * epoch + 0.2 * alpha - 0.15 * alpha * alpha, 6)
    return {
        "val/f1": f1,
        "val/hit1": round(f1 - 0.05, 6),
        "val/hit1_any": round(f1 + 0.05, 6),
        "val/em": round(f1 / 2, 6),
        "val/executable": round(0.5 + 0.1 * epoch, 6),
    }


def resolved_config(alpha: float, root: str) -> dict:
    """A resolved LightningCLI config in the shape the kbqa CLI saves (only the parts that matter here)."""
    return {
        "seed_everything": 0,
        "model": {
            "class_path": "kbqa_lit.modules.multitask_generator.MultitaskGenerator",
            "init_args": {"alpha": alpha, "learning_rate": 0.003},
        },
        "trainer": {
            "max_epochs": EPOCHS,
            "default_root_dir": root,
            "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": root}},
            "callbacks": [
                {"class_path": "kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval", "init_args": {"num_beams": 5}},
                {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint", "init_args": {"dirpath": root + "/ckpt"}},
            ],
        },
    }


def write_csv_run(save_dir: Path, alpha: float) -> Path:
    logger = CSVLogger(save_dir=str(save_dir), name=f"alpha{alpha}")
    logger.log_hyperparams({"alpha": alpha, "learning_rate": 0.003})
    config = resolved_config(alpha, str(save_dir / f"alpha{alpha}"))
    logger.log_hyperparams({"config_yaml": yaml.safe_dump(config), "stage": "fit"})
    step = 0
    for epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            logger.log_metrics({"train/loss": 5.0 / (step + 1), "epoch": epoch}, step=step)
            step += 1
        logger.log_metrics({**val_metrics(alpha, epoch), "epoch": epoch}, step=step - 1)
    logger.save()
    logger.finalize("success")
    Path(logger.log_dir, "config.yaml").write_text(yaml.safe_dump(config))
    return Path(logger.log_dir)


def write_wandb_run(root: Path, alpha: float) -> Path:
    wandb = pytest.importorskip("wandb", reason="the wandb extra is not installed (pip install kbqa_lit[wandb])")

    config = resolved_config(alpha, str(root))
    run = wandb.init(
        mode="offline",
        dir=str(root),
        project="kbqa_lit",
        name=f"alpha-{alpha}",
        config={"model.init_args.alpha": alpha, "config_yaml": yaml.safe_dump(config), "alpha": alpha},
    )
    run.define_metric("trainer/global_step")
    run.define_metric("*", step_metric="trainer/global_step", step_sync=True)
    step = 0
    for epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            run.log({"train/loss": 4.0 / (step + 1), "epoch": epoch, "trainer/global_step": step})
            step += 1
        run.log({**val_metrics(alpha, epoch), "epoch": epoch, "trainer/global_step": step - 1})
    run.finish()
    (run_dir,) = (root / "wandb").glob("offline-run-*")
    return run_dir


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``csv/alpha*/version_0`` (CSVLogger) and ``wandb/wandb/offline-run-*`` (W&B offline) under one folder."""
    root = tmp_path_factory.mktemp("runs")
    for alpha in CSV_ALPHAS:
        write_csv_run(root / "csv", alpha)
    wandb_root = root / "wandb"
    wandb_root.mkdir()
    env = {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(wandb_root),
        "WANDB_CACHE_DIR": str(root / ".wandb_cache"),
        "WANDB_CONFIG_DIR": str(root / ".wandb_config"),
        "WANDB_DATA_DIR": str(root / ".wandb_data"),
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        write_wandb_run(wandb_root, WANDB_ALPHA)
    return root


def run_compare(capsys, *args: str) -> dict:
    assert main(["compare", *args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def report(runs_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:  # capsys is per test; this fixture is per module
        mp.setattr(sys, "stdout", buf)
        assert main(["compare", str(runs_dir), "--out", str(out), "--json"]) == 0
    return json.loads(buf.getvalue()), out.read_text(encoding="utf-8")


def test_every_run_is_found_once(report):
    summary, _ = report
    names = [r["name"] for r in summary["runs"]]
    kinds = sorted(r["kind"] for r in summary["runs"])
    assert kinds == ["csv", "csv", "csv", "wandb"], names  # W&B's latest-run link is not read twice
    assert any(n.startswith(f"alpha-{WANDB_ALPHA}") for n in names)
    wandb_run = next(r for r in summary["runs"] if r["kind"] == "wandb")
    assert wandb_run["state"] == "finished" and wandb_run["last_step"] == EPOCHS * STEPS_PER_EPOCH - 1


def test_final_metrics_are_the_last_logged_values(report):
    summary, _ = report
    assert summary["metrics"] == list(METRICS)
    for row in summary["runs"]:
        alpha = row["params"]["model.init_args.alpha"]
        expected = val_metrics(alpha, EPOCHS - 1)
        for metric in METRICS:
            assert row["final"][metric] == pytest.approx(expected[metric]), (row["name"], metric)
        assert row["best"]["val/f1"] == pytest.approx(expected["val/f1"])  # f1 grows every epoch


def test_only_meaningful_differences_are_shown(report):
    summary, _ = report
    assert summary["params"] == ["model.init_args.alpha"]  # not save_dir, dirpath, default_root_dir, logger


def test_alpha_sweep_table(report):
    summary, _ = report
    (sweep,) = summary["sweeps"]
    assert sweep["param"] == "model.init_args.alpha" and sweep["numeric"]
    assert [r["value"] for r in sweep["rows"]] == sorted([*CSV_ALPHAS, WANDB_ALPHA])
    for row in sweep["rows"]:
        assert row["n"] == 1
        assert row["mean"]["val/f1"] == pytest.approx(val_metrics(row["value"], EPOCHS - 1)["val/f1"])


def test_html_has_a_plot_per_metric_and_the_table_values(report):
    summary, html = report
    names = [row["name"] for row in summary["runs"]]
    for metric in METRICS:
        assert f'data-metric="{metric}"' in html
        (svg,) = re.findall(rf'<svg [^>]*data-metric="{re.escape(metric)}".*?</svg>', html, re.S)
        root = ET.fromstring(svg)  # well-formed
        legend = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
        assert set(names) <= legend, (names, legend)  # one line per run, named in the legend
    (sweep_svg,) = re.findall(r'<svg [^>]*data-param="model.init_args.alpha".*?</svg>', html, re.S)
    ET.fromstring(sweep_svg)
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))  # the charts' ids do not clash on one page
    for row in summary["runs"]:
        value = row["final"]["val/f1"]
        assert f'data-metric="val/f1" data-value="{value!r}"' in html
        assert f"{value:.4f}" in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")


def test_param_by_short_name_and_epoch_axis(runs_dir, tmp_path, capsys):
    out = tmp_path / "r.html"
    summary = run_compare(
        capsys, str(runs_dir / "csv"), "--param", "alpha", "--x", "epoch", "--metrics", "val/f1", "--out", str(out)
    )
    assert summary["params"] == ["model.init_args.alpha"] and summary["metrics"] == ["val/f1"]
    assert len(summary["runs"]) == 3 and "x: epoch" in out.read_text()


def test_a_directory_without_runs_is_an_error(tmp_path, capsys):
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    assert main(["compare", str(empty), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "no run found" in err and str(empty) in err and "metrics.csv" in err
    assert main(["compare", str(tmp_path / "missing")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_unknown_metric_or_param_is_an_error(runs_dir, tmp_path, capsys):
    out = str(tmp_path / "r.html")
    assert main(["compare", str(runs_dir / "csv"), "--metrics", "val/nope", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "val/nope" in err and "val/f1" in err
    assert main(["compare", str(runs_dir / "csv"), "--param", "beta", "--out", out]) == 2
    assert "beta" in capsys.readouterr().err


# ---------------------------------------------------------------- units (no wandb process)


def test_csv_run_reads_sparse_rows(tmp_path):
    run = tmp_path / "logs" / "version_3"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("epoch,step,train/loss,val/f1\n0,0,2.5,\n0,1,2.0,\n0,1,,0.25\n1,3,nan,0.5\n")
    (run / "hparams.yaml").write_text("alpha: 0.2\nobj: !!python/object:foo.Bar {x: 1}\n")
    rec = read_csv_run(run)
    assert rec.name == "logs/version_3" and rec.params == {"alpha": 0.2, "obj.x": 1}
    assert [(p.step, p.value) for p in rec.history["val/f1"]] == [(1, 0.25), (3, 0.5)]
    assert rec.final("train/loss") == 2.0 and rec.best("train/loss", "min") == 2.0


def test_wandb_records_to_run():
    records = [
        {
            "type": "run",
            "run": {"run_id": "ab12", "display_name": "x", "config": {"update": {"_wandb": {}, "lr": 0.1}}},
        },
        {"type": "config", "config": {"update": {"model.init_args.alpha": 0.6}}},
        {"type": "history", "history": {"item": {"_step": 0, "trainer/global_step": 7, "epoch": 0, "val/f1": 0.5}}},
        {
            "type": "history",
            "history": {"item": {"_step": 1, "val/predictions._type": "table-file", "val/predictions.nrows": 50}},
        },
        {
            "type": "summary",
            "summary": {"update": {"val/f1": 0.7, "_runtime": 3, "val/predictions._type": "table-file"}},
        },
        {"type": "summary", "summary": {"update": {"val/f1": 0.75, "val/predictions.nrows": 50}}},
        {"type": "exit", "exit": {"exit_code": 1}},
    ]
    rec = records_to_run(records, Path("offline-run-1-ab12"))
    assert rec.name == "x (ab12)" and rec.state == "crashed"
    assert rec.params == {"lr": 0.1, "model.init_args.alpha": 0.6}
    assert rec.history == {"val/f1": [rec.history["val/f1"][0]]} and rec.history["val/f1"][0].step == 7
    assert rec.summary == {"val/f1": 0.75}  # the summary wins; media fields are not metrics


def test_flatten_and_run_params():
    config = {"model": {"init_args": {"alpha": 0.2, "sizes": [1, 2]}}, "trainer": {"callbacks": [{"a": 1}]}}
    assert flatten(config) == {
        "model.init_args.alpha": 0.2,
        "model.init_args.sizes": [1, 2],
        "trainer.callbacks[0].a": 1,
    }
    params = run_params({"alpha": 0.2, "config_yaml": yaml.safe_dump(config), "trainer.max_epochs": 3})
    assert "alpha" not in params and params["model.init_args.alpha"] == 0.2 and params["trainer.max_epochs"] == 3


def test_differing_params_merges_sweep_names_and_resolves_short_names():
    def rec(beams: int, seed: int) -> RunRecord:
        params = {
            "trainer.callbacks.init_args.num_beams": beams,
            "trainer.callbacks[1].init_args.num_beams": beams,
            "trainer.callbacks[0].init_args.dirpath": f"/out/{beams}",
            "seed_everything": seed,
            "only_here": 1 if beams == 5 else None,
        }
        return RunRecord(name=str(beams), kind="csv", path=Path(str(beams)), params=params)

    runs = [rec(5, 0), rec(10, 0)]
    assert differing_params(runs) == ["only_here", "trainer.callbacks.init_args.num_beams"]
    assert resolve_param(runs, "num_beams") == "trainer.callbacks.init_args.num_beams"
    with pytest.raises(UserInputError, match="no run has"):
        resolve_param(runs, "beta")


def _texts(svg: str) -> set[str]:
    return {"".join(t.itertext()) for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}


def test_matplotlib_charts_are_inline_svg():
    svg = line_chart(
        [Series("a<b $x$", [(1e-4, 0.1), (1e-3, 0.3)]), Series("c", [(1e-2, 0.2)])],
        title="t & u",
        x_label="lr",
        y_label="f1",
        x_log=True,
        attrs={"data-metric": "val/f1"},
    )
    root = ET.fromstring(svg)  # well-formed, text kept as text
    assert root.get("data-metric") == "val/f1" and root.get("class") == "chart"
    assert root.find("{http://www.w3.org/2000/svg}title").text == "t & u"
    assert {"a<b $x$", "c", "t & u", "lr", "f1"} <= _texts(svg)  # $ is not mathtext
    assert "<?xml" not in svg and "metadata" not in svg and "xlink" not in svg
    assert "no data" in _texts(line_chart([], title="none", x_label="x", y_label="y"))
    bars = bar_chart(
        [Series("f1", [(0.0, 0.5), (1.0, 0.25)])], categories=["1", "2"], title="per hops", x_label="hops", y_label="s"
    )
    assert {"1", "2", "f1", "hops"} <= _texts(bars)
    first, second = (set(re.findall(r'\bid="([^"]+)"', chart)) for chart in (svg, bars))
    assert first and second and not first & second  # unique per chart


def test_cli_lists_compare():
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--help"])
    assert exc.value.code == 0
