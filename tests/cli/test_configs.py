"""Every shipped YAML parses with the kbqa LightningCLI (litgpt's tests/test_config_hub.py idea)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbqa_lit.lightning_cli import build_cli

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
QUICKSTART = CONFIGS / "quickstart.yaml"
CLI_KEYS = {"seed_everything", "model", "data", "trainer", "optimizer", "lr_scheduler", "ckpt_path"}
#: YAMLs that are not LightningCLI configs, each parsed by the test of the tool that reads it:
#: W&B sweeps (tests/cli/test_sweeps.py), the TFS fallback pipelines (tests/pipelines/tfs/test_tfs_config.py,
#: tests/tools/test_lora_tool.py), the TFS merge-then-continue chain (tests/tools/test_lora_tool.py),
#: decomposition jobs (tests/pipelines/coq/decomposition/test_decompose_configs.py), the Keqing run
#: (tests/pipelines/keqing/test_config.py) and pipeline files (tests/runner/test_runner.py).
OTHER_YAMLS = {
    "tfs/pipeline.yaml",
    "tfs/pipeline_llama2_webqsp.yaml",
    "tfs/pipeline_llama2_cwq.yaml",
    "tfs/pipeline_merge_continue.yaml",
    "coq/decompose/openai.yaml",
    "coq/decompose/llama2_7b_local.yaml",
    "coq/decompose/synthetic_gold.yaml",
    "coq/decompose/trained.yaml",  # tests/pipelines/coq/decomposition/test_decompose_configs.py, test_training_rows.py
    "keqing/run.yaml",
    "fc/detect.yaml",  # tests/pipelines/fc/test_config.py, tests/pipelines/fc/test_build.py
    "fc/detect_extended.yaml",  # tests/pipelines/fc/test_config.py, tests/pipelines/fc/test_paper_detection.py
    "fc/compose.yaml",  # tests/pipelines/fc/test_config.py, tests/pipelines/fc/test_composition.py
}
# kbqa pipeline files: tests/runner/test_runner.py::test_shipped_pipeline_files_parse
PIPELINE_PREFIXES = (
    "coq/pipeline_",
    "keqing/pipeline_",
    "fc/pipeline_",
    "tfs/pipeline_synthetic",
    "tfs/pipeline_pathquestion",
    "tfs/pipeline_metaqa",
    "compare/",
)


def _is_cli_config(path: Path) -> bool:
    doc = yaml.safe_load(path.read_text()) or {}
    return set(doc) <= CLI_KEYS


ALL_YAMLS = sorted(CONFIGS.rglob("*.yaml"))
LIGHTNING_YAMLS = [p for p in ALL_YAMLS if "sweeps" not in p.parts and _is_cli_config(p)]


def test_every_yaml_is_checked_somewhere():
    rest = {p.relative_to(CONFIGS).as_posix() for p in ALL_YAMLS if "sweeps" not in p.parts and not _is_cli_config(p)}
    rest = {r for r in rest if not r.startswith(PIPELINE_PREFIXES)}
    assert rest <= OTHER_YAMLS, f"YAMLs no test parses: {sorted(rest - OTHER_YAMLS)}"


def _is_experiment(path: Path) -> bool:
    doc = yaml.safe_load(path.read_text()) or {}
    return "model" in doc and "data" in doc


#: Per-system bases: a task/dataset file in the same folder parses on top of its base.
BASES = {
    "tfs": CONFIGS / "tfs" / "base.yaml",
    "tfs_llama2": CONFIGS / "tfs" / "llama2_7b_webqsp.yaml",  # every llama2_* base: tests/tools/test_lora_tool.py
    "coq": CONFIGS / "coq" / "freebase.yaml",
}
#: The task/dataset files of each base (the rest of the folder are whole experiments).
ON_BASE = {
    "tfs/s1.yaml": "tfs",
    "tfs/s2_items.yaml": "tfs",
    "tfs/s2_lf.yaml": "tfs",
    "tfs/s3.yaml": "tfs",
    **{f"tfs/llama2/{task}.yaml": "tfs_llama2" for task in ("s1", "s2_items", "s2_lf", "s3")},
    "coq/webqsp.yaml": "coq",
    "coq/cwq.yaml": "coq",
}


def _args_for(path: Path) -> list[str]:
    """The --config flags that make ``path`` a whole experiment."""
    rel = path.relative_to(CONFIGS).as_posix()
    if rel in ON_BASE:
        return ["--config", str(BASES[ON_BASE[rel]]), "--config", str(path)]
    if _is_experiment(path):
        return ["--config", str(path)]
    return ["--config", str(QUICKSTART), "--config", str(path)]


def _print_config(args: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        build_cli(args, run=True)
    out = capsys.readouterr()
    assert exc.value.code in (0, None), out.err[-2000:]
    # libraries may print to stdout on import (DeepSpeed's accelerator warning): start at the config
    start = out.out.find("# lightning.pytorch==")
    return out.out[start:] if start >= 0 else out.out


def test_task_files_are_small_and_their_bases_exist():
    for rel, system in ON_BASE.items():
        assert BASES[system].is_file() and (CONFIGS / rel).is_file()
        doc = yaml.safe_load((CONFIGS / rel).read_text())
        for section in ("model", "data"):
            assert "class_path" not in (doc.get(section) or {}), f"{rel} repeats its base's {section}"


def test_there_are_configs_to_check():
    names = {p.relative_to(CONFIGS).as_posix() for p in LIGHTNING_YAMLS}
    assert {"quickstart.yaml", "trainer/cpu.yaml", "trainer/ddp.yaml", "logger/wandb.yaml"} <= names


@pytest.mark.parametrize("path", LIGHTNING_YAMLS, ids=lambda p: p.relative_to(CONFIGS).as_posix())
def test_every_shipped_yaml_parses(path, capsys):
    """Experiments parse alone, task files on their system's base, fragments (trainer/, logger/) on the quickstart."""
    args = ["fit", *_args_for(path)]
    printed = yaml.safe_load(_print_config([*args, "--print_config"], capsys))
    assert printed["model"]["class_path"] and printed["data"]["class_path"]
    fragment = yaml.safe_load(path.read_text()) or {}
    for section in ("trainer", "model", "data"):
        for key, value in (fragment.get(section) or {}).items():
            if key in ("class_path", "init_args", "logger", "callbacks", "strategy", "plugins"):
                continue
            assert key in printed[section], f"{path}: {section}.{key} lost"
            if not isinstance(value, dict):
                assert printed[section][key] == value, f"{path}: {section}.{key}"


