"""CoQ steps 2b-3 read no gold: ``kbqa predict`` of the schema classifier with the ``PatternWriter``
(the pipeline's stage config, ``candidates: meta``) on a file stripped of its gold fields gives the same
item probabilities, refined relations and entities and patterns as on the full file.

The input is what the retrieval stage writes (``kbqa retrieve entities``, and BM25-ranked relation
candidates standing in for the cross-encoder's); the full file's rows also carry gold and
gold-source decompositions, gold-form entity labels and the world's annotations. The classifier is
a one-layer T5 encoder that ``kbqa fit`` trains for three steps; the KB is a real Oxigraph store. The
last test runs CoQ's generator stage (``kbqa test``, untrained) on the written rows.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.cli import main
from kbqa_lit.data.schema import read_jsonl, write_jsonl
from kbqa_lit.kb.index.relation_inventory import BM25RelationRanker, load_inventory
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.lightning_cli import build_cli
from kbqa_lit.pipelines.coq.pattern_writer import PatternWriter
from tests.helpers.no_gold import assert_same_predictions, stage_world, write_full_and_stripped
from tests.helpers.tiny import ONE_LAYER_T5

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "coq" / "pipeline" / "classifier.yaml"
GENERATOR = CONFIG.parent / "generator.yaml"
VOCAB = 300


def _retrieved(src: Path, out: Path, store: Path, bm25: BM25RelationRanker) -> None:
    """The retrieval stage's output: linked entities (the real tool) and top-10 relation candidates."""
    code = main(["retrieve", "entities", "--store", str(store), "--input", str(src), "--out", str(out), "--top-l", "5"])
    assert code == 0
    rows = [
        dataclasses.replace(
            ex, meta={**ex.meta, "relation_candidates": [[r, round(s, 4)] for r, s in bm25.rank(ex.question, 10)]}
        )
        for ex in read_jsonl(out)
    ]
    write_jsonl(rows, out)


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("patterns_nogold")
    data = stage_world(root, n_train=12, n_test=6)
    store = root / "kb"
    build_store(store, [data / "kb.nt"], "nt")
    bm25 = BM25RelationRanker(load_inventory(store), top_n=None)
    cands = root / "candidates"
    cands.mkdir()
    shutil.copyfile(data / "schema.json", cands / "schema.json")
    for name in ("train.jsonl", "dev.jsonl", "test.jsonl"):
        _retrieved(data / name, cands / name, store, bm25)
    full, stripped = write_full_and_stripped(list(read_jsonl(cands / "test.jsonl")), root, "test.jsonl")
    # kbqa fit with the stage's config for a few steps, then kbqa predict reads its checkpoint
    work = root / "classifier"
    build_cli(
        [
            "fit",
            *_args(cands, store, work),
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=3",
            "--trainer.limit_val_batches=0",
            "--trainer.log_every_n_steps=1",
        ],
        run=True,
    )
    ckpt = work / "logs" / "run" / "checkpoints" / "last.ckpt"
    return {"root": root, "store": store, "cands": cands, "ckpt": ckpt, "full": full, "stripped": stripped}


def _flow(config: dict) -> str:
    """``config``'s items as YAML flow-mapping entries (a command-line dict override)."""
    return ", ".join(f"{k}: {v}" for k, v in config.items())


def _args(cands: Path, store: Path, work: Path) -> list[str]:
    """The stage's config with a tiny encoder and tokenizer, on these files, writing under ``work``."""
    return [
        "--config", str(CONFIG), f"--data.init_args.data_dir={cands}", f"--data.init_args.store={store}",
        f"--data.init_args.vocab_size={VOCAB}", "--data.init_args.batch_size=16",
        "--data.init_args.predict_batch_size=4", f"--model.init_args.model_config={{{_flow(ONE_LAYER_T5)}}}",
        f"--trainer.default_root_dir={work}", f"--trainer.logger.init_args.save_dir={work}",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
    ]  # fmt: skip


