"""``kbqa lora merge|export|pipeline`` and the TFS configs (tiny ones run, GPU ones parse)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from transformers import AutoModelForCausalLM, AutoTokenizer

from kbqa_lit.cli import main
from kbqa_lit.datamodules.tfs.instruction import InstructionDataModule
from kbqa_lit.errors import UserInputError
from kbqa_lit.lightning_cli import build_cli
from kbqa_lit.modules.lora_causal_lm import LoraCausalLM
from kbqa_lit.tools.common import apply_set_pairs, parse_set_pairs, set_dotted
from kbqa_lit.tools.lora_tool import pipeline_config
from tests.helpers.foreign_checkpoints import write_foreign_checkpoint, write_not_a_checkpoint

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "tfs"
TINY = ("s1", "s2_items", "s2_lf", "s3")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A working directory for the configs' relative paths (outputs/...), one thread for tiny models."""
    root = tmp_path_factory.mktemp("lora_tool")
    before, threads = Path.cwd(), torch.get_num_threads()
    os.chdir(root)
    torch.set_num_threads(1)
    yield root
    os.chdir(before)
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def dm(workdir: Path) -> InstructionDataModule:
    """The datamodule of configs/tfs/base.yaml + s1.yaml (same world and tokenizer as the configs)."""
    data = InstructionDataModule(data_dir="outputs/synthetic/seed0", synthetic_seed=0, tasks="s1", batch_size=4)
    data.setup("fit")
    return data


@pytest.fixture(scope="module")
def adapter(dm: InstructionDataModule, workdir: Path) -> dict:
    """A tiny LoRA module with non-zero adapter weights, saved as an adapter folder."""
    torch.manual_seed(0)
    module = LoraCausalLM(tokenizer=dm.tokenizer, target_modules=["q_proj", "v_proj", "lm_head"])
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)  # B = 0 at init would make merging trivially exact
    module.eval()
    folder = module.save_adapter(workdir / "adapters" / "one")
    return {"module": module, "dir": folder}


@pytest.fixture()
def batch(dm: InstructionDataModule) -> dict[str, torch.Tensor]:
    return next(iter(dm.val_dataloader()))


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict | None, str]:
    code = main(args)
    out, err = capsys.readouterr()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    return code, json.loads(lines[-1]) if lines else None, err


# ------------------------------------------------------------------ configs

GPU_BASES = ("llama2_7b_webqsp", "llama2_13b_webqsp", "llama2_7b_cwq", "llama2_13b_cwq")