@pytest.mark.parametrize(
    "chain", ["coq/pipeline_generator_metaqa.yaml", "coq/pipeline_generator_pathquestion.yaml"], ids=str
)
def test_held_out_files_and_kb_are_variables(chain, capsys, tmp_path):
    """The generator chains' fit/test commands, with their variables set to other files, resolve to those files;
    the fit validates schema-constrained, the answers come in both forms, each decoding as its form does."""
    from kbqa_lit.runner.chain import load_pipeline

    work = tmp_path / "elsewhere"
    pipeline = load_pipeline(CONFIGS / chain, overrides={"work": str(work), "configs": str(CONFIGS)})
    commands = [c for c in pipeline.commands() if c.step in ("generator", "answers")]
    assert [c.binding.get("form") for c in commands] == [None, "paper", "extended"]
    for command in commands:
        argv = [a for a in command.argv if a != "--ckpt_path" and not a.endswith("last.ckpt")]
        printed = yaml.safe_load(_print_config([*argv, "--print_config"], capsys))
        data = printed["data"]["init_args"]
        assert (data["train_file"], data["test_file"]) == (f"{work}/world/train.jsonl", f"{work}/world/test.jsonl")
        callback = printed["trainer"]["callbacks"][-1]["init_args"]
        assert callback["store"] == f"{work}/kb" and callback["build_from"] == []
        form = command.binding.get("form")
        if form is None:  # the fit
            assert callback["constrained"] == "schema"
        else:  # constrained null: the form's own (paper: none, extended: schema)
            assert (callback["form"], callback["constrained"]) == (form, None)
            assert callback["predictions_dir"] == f"{work}/test_{form}"


