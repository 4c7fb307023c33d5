"""``kbqa fc detect``: the component stage from the shipped config and tiny real checkpoints, synthetic world."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import lightning as L
import pytest
import torch
import yaml

from kbqa_lit.cli import run_tools
from kbqa_lit.data.fc.composer_examples import FC_META, predicted_components
from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.datamodules.fc.skeleton import SkeletonParserDataModule
from kbqa_lit.errors import UserInputError
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from kbqa_lit.pipelines.fc.build import _module_class, torch_device
from kbqa_lit.pipelines.fc.config import DetectConfig, PairsConfig, load_detect_config, parse_detect_config
from kbqa_lit.tools.common import apply_set_pairs
from tests.helpers.tiny import TINY_BERT, TINY_T5

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "fc" / "detect.yaml"
#: Our extended pairs and pruning (the filling path's detection): detect.yaml otherwise.
EXTENDED = CONFIG.with_name("detect_extended.yaml")


def _checkpoint(model: L.LightningModule, dm: L.LightningDataModule, path: Path) -> str:
    trainer = L.Trainer(fast_dev_run=1, accelerator="cpu", logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False)  # fmt: skip
    trainer.fit(model, datamodule=dm)
    trainer.save_checkpoint(path)
    return str(path)


def test_the_shipped_config_resolves_and_typos_are_errors():
    raw = apply_set_pairs(yaml.safe_load(CONFIG.read_text()), {"kb.store": "elsewhere", "files": ["q.jsonl"]})
    cfg = parse_detect_config(raw, CONFIG)
    assert cfg.kb.store == "elsewhere" and cfg.files == ["q.jsonl"]
    # the paper's pairs and pruning in detect.yaml, ours in detect_extended.yaml; every other setting the same
    assert (cfg.pairs, cfg.linking.on_empty) == (PairsConfig(type_match="exact", reverse_hops=False), "drop")
    paper, ours = (load_detect_config(path) for path in (CONFIG, EXTENDED))
    assert (ours.pairs, ours.linking.on_empty) == (PairsConfig(type_match="kb", reverse_hops=True), "keep")

    def rest(c: DetectConfig) -> DetectConfig:
        return dataclasses.replace(
            c, pairs=PairsConfig(), out_dir="", linking=dataclasses.replace(c.linking, on_empty="keep")
        )

    assert rest(paper) == rest(ours) and paper.out_dir != ours.out_dir
    with pytest.raises(UserInputError, match=r"unknown key 'linking.prune_all'"):
        parse_detect_config({"linking": {"prune_all": True}}, CONFIG)
    with pytest.raises(UserInputError, match=r"unknown key 'detector'"):
        parse_detect_config(apply_set_pairs({}, {"detector.top_k": 3}), CONFIG)
    with pytest.raises(UserInputError, match="LightningModule"):
        _module_class("kbqa_lit.pipelines.fc.config.parse_detect_config")
    assert _module_class(cfg.skeleton.class_path) is MultitaskGenerator


def test_detect_writes_meta_fc_from_checkpoints(tmp_path, capsys):
    world = tmp_path / "world"
    build_world(world, seed=0, size="small")
    ckpts = {}
    for kind in ("relation", "class"):
        dm = ExtractorDataModule(kind=kind, data_dir=str(world), tokenizer_name_or_path=None, num_negatives=2)
        model = ComponentExtractor(kind, encoder_name_or_path=None, encoder_config=TINY_BERT, tokenizer=dm.tokenizer)
        ckpts[kind] = _checkpoint(model, dm, tmp_path / f"{kind}.ckpt")
    sk_dm = SkeletonParserDataModule(data_dir=str(world), vocab_size=300)
    parser = MultitaskGenerator(model_config=TINY_T5, tokenizer=sk_dm.tokenizer, alpha=0.0, max_target_length=24)
    ckpts["skeleton"] = _checkpoint(parser, sk_dm, tmp_path / "skeleton.ckpt")
    out = tmp_path / "detected"
    sets = {
        "files": f"[{world / 'dev.jsonl'}]",
        "out_dir": str(out),
        "kb.store": str(tmp_path / "kb"),
        "kb.build_from": f"[{world / 'kb.nt'}]",
        "ontology": str(world / "schema.json"),
        "relation_extractor": ckpts["relation"],
        "class_extractor": ckpts["class"],
        "skeleton.checkpoint": ckpts["skeleton"],
        # top_k = recall_size: the kept relations are BM25's, whatever the untrained extractor's (near-tied) scores
        # say; the paper's pairs (exact types, forward hops, drop) can otherwise be none for 4 questions
        "detection.recall_size": 10,
        "detection.top_k": 10,
        "skeleton.beams": 2,
        "skeleton.max_new_tokens": 16,
    }
    argv = ["fc", "detect", "--config", str(CONFIG), "--limit", "4"]
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    assert run_tools(argv) == 0
    report = json.loads(capsys.readouterr().out)
    stats = report["files"][str(world / "dev.jsonl")]
    assert stats["questions"] == 4 and stats["mean_pairs"] > 0
    figures = stats["figures"]
    assert figures["questions"] == 4 and 0 <= figures["pair_coverage"] <= 1 and "relation_recall@5" in figures
    rows = list(read_jsonl(out / "dev.jsonl"))
    assert len(rows) == 4 and all(predicted_components(ex) is not None for ex in rows)
    assert all("mentions" in ex.meta[FC_META] for ex in rows)
    assert {ex.meta[FC_META]["skeleton_source"] for ex in rows} == {"parser"}  # what compose records
    assert run_tools([*argv, "--set", f"relation_extractor={tmp_path / 'missing.ckpt'}"]) == 2
    assert "no checkpoint file" in capsys.readouterr().err


def test_device_names_resolve_and_a_missing_gpu_is_a_clear_error():
    assert torch_device("cpu") == torch.device("cpu")
    assert torch_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        assert torch_device("gpu") == torch.device("cuda") and torch_device("cuda:0") == torch.device("cuda:0")
    else:
        for name in ("gpu", "cuda", "cuda:0"):
            with pytest.raises(UserInputError, match=f"device '{name}': no CUDA device"):
                torch_device(name)
    assert parse_detect_config({"kb": {"store": "kb"}, "device": "gpu"}, CONFIG).device == "gpu"
    for bad in ("tpu", "cuda:x", "cuda0"):
        with pytest.raises(UserInputError, match=r"device must be cpu, gpu, cuda, cuda:N or auto"):
            parse_detect_config({"kb": {"store": "kb"}, "device": bad}, CONFIG)
