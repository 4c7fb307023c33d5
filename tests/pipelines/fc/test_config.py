"""``kbqa fc detect`` and ``kbqa fc compose`` configs: typed, with the defaults, keys and errors they always had."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.fc.compose_config import ComposeConfig, load_compose_config, parse_compose_config
from kbqa_lit.pipelines.fc.config import DetectConfig, load_detect_config, parse_detect_config
from kbqa_lit.runner.chain import load_pipeline
from kbqa_lit.tools import fc_tool
from kbqa_lit.tools.common import apply_set_pairs

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
KB = {"store": "kb", "build_from": [], "format": "nt", "timeout": 30.0, "semantics": "simple-path"}
MINILM = "all-MiniLM-L6-v2"
#: The defaults of the dict-based parser these dataclasses replaced (its DEFAULTS and COMPOSE_DEFAULTS).
DETECT_DEFAULTS = {
    "kb": KB,
    "files": [],
    "out_dir": "outputs/fc/detected",
    "ontology": None,
    "relation_extractor": None,
    "class_extractor": None,
    "detection": {"recall_size": 100, "top_k": 10},
    "linking": {"json": None, "max_candidates": 50, "top_k": 10, "prune": True, "on_empty": "keep"},
    "pairs": {"type_match": "kb", "reverse_hops": True, "ask_sample": 10_000},
    "skeleton": {
        "source": "parser",
        "checkpoint": None,
        "class_path": None,
        "beams": 4,
        "max_new_tokens": 48,
        "mask_mentions": True,
        "train_files": [],
        "neighbours": 20,
        "vote": "max",
        "encoder": MINILM,
    },
    "device": "cpu",
}
COMPOSE_DEFAULTS = {
    "kb": KB,
    "file": None,
    "out": None,
    "form": None,
    "extensions": None,
    "composition": "fill",
    "generated": None,
    "fill": {
        "top_relations": 10,
        "top_classes": 10,
        "max_candidates": 200,
        "use_pairs": True,
        "order": "skeleton",
        "extra_skeletons": 0,
    },
    "max_executions": 100,
    "paths": {"override_margin": None, "encoder": MINILM, "max_hops": 2},
    "answer_type": {"threshold": 0.8, "max_paths": 30, "encoder": MINILM},
}


def test_the_defaults_are_the_old_ones():
    detect = parse_detect_config({"kb": {"store": "kb"}}, "d.yaml")
    compose = parse_compose_config({"kb": {"store": "kb"}}, "c.yaml")
    assert dataclasses.asdict(detect) == DETECT_DEFAULTS
    assert dataclasses.asdict(compose) == COMPOSE_DEFAULTS
    assert compose.resolved_form().tag() == "paper"


def test_the_shipped_configs_parse_with_every_key():
    for name in ("detect.yaml", "detect_extended.yaml"):
        cfg = load_detect_config(CONFIGS / "fc" / name)
        assert isinstance(cfg, DetectConfig) and cfg.kb.store == "outputs/fc/kb" and cfg.skeleton.class_path
    cfg = load_compose_config(CONFIGS / "fc" / "compose.yaml")
    assert isinstance(cfg, ComposeConfig) and (cfg.fill.extra_skeletons, cfg.paths.override_margin) == (2, 0.3)


def _fc_commands(chain: str) -> list[list[str]]:
    pipeline = load_pipeline(CONFIGS / "fc" / chain, overrides={"configs": str(CONFIGS)})
    return [c.argv for c in pipeline.commands() if c.argv[:2] in (["fc", "detect"], ["fc", "compose"])]


@pytest.mark.parametrize("chain", ["pipeline_synthetic.yaml", "pipeline_grailqa.yaml", "pipeline_grailqa_eval.yaml"])
def test_every_fc_command_of_the_pipelines_parses(chain):
    """Each ``kbqa fc detect``/``compose`` of the shipped chains: its config with its ``--set`` overrides, typed."""
    parser = argparse.ArgumentParser()
    fc_tool.register(parser.add_subparsers())
    commands = _fc_commands(chain)
    assert {argv[1] for argv in commands} == {"detect", "compose"}
    for argv in commands:
        args = parser.parse_args(argv)
        raw = fc_tool._config_mapping(args)
        if argv[1] == "detect":
            cfg = parse_detect_config(raw, args.config)
            assert cfg.files and cfg.kb.build_from == [] and cfg.relation_extractor
        else:
            compose = parse_compose_config(raw, args.config)
            assert compose.file and compose.out and compose.resolved_form().tag() in ("paper", "extended")


def test_unknown_keys_wrong_values_and_moved_keys_are_errors_naming_file_and_key():
    for overrides, match in [
        ({"linking.prune_all": True}, "d.yaml: unknown key 'linking.prune_all'"),
        ({"detector.top_k": 3}, "d.yaml: unknown key 'detector'"),
        ({"kb.semantic": "plain"}, r"d.yaml: unknown kb keys \['semantic'\]"),
        ({"skeleton.source": "oracle"}, "d.yaml: skeleton.source must be one of parser, neighbours"),
        ({"pairs.type_match": "any"}, "d.yaml: pairs.type_match must be one of"),
        ({"linking.on_empty": "skip"}, "d.yaml: linking.on_empty must be one of"),
        ({"detection.top_k": "ten"}, "d.yaml: detection.top_k must be int"),
        ({"files": "q.jsonl"}, r"d.yaml: files must be list\[str\]"),
        ({"linking": 3}, "d.yaml: section 'linking' must be a mapping"),
    ]:
        with pytest.raises(UserInputError, match=match):
            parse_detect_config(apply_set_pairs({"kb": {"store": "kb"}}, overrides), "d.yaml")
    with pytest.raises(UserInputError, match="d.yaml: the config needs kb.store"):
        parse_detect_config({"files": ["q.jsonl"]}, "d.yaml")
    for overrides, match in [
        ({"paths.fallback": True}, "c.yaml: paths.fallback is now the 'path_fallback' extension"),
        ({"answer_type.check": True}, "c.yaml: answer_type.check is now the 'answer_type' extension"),
        ({"fill.order": "best"}, "c.yaml: fill.order must be one of skeleton, mean"),
        ({"composition": "vote"}, "c.yaml: composition must be one of"),
        ({"extensions": ["constrained_decoding"]}, "fc does not offer the extensions"),
        ({"form": "fancy"}, "c.yaml: form must be one of"),
        ({"paths.override_margin": "big"}, r"c.yaml: paths.override_margin must be float \| None"),
    ]:
        with pytest.raises(UserInputError, match=match):
            parse_compose_config(apply_set_pairs({"kb": {"store": "kb"}}, overrides), "c.yaml")
    whole = parse_compose_config({"kb": {"store": "kb"}, "paths": {"override_margin": 1}}, "c.yaml")
    assert whole.paths.override_margin == 1  # an int is a float


def test_pairs_ask_sample_reaches_the_pair_checks():
    from kbqa_lit.kb.index.connectivity import ASK_SAMPLE
    from kbqa_lit.kb.lf.ontology import Ontology
    from kbqa_lit.pipelines.fc.config import PairsConfig
    from kbqa_lit.pipelines.fc.pairs import PairBuilder

    assert PairsConfig().ask_sample == ASK_SAMPLE and PairsConfig(ask_sample=None).ask_sample is None
    for bad in (0, -3, True):
        with pytest.raises(UserInputError, match="pairs.ask_sample"):
            PairsConfig(ask_sample=bad)
    builder = PairBuilder(Ontology({}), store=object(), type_match="kb", ask_sample=7)
    assert builder.chains.sample == builder.typed.sample == 7


def test_the_grailqa_chains_put_every_trained_part_on_the_accelerator_variable():
    for accelerator in ("cpu", "gpu"):
        cmds = load_pipeline(CONFIGS / "fc" / "pipeline_grailqa.yaml", {"accelerator": accelerator}).commands()
        trained = [c for c in cmds if c.argv[0] in ("fit", "test")]
        assert len(trained) == 5  # two extractors, the skeleton parser, the composer's fit and test
        assert all(c.argv[c.argv.index("--trainer.accelerator") + 1] == accelerator for c in trained)
        detects = [c for c in cmds if c.argv[:2] == ["fc", "detect"]]
        assert len(detects) == 5 and all(f"device={accelerator}" in c.argv for c in detects)
    top = load_pipeline(CONFIGS / "compare" / "grailqa.yaml", {"accelerator": "gpu"}).commands()
    assert "accelerator=gpu" in next(c for c in top if c.step == "fc").argv
    assert load_pipeline(CONFIGS / "compare" / "grailqa.yaml").vars["accelerator"] == "cpu"


@pytest.mark.parametrize("chain", ["pipeline_grailqa.yaml", "pipeline_grailqa_eval.yaml", "pipeline_synthetic.yaml"])
def test_the_composer_test_step_names_the_detected_training_file(chain):
    # the composer's data module reads the detected training file at test too; left to its default
    # (<data_dir>/../detected/train.jsonl) it is missing wherever the split lives apart from the chain's work folder,
    # as in configs/compare/grailqa.yaml (world: <compare work>/world, detections: <compare work>/fc/detected)
    overrides = {"world": "shared/world"} if chain != "pipeline_grailqa_eval.yaml" else {"parts_world": "shared/world"}
    pipe = load_pipeline(CONFIGS / "fc" / chain, overrides)
    tests = [c for c in pipe.commands() if c.argv[0] == "test"]
    assert tests
    for cmd in tests:
        train_file = cmd.argv[cmd.argv.index("--data.init_args.train_file") + 1]
        assert train_file.endswith("detected/train.jsonl") and not train_file.startswith("shared/world")
