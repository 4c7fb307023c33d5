from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.data.coq.generator_inputs import example_patterns
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.kb.store import open_store
from kbqa_lit.lightning_cli import build_cli
from kbqa_lit.pipelines.coq.pattern_writer import PatternWriter, refine
from kbqa_lit.pipelines.coq.patterns import ask_query
from kbqa_lit.pipelines.coq.stage_figures import figure_metrics, schema_stage_figures

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "coq" / "schema_classifier.yaml"


def test_refine_keeps_items_above_threshold_best_first() -> None:
    scored = [["a", 0.2], ["b", 0.9], ["c", 0.6], ["d", 0.1]]
    assert refine(scored, 0.5) == [["b", 0.9], ["c", 0.6]]
    assert refine(scored, 0.95) == []
    assert refine(scored, 0.95, min_refined=1) == [["b", 0.9]]


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode"):
        PatternWriter(mode="best")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("writer")
    build_world(root / "w", seed=0)
    data = root / "data"
    data.mkdir()
    for name in ("kb.nt", "schema.json"):
        (data / name).write_bytes((root / "w" / name).read_bytes())
    write_jsonl(list(read_jsonl(root / "w" / "train.jsonl"))[:10], data / "train.jsonl")
    write_jsonl(list(read_jsonl(root / "w" / "dev.jsonl"))[:4], data / "dev.jsonl")
    examples = list(read_jsonl(root / "w" / "test.jsonl"))[:5]
    examples[0].meta["note"] = "kept"
    write_jsonl(examples, data / "test.jsonl")
    return data


def test_kbqa_predict_writes_the_contract_fields(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "patterns.jsonl"
    args = [
        "predict",
        "--config",
        str(CONFIG),
        f"--data.init_args.data_dir={data_dir}",
        "--data.init_args.synthetic_seed=null",
        "--data.init_args.vocab_size=300",
        "--data.init_args.predict_batch_size=2",
        "--data.init_args.candidates=sampled",  # the raw world has no retrieved candidates
        "--model.init_args.model_config={d_model: 32, d_ff: 64, num_layers: 1, num_heads: 2, d_kv: 16}",
        "--model.init_args.threshold=0.3",
        f"--trainer.default_root_dir={tmp_path}",
        "--trainer.logger=lightning.pytorch.loggers.CSVLogger",
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        "--trainer.enable_progress_bar=false",
        f"--trainer.callbacks.init_args.out={out}",
        "--trainer.callbacks.init_args.top_k=3",
    ]
    cli = build_cli(args, run=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    source = [json.loads(line) for line in (data_dir / "test.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in rows] == [s["qid"] for s in source]
    store = open_store(data_dir / "kb_store")
    for row, src in zip(rows, source, strict=True):
        meta = row["meta"]
        for key in ("question", "answers", "s_expression", "decomposition", "topic_entities"):
            assert row[key] == src[key]
        assert all(meta[k] == v for k, v in src["meta"].items())
        rels, ents, pats = meta["refined_relations"], meta["refined_entities"], meta["patterns"]
        assert rels and ents  # at least the best of each (min_refined 1)
        for items in (rels, ents):
            probs = [p for _, p in items]
            assert probs == sorted(probs, reverse=True) and all(0.0 <= p <= 1.0 for p in probs)
            assert all(p >= 0.3 for p in probs[1:])
        assert len(pats) <= 3
        refined_e = {e for e, _ in ents}
        ents_all = set(meta.get("entity_candidates") or {})
        for p in pats:
            assert set(p) == {"relation", "entity", "label", "score"}
            # pairs: candidates (the default) — any candidate pair, not only refined ones
            assert p["entity"] in refined_e or p["entity"] in ents_all
            assert store.execute(ask_query(p["relation"], p["entity"])).answers == ["true"]
        assert [p["score"] for p in pats] == sorted((p["score"] for p in pats), reverse=True)
    assert rows[0]["meta"]["note"] == "kept"
    assert any(row["meta"]["patterns"] for row in rows)
    # the generator's datamodule reads them back
    written = list(read_jsonl(out))
    rendered = [example_patterns(ex, "predicted") for ex in written]
    assert [len(r) for r in rendered] == [len(row["meta"]["patterns"]) for row in rows]
    assert all(p.startswith("[ ") and " , " in p for r in rendered for p in r)
    # and the writer logged the end-to-end figures of what it wrote
    writer = next(c for c in cli.trainer.callbacks if isinstance(c, PatternWriter))
    assert writer.figures == schema_stage_figures(written)
    assert writer.figures["questions"] == len(rows) and writer.figures["relations"]["gold"] > 0
    logged = (next(tmp_path.glob("**/metrics.csv"))).read_text().splitlines()
    header, values = logged[0].split(","), logged[-1].split(",")
    metrics = {k: float(v) for k, v in zip(header, values, strict=True) if v and k != "step"}
    assert metrics == figure_metrics(writer.figures)