def _printed(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as info:
        build_cli(["fit", *args, "--print_config"], run=True)
    assert info.value.code == 0
    out = capsys.readouterr().out
    return yaml.safe_load(out[out.find("# lightning.pytorch==") :])


@pytest.mark.parametrize(
    "task", [TINY[0], *(pytest.param(t, marks=pytest.mark.slow) for t in TINY[1:])]
)  # s1 always; the other three (same code path, another task) with the slow tests
def test_tiny_configs_run_one_step(task: str, workdir: Path) -> None:
    args = ["fit", "--config", str(CONFIGS / "base.yaml"), "--config", str(CONFIGS / f"{task}.yaml")]
    cli = build_cli([*args, "--trainer.fast_dev_run", "true"], run=True)
    assert isinstance(cli.model, LoraCausalLM) and cli.datamodule.tasks == (task,)
    assert cli.model.tokenizer is cli.datamodule.tokenizer  # linked by the CLI
    exported = workdir / "outputs" / "tfs" / task / "adapter"
    assert (exported / "adapter_model.safetensors").is_file()
    assert json.loads((exported / "instruction.json").read_text())["tasks"] == [task]


@pytest.mark.parametrize("name", ["llama2_7b_webqsp", "llama2_13b_cwq"])
def test_gpu_configs_parse(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    printed = _printed(["--config", str(CONFIGS / f"{name}.yaml")], capsys)
    init = printed["model"]["init_args"]
    assert init["learning_rate"] == 3e-4 and init["torch_dtype"] == "bfloat16"
    assert init["model_name_or_path"].startswith("meta-llama/Llama-2-")
    assert printed["trainer"]["max_epochs"] == 3 and printed["data"]["init_args"]["batch_size"] == 8
    assert printed["data"]["init_args"]["max_input_length"] == 128  # the input; the template comes on top
    assert printed["data"]["init_args"]["max_length"] is None
    assert printed["trainer"]["strategy"]["class_path"].endswith("DeepSpeedStrategy")


def test_one_adapter_per_task_model_and_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    """configs/tfs/llama2_{7b,13b}_{webqsp,cwq}.yaml + llama2/<task>.yaml: 16 runs, 16 adapter folders,
    held-out validation, and the GPU pipeline files chain each dataset's [13B, 7B] adapters."""
    adapters: dict[tuple[str, str], str] = {}
    for name in GPU_BASES:
        for task in TINY:
            printed = _printed(
                ["--config", str(CONFIGS / f"{name}.yaml"), "--config", str(CONFIGS / "llama2" / f"{task}.yaml")],
                capsys,
            )
            model, data = printed["model"]["init_args"], printed["data"]["init_args"]
            size = name.split("_")[1]
            assert model["model_name_or_path"] == data["tokenizer_name_or_path"] == f"meta-llama/Llama-2-{size}-hf"
            assert data["tasks"] == [task] and data["max_input_length"] == 128 and data["s2_lf_input"] == "items"
            assert data["val_file"] and "test" not in data["val_file"] and data["test_file"] == "test.jsonl"
            stage = printed["trainer"]["strategy"]["init_args"]["stage"]
            assert stage == (3 if size == "13b" else 2) and model["learning_rate"] == 3e-4
            logger = printed["trainer"]["logger"]["init_args"]
            export = [c for c in printed["trainer"]["callbacks"] if c["class_path"].endswith("AdapterExport")]
            assert len(export) == 1 and export[0]["init_args"]["dirpath"] is None  # <log_dir>/adapter
            adapters[(name, task)] = f"{logger['save_dir']}/{logger['name']}/{logger['version']}/adapter"
    assert len(set(adapters.values())) == 16
    from kbqa_lit.pipelines.tfs.config import load_pipeline_config

    for dataset in ("webqsp", "cwq"):
        cfg = load_pipeline_config(CONFIGS / f"pipeline_llama2_{dataset}.yaml")
        assert [m.name for m in cfg.members] == ["llama2-13b", "llama2-7b"] and cfg.order == "strategy"
        for member, size in zip(cfg.members, ("13b", "7b"), strict=True):
            assert member.adapters == {t: adapters[(f"llama2_{size}_{dataset}", t)] for t in TINY}
        assert cfg.linking.mode == "predicted" and cfg.data.file == f"data/{dataset}/test.jsonl"


# ------------------------------------------------------------------ merge, export, continued training


def test_merge_equals_base_plus_adapter(adapter, batch, workdir: Path, capsys) -> None:
    out = workdir / "merged"
    code, summary, _ = run(["lora", "merge", "--adapter", str(adapter["dir"]), "--out", str(out)], capsys)
    assert code == 0 and summary["out"] == str(out)
    merged = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True).eval()
    module: LoraCausalLM = adapter["module"]
    with torch.no_grad():
        ours = module(batch["input_ids"], batch["attention_mask"])
        theirs = merged(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    assert float((ours - theirs).abs().max()) < 1e-5
    with torch.no_grad(), module.model.disable_adapter():  # the adapter really changes the outputs
        base = module(batch["input_ids"], batch["attention_mask"])
    assert float((ours - base).abs().max()) > 1e-3
    tok = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert tok.get_vocab() == module.tokenizer.get_vocab()


def test_merge_user_errors(workdir: Path, capsys) -> None:
    code, _, err = run(["lora", "merge", "--adapter", str(workdir / "nope"), "--out", str(workdir / "x")], capsys)
    assert code == 2 and "no LoRA adapter" in err


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("adapter_config.json", '{"peft_type": "LORA", "r": ', "not valid JSON (line 1 column 28: Expecting value)"),
        ("adapter_config.json", '["LORA"]', "expected a JSON object, got list"),
        ("adapter_config.json", "{}", "peft cannot use it (KeyError: 'peft_type')"),
        (
            "kbqa_lora.json",
            "{hparams: 1}",
            "not valid JSON (line 1 column 2: Expecting property name enclosed in double quotes)",
        ),
    ],
)
def test_merge_names_a_malformed_adapter_json_file(
    adapter, workdir: Path, capsys, name: str, text: str, message: str
) -> None:
    broken = workdir / "adapters" / f"broken_{name}_{len(text)}"
    shutil.copytree(adapter["dir"], broken)
    (broken / name).write_text(text, encoding="utf-8")
    code, summary, err = run(["lora", "merge", "--adapter", str(broken), "--out", str(workdir / "never")], capsys)
    assert code == 2 and summary is None
    assert err.strip().splitlines()[-1] == f"kbqa lora: error: {broken / name}: {message}"  # after progress bars
    assert not (workdir / "never").exists()


