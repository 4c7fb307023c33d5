"""configs/tfs/pipeline_synthetic.yaml: every command reads the given world and KB and writes under ``work``.

The quick run itself runs inside the comparison's test (tests/pipelines/test_compare_pipeline.py); these tests
check its commands (``kbqa pipeline --dry-run``), the callbacks its ``fit`` commands address by position (LightningCLI's
resolved config) and the ``kbqa lora pipeline`` config its answering commands build.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from kbqa_lit.cli import main
from kbqa_lit.lightning_cli import build_cli
from kbqa_lit.pipelines.tfs.config import _examples
from kbqa_lit.runner.chain import load_pipeline
from kbqa_lit.tools.lora_tool import pipeline_config

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
PIPELINE = CONFIGS / "tfs" / "pipeline_synthetic.yaml"
TASKS = ("s1", "s2_items", "s2_lf", "s3")


def _dry_run(capsys: pytest.CaptureFixture[str], *sets: str) -> list[dict]:
    args = ["pipeline", str(PIPELINE), "--quick", "--dry-run", "--set", f"configs={CONFIGS}"]
    for assignment in sets:
        args += ["--set", assignment]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)["commands"]


def test_every_command_reads_the_world_and_kb_and_writes_under_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, shared = tmp_path / "work", tmp_path / "shared"
    commands = _dry_run(capsys, f"work={work}")
    steps = [c["step"] for c in commands]
    assert steps == ["world", "kb", "adapter_s1", "adapters", "adapters", "adapters", "answers", "answers"]
    assert all(c["outputs"] and all(o.startswith(str(work)) for o in c["outputs"]) for c in commands)
    assert [c["outputs"][0] for c in commands[2:6]] == [
        f"{work}/{task}/adapter/adapter_model.safetensors" for task in TASKS
    ]
    assert [c["outputs"][0] for c in commands[6:]] == [
        f"{work}/test_predictions_{f}.jsonl" for f in ("paper", "extended")
    ]

    # a comparison passes its own world and KB: no command names the default ones, or any outputs/ folder
    commands = _dry_run(capsys, f"work={work}", f"world={shared}/world", f"kb={shared}/kb")
    for cmd in commands[2:]:
        text = cmd["command"]
        assert f"{shared}/world" in text and f"{shared}/kb" in text, text
        assert f"{work}/world" not in text and f"{work}/kb" not in text and "outputs/" not in text, text
    fits = [shlex.split(c["command"])[1:] for c in commands if c["command"].startswith("kbqa fit")]
    assert len(fits) == 4
    for argv in fits:
        assert argv[argv.index("--data.init_args.data_dir") + 1] == f"{shared}/world"
        assert argv[argv.index("--data.init_args.linking_store") + 1] == f"{shared}/kb"
        assert argv[argv.index("--data.init_args.linking_build_from") + 1] == "[]"
        assert argv[-6:] == [
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "2",
            "--trainer.limit_val_batches",
            "1",
        ]
    answers = [shlex.split(c["command"])[1:] for c in commands if c["step"] == "answers"]
    for argv, form in zip(answers, ("paper", "extended"), strict=True):
        assert argv[:2] == ["lora", "pipeline"] and argv[-2:] == ["--limit", "8"]
        assert f"form={form}" in argv and f"data.file={shared}/world/test.jsonl" in argv
        assert f"kb.store={shared}/kb" in argv and "kb.build_from=[]" in argv
        assert argv[argv.index("--out") + 1] == f"{work}/test_predictions_{form}.jsonl"


def test_fit_commands_set_every_callback_path_under_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The callbacks are set by position: the resolved configs show each override on the intended callback."""
    work, kb = tmp_path / "work", tmp_path / "shared" / "kb"
    pipe = load_pipeline(PIPELINE, {"configs": str(CONFIGS), "work": str(work), "kb": str(kb)})
    fits = [c for c in pipe.commands() if c.argv[0] == "fit"]
    assert [c.binding.get("task", "s1") for c in fits] == list(TASKS)
    for cmd in fits:
        task = cmd.binding.get("task", "s1")
        with pytest.raises(SystemExit) as exc:
            build_cli([*cmd.argv, "--print_config"], run=True)
        out, err = capsys.readouterr()
        assert exc.value.code in (0, None), err[-2000:]
        printed = yaml.safe_load(out[out.find("# lightning.pytorch==") :])
        callbacks = {c["class_path"].rsplit(".", 1)[1]: c["init_args"] for c in printed["trainer"]["callbacks"]}
        assert callbacks["AdapterExport"]["dirpath"] == f"{work}/{task}/adapter"
        assert callbacks["ModelCheckpoint"]["monitor"] == "val/loss"
        assert set(callbacks) == {"AdapterExport", "ModelCheckpoint"} | (
            {"ExecutionGuidedEval"} if task == "s1" else set()
        )
        if task == "s1":
            assert callbacks["ExecutionGuidedEval"]["store"] == str(kb)
            assert callbacks["ExecutionGuidedEval"]["build_from"] == []
        assert printed["trainer"]["default_root_dir"] == f"{work}/{task}"
        assert printed["trainer"]["logger"]["init_args"]["save_dir"] == f"{work}/{task}"
        assert printed["trainer"]["max_epochs"] == 20
        assert printed["data"]["init_args"]["tasks"] == [task]
        assert printed["data"]["init_args"]["synthetic_seed"] is None  # a missing world is an error, not a new one


def test_answer_commands_build_a_config_on_the_world_kb_and_adapters(tmp_path: Path) -> None:
    work = tmp_path / "work"
    pipe = load_pipeline(PIPELINE, {"configs": str(CONFIGS), "work": str(work)})
    for cmd in (c for c in pipe.commands() if c.step == "answers"):
        argv = cmd.argv
        sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
        cfg = pipeline_config(argv[argv.index("--config") + 1], sets)
        assert cfg.form == cmd.binding["form"]
        assert cfg.data.file == f"{work}/world/test.jsonl" and cfg.data.data_dir is None
        assert cfg.kb.store == f"{work}/kb" and cfg.kb.files() == []
        assert cfg.members[0].adapters == {t: f"{work}/{t}/adapter" for t in TASKS}


def test_a_data_file_wins_and_builds_no_world(tmp_path: Path) -> None:
    """With ``data.file``, ``data_dir``/``synthetic_seed`` are never read: no world is built anywhere."""
    world = tmp_path / "world"
    world.mkdir()
    (world / "test.jsonl").write_text(
        json.dumps({"qid": "q1", "question": "who?", "answers": [], "dataset": "synthetic"}) + "\n"
    )
    empty = tmp_path / "elsewhere"
    cfg = pipeline_config(
        CONFIGS / "tfs" / "pipeline.yaml", [f"data.file={world}/test.jsonl", f"data.data_dir={empty}"]
    )
    assert cfg.data.synthetic_seed == 0  # the shipped file's: it would build a world into data_dir
    assert [e.qid for e in _examples(cfg.data, None, None)] == ["q1"]
    assert not empty.exists()
