"""W&B sweeps in configs/sweeps/: every point of every sweep is a command line LightningCLI accepts.

Sweeps cannot run offline, so the parameter space is expanded here (tests/cli/sweep_space.py), each
point turned into the agent's command with wandb's own ``${args}`` expansion, and parsed in-process
with ``--print_config``; the printed config must hold the swept value at the parameter's path.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import yaml

from kbqa_lit.lightning_cli import build_cli
from tests.helpers.sweep_space import agent_command, cli_args, expand, lookup, sample_value

ROOT = Path(__file__).resolve().parents[2]
SWEEPS = ROOT / "configs" / "sweeps"
CLI_ROOTS = {"seed_everything", "model", "data", "trainer", "optimizer", "lr_scheduler", "ckpt_path"}
MAX_POINTS = 8
EGE = "kbqa_lit.callbacks.execution_eval.ExecutionGuidedEval"
CHECKPOINT = "lightning.pytorch.callbacks.ModelCheckpoint"


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


SWEEP_FILES = sorted(p for p in SWEEPS.glob("*.yaml") if "command" in _load(p))
FRAGMENTS = sorted(p for p in SWEEPS.glob("*.yaml") if "command" not in _load(p))


def _ids(path: Path) -> str:
    return path.stem


def _points(sweep: dict) -> list[dict]:
    points = expand(sweep, n=MAX_POINTS, seed=0)
    if len(points) > MAX_POINTS:  # a big grid: an even spread that keeps the first and the last point
        step = (len(points) - 1) / (MAX_POINTS - 1)
        points = [points[round(i * step)] for i in range(MAX_POINTS)]
    return points


def _printed_config(stdout: str) -> dict:
    """The YAML ``--print_config`` printed; a library may log to stdout first (DeepSpeed's first import does)."""
    start = stdout.find("# lightning.pytorch==")
    return yaml.safe_load(stdout[start:] if start >= 0 else stdout)


def _chdir_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents run from the repository root: the sweep commands use relative config paths."""
    monkeypatch.chdir(ROOT)


def test_the_sweeps_are_there():
    assert {p.stem for p in SWEEP_FILES} >= {
        "coq_alpha",
        "coq_lr_beams",
        "coq_topk_patterns",
        "tfs_lora_r",
        "coq_extensions",
    }


@pytest.mark.parametrize("path", SWEEP_FILES, ids=_ids)
def test_sweep_file_format(path: Path):
    sweep = _load(path)
    assert sweep["method"] in ("grid", "random", "bayes")
    assert sweep["metric"]["goal"] in ("maximize", "minimize")
    assert sweep["metric"]["name"].split("/")[0] in ("val", "test", "train")
    command = [str(c) for c in sweep["command"]]
    assert command[:4] == ["${env}", "${interpreter}", "-m", "kbqa_lit"] and command[4] in ("fit", "test")
    if command[4] == "test":  # a sweep over the answering step tests one checkpoint
        assert "--ckpt_path" in command and sweep["metric"]["name"].startswith("test/")
    assert command[-1] == "${args}", "${args} (--key=value) must come last, after every --config"
    assert "${args_no_hyphens}" not in command, "LightningCLI rejects key=value without --"
    configs = [command[i + 1] for i, c in enumerate(command) if c == "--config"]
    assert configs, "a sweep command names its experiment with --config"
    for cfg in configs:
        assert (ROOT / cfg).is_file(), f"{path.name}: {cfg} does not exist"
    for name in sweep["parameters"]:
        assert name.split(".")[0] in CLI_ROOTS, f"{path.name}: {name} is not a dotted CLI path"


def test_every_fragment_is_used_by_a_sweep():
    used = {c for p in SWEEP_FILES for c in map(str, _load(p)["command"]) if c.startswith("configs/sweeps/")}
    assert {p.relative_to(ROOT).as_posix() for p in FRAGMENTS} <= used


def test_run_callbacks_fragment_matches_the_quickstart():
    """coq_run_callbacks.yaml re-lists the quickstart's callbacks: ExecutionGuidedEval last, own checkpoint dirs."""
    quick = {
        c["class_path"]: c["init_args"] for c in _load(ROOT / "configs" / "quickstart.yaml")["trainer"]["callbacks"]
    }
    frag = _load(SWEEPS / "coq_run_callbacks.yaml")["trainer"]["callbacks"]
    assert [c["class_path"] for c in frag][-1] == EGE
    assert set(quick) == {c["class_path"] for c in frag}
    by_class = {c["class_path"]: c["init_args"] for c in frag}
    assert by_class[EGE] == quick[EGE]
    assert by_class[CHECKPOINT] == {**quick[CHECKPOINT], "dirpath": None}


@pytest.mark.parametrize("path", SWEEP_FILES, ids=_ids)
def test_every_sweep_point_parses(path: Path, capsys, monkeypatch):
    _chdir_root(monkeypatch)
    sweep = _load(path)
    points = _points(sweep)
    assert points
    for point in points:
        command = agent_command(sweep, point)
        args = cli_args(command)
        for name, value in point.items():
            assert f"--{name}={value}" in args
        with pytest.raises(SystemExit) as exc:
            build_cli([*args, "--print_config"], run=True)
        out = capsys.readouterr()
        assert exc.value.code in (0, None), f"{path.name} {point}: {out.err[-1500:]}"
        printed = _printed_config(out.out)
        for name, value in point.items():
            got = lookup(printed, name)
            if isinstance(value, float):
                assert math.isclose(got, value, rel_tol=1e-12), f"{path.name}: {name}={got}, swept {value}"
            else:
                assert got == value, f"{path.name}: {name}={got!r}, swept {value!r}"


def test_beam_size_reaches_the_execution_guided_callback(capsys, monkeypatch):
    _chdir_root(monkeypatch)
    sweep = _load(SWEEPS / "coq_lr_beams.yaml")
    args = cli_args(agent_command(sweep, {"trainer.callbacks.init_args.num_beams": 20}))
    with pytest.raises(SystemExit):
        build_cli([*args, "--print_config"], run=True)
    callbacks = _printed_config(capsys.readouterr().out)["trainer"]["callbacks"]
    beams = {c["class_path"]: c["init_args"].get("num_beams") for c in callbacks}
    assert beams[EGE] == 20 and beams[CHECKPOINT] is None


def test_grid_is_the_full_product():
    sweep = {
        "method": "grid",
        "parameters": {"a": {"values": [1, 2, 3]}, "b": {"values": ["x", "y"]}, "c": {"value": 0}},
    }
    points = expand(sweep)
    assert len(points) == 6 and {(p["a"], p["b"], p["c"]) for p in points} == {
        (a, b, 0) for a in (1, 2, 3) for b in ("x", "y")
    }


def test_samples_stay_in_their_distributions():
    rng = random.Random(0)
    for _ in range(200):
        assert 1e-4 <= sample_value("lr", {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2}, rng) <= 1e-2
        assert sample_value("k", {"min": 1, "max": 5}, rng) in range(1, 6)
        assert 0.0 <= sample_value("p", {"min": 0.0, "max": 1.0}, rng) <= 1.0
        assert sample_value("b", {"values": [1, 5, 10]}, rng) in (1, 5, 10)
        assert math.exp(-3) <= sample_value("w", {"distribution": "log_uniform", "min": -3, "max": 0}, rng) <= 1.0
    points = expand({"method": "random", "parameters": {"x": {"min": 0.0, "max": 1.0}}}, n=5, seed=1)
    assert len(points) == 5 and points == expand(
        {"method": "random", "parameters": {"x": {"min": 0.0, "max": 1.0}}}, 5, 1
    )
    with pytest.raises(ValueError, match="unknown distribution"):
        sample_value("x", {"distribution": "zipf"}, rng)