@pytest.mark.parametrize(
    ("write", "what"),
    [
        (write_not_a_checkpoint, "is not a Lightning checkpoint (not a file written by torch.save)"),
        (write_foreign_checkpoint, "is a Lightning checkpoint of another module (hyper-parameters width)"),
    ],
)
def test_export_names_a_file_that_is_not_a_lora_checkpoint(workdir: Path, capsys, write, what) -> None:
    ckpt = write(workdir / f"{write.__name__}.ckpt")
    code, summary, err = run(["lora", "export", "--ckpt", str(ckpt), "--out", str(workdir / "never")], capsys)
    assert code == 2 and summary is None
    assert err.strip() == (
        f"kbqa lora: error: {ckpt} {what}; expected a LoraCausalLM checkpoint "
        "(kbqa fit --config configs/tfs/base.yaml --config configs/tfs/s1.yaml writes one)"
    )


def test_continued_training_starts_from_the_merged_model(adapter, batch, workdir: Path, capsys) -> None:
    out = workdir / "merged_for_continue"
    assert run(["lora", "merge", "--adapter", str(adapter["dir"]), "--out", str(out)], capsys)[0] == 0
    args = [
        "fit",
        "--config",
        str(CONFIGS / "base.yaml"),
        "--config",
        str(CONFIGS / "s1.yaml"),
        "--model.init_args.model_name_or_path",
        str(out),
        "--data.init_args.tokenizer_name_or_path",
        str(out),
        "--model.init_args.warmup_steps",
        "0",
        "--trainer.fast_dev_run",
        "true",
    ]
    cli = build_cli(args, run=False)
    fresh: LoraCausalLM = cli.model.eval()
    merged = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True).eval()
    with torch.no_grad():  # a fresh LoRA (B = 0) on the merged base computes the merged model
        diff = (
            fresh(batch["input_ids"], batch["attention_mask"])
            - merged(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        )
    assert float(diff.abs().max()) < 1e-5
    assert all(float(v.abs().sum()) == 0 for k, v in fresh.adapter_state_dict().items() if "lora_B" in k)
    cli.trainer.fit(fresh.train(), datamodule=cli.datamodule)
    moved = [k for k, v in fresh.adapter_state_dict().items() if "lora_B" in k and float(v.abs().sum()) > 0]
    assert moved  # the new adapter trains on top of the merged weights


def test_export_writes_the_adapter_of_a_checkpoint(dm, batch, workdir: Path, capsys) -> None:
    module = LoraCausalLM(tokenizer=dm.tokenizer, learning_rate=1e-2)
    ckpt = ModelCheckpoint(dirpath=str(workdir / "ckpt"))
    trainer = Trainer(
        max_steps=2,
        limit_val_batches=0,
        logger=False,
        callbacks=[ckpt],
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(workdir),
    )
    trainer.fit(module, datamodule=dm)
    code, summary, _ = run(["lora", "export", "--ckpt", ckpt.best_model_path, "--out", "exported"], capsys)
    assert code == 0 and summary["adapter_weights"] == len(module.adapter_state_dict())
    loaded = LoraCausalLM.from_adapter(workdir / "exported").eval()
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(batch["input_ids"], batch["attention_mask"]),
            module.eval()(batch["input_ids"], batch["attention_mask"]),
        )


# ------------------------------------------------------------------ pipeline


def test_set_dotted_walks_mappings_and_list_indices() -> None:
    config = {"members": [{"name": "a", "adapters": {"s1": "old"}}], "kb": None, "form": "paper"}
    apply_set_pairs(config, parse_set_pairs(["members.0.adapters.s1=new", "kb.build_from=[]", "data.file=f.jsonl"]))
    assert config["members"][0]["adapters"] == {"s1": "new"}
    assert config["kb"] == {"build_from": []} and config["data"] == {"file": "f.jsonl"}  # null / missing: created
    set_dotted(config, "members.0", {"name": "b", "adapters": {}})  # a whole item
    assert config["members"] == [{"name": "b", "adapters": {}}]
    for key, needle in [
        ("members.1.name", "members has 1 item(s), so no index 1"),
        ("members.first.name", "members is a list; index it with a number (members.0)"),
        ("form.x", "form is a value ('paper'), not a mapping or a list"),
        ("members..name", "empty part"),
    ]:
        with pytest.raises(UserInputError) as info:
            set_dotted(config, key, 1)
        assert str(info.value).startswith(f"--set {key}: ") and needle in str(info.value)


def test_pipeline_set_reaches_form_data_kb_out_and_a_members_adapter() -> None:
    cfg = pipeline_config(
        CONFIGS / "pipeline.yaml",
        [
            "form=extended",
            "data.file=w/test.jsonl",
            "data.data_dir=w",
            "kb.store=w/kb",
            "kb.build_from=[]",
            "out=w/preds.jsonl",
            "members.0.adapters.s1=w/s1/adapter",
            "members.0.overrides.num_beams=2",
        ],
    )
    assert cfg.form == "extended" and cfg.out == "w/preds.jsonl"
    assert cfg.data.file == "w/test.jsonl" and cfg.data.data_dir == "w"
    assert cfg.kb.store == "w/kb" and cfg.kb.files() == [] and cfg.kb.timeout == 10.0  # the rest as the file says
    assert cfg.members[0].adapters["s1"] == "w/s1/adapter"
    assert cfg.members[0].adapters["s3"] == "outputs/tfs/s3/adapter" and cfg.members[0].overrides == {"num_beams": 2}
    assert pipeline_config(CONFIGS / "pipeline.yaml").form == "paper"  # the file itself is unchanged