def test_generator_pair_trains_two_models_and_tests_them_as_one(capsys, tmp_path):
    """``coq/pipeline_generator_pair.yaml``: an answer-only fit, an LF-only fit, then the LF model tested with
    the answer model's texts (CoQ's "separately trained" pair); each fit checkpoints in its own folder."""
    from kbqa_lit.runner.chain import load_pipeline

    work = tmp_path / "pair"
    pipeline = load_pipeline(
        CONFIGS / "coq" / "pipeline_generator_pair.yaml", overrides={"work": str(work), "configs": str(CONFIGS)}
    )
    commands = {c.step: c for c in pipeline.commands()}
    assert list(commands) == ["answer_generator", "lf_generator", "answers"]
    answer_ckpt, lf_ckpt = commands["answer_generator"].outputs[0], commands["lf_generator"].outputs[0]
    printed = {s: yaml.safe_load(_print_config([*c.argv, "--print_config"], capsys)) for s, c in commands.items()}
    expected = {  # step: (lf_weight, alpha, lf_generation, answer_model)
        "answer_generator": (0.0, 1.0, False, None),
        "lf_generator": (1.0, 0.0, True, str(answer_ckpt)),
        "answers": (1.0, 0.0, True, str(answer_ckpt)),
    }
    for step, (lf_weight, alpha, lf_generation, answer_model) in expected.items():
        model = printed[step]["model"]["init_args"]
        checkpoint, callback = (c["init_args"] for c in printed[step]["trainer"]["callbacks"])
        assert (model["lf_weight"], model["alpha"]) == (lf_weight, alpha), step
        assert (callback["lf_generation"], callback["answer_model"]) == (lf_generation, answer_model), step
        assert checkpoint["dirpath"] is None, step
    assert answer_ckpt == work / "answer" / "logs" / "run" / "checkpoints" / "last.ckpt"
    assert lf_ckpt == work / "lf" / "logs" / "run" / "checkpoints" / "last.ckpt"
    assert printed["answers"]["ckpt_path"] == str(lf_ckpt)


def test_the_demo_test_command_parses_with_its_settings(capsys):
    """``make demo``'s ``kbqa test`` line (from the Makefile): schema decoding, path fallback, answer-type check.

    Its ``kbqa fit`` line validates with the same answering settings, and the test loads the best checkpoint.
    """
    import re
    import shlex

    makefile = (CONFIGS.parent / "Makefile").read_text().replace("\\\n", " ")
    variables = dict(re.findall(r"^([A-Z_]+) :?= (.*)$", makefile, flags=re.M))
    makefile = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), m.group(0)), makefile)
    fit = next(ln for ln in makefile.splitlines() if "kbqa fit --config configs/quickstart.yaml" in ln)
    line = next(ln for ln in makefile.splitlines() if "kbqa test --config configs/quickstart.yaml" in ln)
    answering = variables["DEMO_ANSWERING"]
    assert answering in fit and answering in line and "form extended" in answering
    argv = shlex.split(line.split("kbqa test", 1)[1].replace("configs/", f"{CONFIGS}/"))
    assert argv[argv.index("--ckpt_path") + 1].endswith("checkpoints/best.ckpt")
    argv = [a for a in argv if a != "--ckpt_path" and not a.endswith("best.ckpt")]
    printed = yaml.safe_load(_print_config(["test", *argv, "--print_config"], capsys))
    callback = printed["trainer"]["callbacks"][-1]["init_args"]
    assert callback["form"] == "extended" and callback["extensions"] is None and callback["system"] == "coq"
    assert callback["path_override_margin"] == 0.3 and callback["path_max_hops"] == 2
    assert callback["answer_type_threshold"] == 0.8
    from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval

    built = ExecutionGuidedEval(**callback)  # the extended form: schema decoding, path fallback, answer-type check
    assert built.constrained == "schema" and built.answering.recorded(built.constrained).tag() == "extended"
    assert built.answering.paths is not None and built.answering.types is not None
    assert printed["data"]["init_args"]["linking"] == "predicted"
