"""``kbqa retrieve entities|relations`` in-process through kbqa_lit.cli.main: the contract fields."""

from __future__ import annotations

import json

import lightning as L
import pytest

from kbqa_lit.cli import main
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.relation_retrieval import RelationRetrievalDataModule
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.modules.cross_encoder import CrossEncoderRetriever
from tests.helpers.foreign_checkpoints import write_foreign_checkpoint, write_not_a_checkpoint


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("rt")
    build_world(root / "world", seed=0, size="small")
    build_store(root / "store", [root / "world" / "kb.nt"], "nt")
    lines = (root / "world" / "test.jsonl").read_text().splitlines()[:20]
    (root / "in.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _summary(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_entities_writes_contract_fields(world, capsys):
    out = world / "ent.jsonl"
    rc = main(
        [
            "retrieve",
            "entities",
            "--store",
            str(world / "store"),
            "--input",
            str(world / "in.jsonl"),
            "--out",
            str(out),
            "--top-l",
            "5",
        ]
    )
    assert rc == 0
    summary = _summary(capsys)
    assert summary["examples"] == 20 and summary["recall@5"] >= 0.9 and summary["recall@1"] <= summary["recall@5"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for row in rows:
        meta = row["meta"]
        cands, scores, rels = meta["entity_candidates"], meta["entity_candidate_scores"], meta["entity_relations"]
        assert list(cands) == list(scores) == list(rels) and len(cands) <= 5
        assert all(isinstance(v, list) for v in rels.values())
    hit = next(r for r in rows if set(r["topic_entities"]) & set(r["meta"]["entity_candidates"]))
    eid = next(iter(set(hit["topic_entities"]) & set(hit["meta"]["entity_candidates"])))
    assert hit["meta"]["entity_candidates"][eid] == hit["topic_entities"][eid]
    assert hit["meta"]["entity_relations"][eid]


def test_relations_writes_contract_fields(world, tmp_path, capsys):
    dm = RelationRetrievalDataModule(data_dir=str(world / "world"), tokenizer_name_or_path=None, num_negatives=3)
    model = CrossEncoderRetriever(None, {"hidden_size": 32, "intermediate_size": 64}, tokenizer=dm.tokenizer)
    trainer = L.Trainer(
        max_steps=2,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, datamodule=dm)
    ckpt = tmp_path / "ce.ckpt"
    trainer.save_checkpoint(ckpt)
    out = tmp_path / "rel.jsonl"
    rc = main(
        [
            "retrieve",
            "relations",
            "--checkpoint",
            str(ckpt),
            "--store",
            str(world / "store"),
            "--input",
            str(world / "in.jsonl"),
            "--out",
            str(out),
            "--top-l",
            "10",
            "--bm25-top",
            "20",
        ]
    )
    assert rc == 0
    summary = _summary(capsys)
    assert summary["examples"] == 20 and summary["inventory"] == len(dm.inventory) and "recall@10" in summary
    for line in out.read_text().splitlines():
        cands = json.loads(line)["meta"]["relation_candidates"]
        assert len(cands) == 10 and all(r in dm.inventory for r, _ in cands)
        assert [s for _, s in cands] == sorted((s for _, s in cands), reverse=True)


def test_bad_input_is_a_clean_error(world, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    rc = main(
        ["retrieve", "entities", "--store", str(world / "store"), "--input", str(bad), "--out", str(tmp_path / "o")]
    )
    assert rc == 2 and "bad.jsonl:1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    rc = main(
        [
            "retrieve",
            "relations",
            "--checkpoint",
            str(tmp_path / "none.ckpt"),
            "--store",
            str(world / "store"),
            "--input",
            str(world / "in.jsonl"),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert rc == 2 and "no checkpoint file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("write", "what"),
    [
        (write_not_a_checkpoint, "is not a Lightning checkpoint"),
        (write_foreign_checkpoint, "is a Lightning checkpoint of another module (hyper-parameters width)"),
    ],
)
def test_relations_on_a_file_that_is_not_a_retriever_checkpoint(world, tmp_path, capsys, write, what):
    ckpt = write(tmp_path / "model.ckpt")
    args = ["retrieve", "relations", "--checkpoint", str(ckpt), "--store", str(world / "store")]
    rc = main([*args, "--input", str(world / "in.jsonl"), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"kbqa retrieve: error: {ckpt} {what}")
    assert "expected a CrossEncoderRetriever checkpoint (kbqa fit --config configs/coq/relation_retriever.yaml" in err
    assert not (tmp_path / "o.jsonl").exists()