@pytest.mark.parametrize(
    ("pair", "needle"),
    [
        ("data.nosuch=1", "--set data.nosuch: data has no key 'nosuch' (keys: file, data_dir"),
        ("nosuch=1", "--set nosuch: the config has no key 'nosuch'"),
        ("members.1.adapters.s1=x", "--set members.1.adapters.s1: members has 1 item(s), so no index 1"),
        ("members.tiny.adapters.s1=x", "--set members.tiny.adapters.s1: members is a list; index it with a number"),
        ("members.0.adapters.s4=x", "--set members.0.adapters.s4: members.0.adapters has no task 's4' (tasks: s1,"),
        ("form.paper=1", "--set form.paper: form is a value, not a section"),
        ("form=both", "pipeline.form"),
        ("data.file", "--set expects key=value"),
    ],
)
def test_pipeline_set_bad_key_is_a_user_error_naming_it(pair: str, needle: str) -> None:
    with pytest.raises(UserInputError) as info:
        pipeline_config(CONFIGS / "pipeline.yaml", [pair])
    assert needle in str(info.value)


def test_pipeline_command_reports_a_bad_set_key(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["lora", "pipeline", "--config", str(CONFIGS / "pipeline.yaml"), "--set", "kb.stor=x"]
    code, summary, err = run(args, capsys)
    assert code == 2 and summary is None and "--set kb.stor: kb has no key 'stor'" in err


@pytest.mark.slow
def test_pipeline_command_on_the_shipped_config(adapter, workdir: Path, capsys) -> None:
    config = yaml.safe_load((CONFIGS / "pipeline.yaml").read_text())
    assert set(config["members"][0]["adapters"]) == set(TINY)
    config["members"][0]["adapters"] = dict.fromkeys(TINY, str(adapter["dir"]))
    config["decoding"].update(max_new_tokens=6, answer_max_new_tokens=6, s1_beams=2, s2_lf_beams=2)
    path = workdir / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    code, summary, _ = run(["lora", "pipeline", "--config", str(path), "--limit", "3", "--no-s2"], capsys)
    assert code == 0 and summary["questions"] == 3
    metrics = summary["metrics"]
    assert {"f1", "hit1", "hit1_any", "executable", "share/s1", "share/s2", "share/s3", "share/none"} <= set(metrics)
    assert metrics["share/s2"] == 0.0
    rows = [json.loads(line) for line in Path(summary["out"]).read_text().splitlines()]
    assert len(rows) == 3 and all(r["attempts"][0]["strategy"] == "s1" for r in rows)
    assert (workdir / "outputs" / "synthetic" / "seed0" / "store").is_dir()  # built on first use


def test_merge_then_continue_chain(dm, workdir: Path, capsys) -> None:
    """configs/tfs/pipeline_merge_continue.yaml (--quick): fit, ``lora merge``, fit a fresh LoRA on the merge.

    The chain's commands run in this process (``kbqa_lit.cli.main``) instead of one ``kbqa`` process each;
    the runner's process handling has its own tests (tests/runner).
    """
    from kbqa_lit.runner.chain import load_pipeline

    work = workdir / "merge_continue"
    chain = load_pipeline(CONFIGS / "pipeline_merge_continue.yaml", {"configs": str(CONFIGS.parent), "work": str(work)})
    commands = chain.commands(quick=True)
    assert [c.step for c in commands] == ["first", "merge", "continue"]
    assert commands[1].argv[:2] == ["lora", "merge"]
    for cmd in commands:
        assert main(cmd.argv) == 0 and cmd.done(), cmd.argv
    capsys.readouterr()
    merged = work / "merged"
    meta = json.loads((work / "continue" / "run" / "adapter" / "kbqa_lora.json").read_text())
    assert meta["hparams"]["model_name_or_path"] == str(merged)  # the new LoRA sits on the merged base
    first = json.loads((work / "first" / "run" / "adapter" / "kbqa_lora.json").read_text())
    assert first["hparams"]["model_name_or_path"] is None  # the tiny base, built from its config
    continued = LoraCausalLM.from_adapter(work / "continue" / "run" / "adapter").eval()
    moved = [k for k, v in continued.adapter_state_dict().items() if "lora_B" in k and float(v.abs().sum()) > 0]
    assert moved  # the second LoRA trained