def _predict(stage: dict[str, Path], name: str) -> tuple[list, Path, PatternWriter]:
    out = stage["root"] / "patterns" / f"{name}.jsonl"
    work = stage["root"] / f"predict_{name}"
    cli = build_cli(
        ["predict", *_args(stage["cands"], stage["store"], work), "--ckpt_path", str(stage["ckpt"]),
         f"--data.init_args.predict_file={stage[name]}", f"--trainer.callbacks.init_args.out={out}"],
        run=True,
    )  # fmt: skip
    writer = next(c for c in cli.trainer.callbacks if isinstance(c, PatternWriter))
    return [rec for batch in cli.trainer.predict_loop.predictions for rec in batch], out, writer


@pytest.fixture(scope="module")
def predicted(stage: dict[str, Path]) -> dict[str, tuple[list, Path, PatternWriter]]:
    return {name: _predict(stage, name) for name in ("full", "stripped")}  # the stripped file does not crash it


def test_classifier_scores_read_no_gold(predicted) -> None:
    (full, _, _), (stripped, _, _) = predicted["full"], predicted["stripped"]
    assert stripped == full  # every candidate's probability, label and listed relations, exactly
    assert len(full) == 6
    probs = [p for rec in full for _, p in rec["relations"] + rec["entities"]]
    assert probs and len(set(probs)) > len(full)  # real scores, not a constant
    assert sum(bool(rec["entities"]) for rec in full) >= 5  # linked entities were scored


def test_pattern_writer_reads_no_gold(predicted, stage) -> None:
    (_, full_out, full_w), (_, stripped_out, stripped_w) = predicted["full"], predicted["stripped"]
    assert_same_predictions(full_out, stripped_out)
    rows = list(read_jsonl(stripped_out))
    assert all(r.meta["refined_relations"] and r.meta["patterns_mode"] == "scored" for r in rows)
    assert sum(bool(r.meta["refined_entities"]) for r in rows) >= 5
    patterns = [p for r in rows for p in r.meta["patterns"]]
    assert len(patterns) >= 3 and len({p["score"] for p in patterns}) > 1  # KB-connected, scored pairs
    assert all(p["label"] != "Gold Only Person" for p in patterns)
    # gold only scores the stage: the full file's figures count gold items, the stripped file has none
    assert full_w.figures["relations"]["gold"] > 0 and stripped_w.figures["relations"]["gold"] == 0


def test_generator_on_the_written_patterns_reads_no_gold(predicted, stage) -> None:
    """CoQ step 4 on the writer's rows (``kbqa test`` with the stage's config: ``patterns: predicted``,
    the predicted decompositions, linking from the refined entities): the same beams and answers."""
    outs = {}
    for name in ("full", "stripped"):
        data = stage["root"] / f"generator_{name}"
        data.mkdir()
        # the tokenizer's texts (patterns: predicted wants written patterns in training rows too): the same
        # file, the full one, in both runs
        shutil.copyfile(predicted["full"][1], data / "train.jsonl")
        shutil.copyfile(predicted[name][1], data / "test.jsonl")
        cli = build_cli(
            ["test", "--config", str(GENERATOR), f"--data.init_args.data_dir={data}",
             f"--data.init_args.vocab_size={VOCAB}",
             f"--model.init_args.model_config={{{_flow(ONE_LAYER_T5)}, num_decoder_layers: 1}}",
             f"--trainer.default_root_dir={data}", f"--trainer.logger.init_args.save_dir={data}",
             "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
             f"--trainer.callbacks.init_args.store={stage['store']}", "--trainer.callbacks.init_args.num_beams=2",
             "--trainer.callbacks.init_args.max_new_tokens=8"],
            run=True,
        )  # fmt: skip
        outs[name] = next(c for c in cli.trainer.callbacks if isinstance(c, ExecutionGuidedEval)).last_rows
    keys = ("qid", "beams", "chosen_sexpr", "answers", "linked", "linking")
    full, stripped = ([[r[k] for k in keys] for r in outs[n]] for n in ("full", "stripped"))
    assert stripped == full and len(full) == 6
    assert all(r["linking"] == "predicted" and r["linked"] for r in outs["full"])  # the refined entities
    assert any(b for r in outs["full"] for b in r["beams"])  # the untrained generator still writes beams
