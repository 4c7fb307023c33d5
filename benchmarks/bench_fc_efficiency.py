"""FC-KBQA's time per question per stage against a coarse enumerate-and-rank baseline on the same KB.

Tiny untrained parts (the timing does not depend on what they learnt, only on their sizes and on
what the stages ask the KB) on the synthetic world and its Oxigraph store:

- **FC-KBQA**: detection (BM25 recall, relation and class extractors' top-k), linking (mentions,
  literals, relation-aware pruning: batched ASKs), skeleton parsing (beam search, top-2 rule), pair
  building (class–relation, relation–relation with batched cached two-hop ASKs, relation–entity),
  composition (beam search under the pair constraint, then executing beams until one answers) — or,
  our addition, neighbour skeletons (the real MiniLM: it needs no training) and composition by filling
  them (:class:`~kbqa_lit.pipelines.fc.fill.SkeletonFiller`, executing fillings until one answers;
  ``fc_fill`` in the output, with the same detection, linking and pairs), each
  step as :class:`~kbqa_lit.pipelines.fc.components.ComponentStage` runs it, one question at a time
  (the two-hop ASKs are cached across questions, as in the pipeline);
- **coarse baseline**: the same linker (no pruning), then every one- and two-hop path from each
  linked entity enumerated on the KB (one SPARQL query per entity and path shape) and every path
  ranked as a whole logical form by one cross-encoder (:class:`LogicalFormRanker`), top-1 kept.

Prints JSON: seconds per question per stage, the totals and the ratio baseline / FC-KBQA, and the
baseline's candidates per question. No assertions.

    OMP_NUM_THREADS=1 python benchmarks/bench_fc_efficiency.py [--questions 30] [--size small] [--beams 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from kbqa_lit.backbones.encoders import build_encoder_tokenizer
from kbqa_lit.data.fc.composer_examples import Components
from kbqa_lit.data.fc.literals import detect_literals
from kbqa_lit.data.fc.skeletons import mask_mentions, top2_skeletons
from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.datamodules.fc.composer import ComposerDataModule
from kbqa_lit.datamodules.fc.extractors import ExtractorDataModule
from kbqa_lit.datamodules.fc.skeleton import SkeletonParserDataModule
from kbqa_lit.kb.index.entity_index import EntityIndex
from kbqa_lit.kb.index.relation_inventory import is_fact_relation
from kbqa_lit.kb.lf.iri import iri
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.modules.fc.extractor import ComponentExtractor
from kbqa_lit.modules.fc.lf_ranker import LogicalFormRanker
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from kbqa_lit.pipelines.fc.compose import ComposerStage
from kbqa_lit.pipelines.fc.detection import ComponentDetector
from kbqa_lit.pipelines.fc.fill import SkeletonFiller
from kbqa_lit.pipelines.fc.generation import generate_beams
from kbqa_lit.pipelines.fc.linking import FCEntityLinker, IndexMentionLinker
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from kbqa_lit.pipelines.fc.skeleton_neighbours import NeighbourSkeletons
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector

BERT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}
T5 = {"d_model": 128, "d_ff": 256, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4, "d_kv": 32}
#: Path shapes from a linked entity ``e``: (SPARQL pattern, S-expression template), ``?r1``/``?r2`` the relations.
SHAPES = (
    ("<E> ?r1 ?y", "(JOIN (R {r1}) {e})"),
    ("?y ?r1 <E>", "(JOIN {r1} {e})"),
    ("<E> ?r1 ?m . ?m ?r2 ?y FILTER(?y != <E>)", "(JOIN (R {r2}) (JOIN (R {r1}) {e}))"),
    ("<E> ?r1 ?m . ?y ?r2 ?m FILTER(?y != <E>)", "(JOIN {r2} (JOIN (R {r1}) {e}))"),
    ("?m ?r1 <E> . ?m ?r2 ?y FILTER(?y != <E>)", "(JOIN (R {r2}) (JOIN {r1} {e}))"),
    ("?m ?r1 <E> . ?y ?r2 ?m FILTER(?y != <E>)", "(JOIN {r2} (JOIN {r1} {e}))"),
)


def enumerate_paths(store: Any, entity: str) -> list[str]:
    """Every one- and two-hop path form from ``entity`` on the KB (one query per shape)."""
    forms: list[str] = []
    for pattern, template in SHAPES:
        where = pattern.replace("<E>", f"<{iri(entity)}>")
        two = "?r2" in pattern
        key = 'CONCAT(STR(?r1), "\\t", STR(?r2))' if two else "STR(?r1)"
        result = store.execute(f"SELECT DISTINCT ?k WHERE {{ {where} BIND({key} AS ?k) }}")
        for value in result.answers if result.ok else []:
            rels = [v.rsplit("/", 1)[-1] for v in value.split("\t")]
            if all(is_fact_relation(r) for r in rels):
                forms.append(template.format(r1=rels[0], r2=rels[-1], e=entity))
    return forms


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def build_parts(world: Path, store: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Tiny untrained FC parts and the baseline's ranker, as the pipeline would hold them."""
    torch.manual_seed(0)
    rel_dm = ExtractorDataModule(data_dir=str(world), tokenizer_name_or_path=None)
    cls_dm = ExtractorDataModule(kind="class", data_dir=str(world), tokenizer_name_or_path=None)
    rel = ComponentExtractor("relation", encoder_name_or_path=None, encoder_config=BERT, tokenizer=rel_dm.tokenizer)
    rel.set_ontology(rel_dm.ontology)
    cls = ComponentExtractor("class", encoder_name_or_path=None, encoder_config=BERT, tokenizer=cls_dm.tokenizer)
    detector = ComponentDetector(rel, rel_dm.inventory, cls, list(cls_dm.inventory.relations), 100, 10)
    index = EntityIndex.for_store(store)
    sk_dm = SkeletonParserDataModule(data_dir=str(world), vocab_size=1000)
    co_dm = ComposerDataModule(
        data_dir=str(world), vocab_size=2000, oracle="components", train_components="gold+distractors"
    )
    texts = [ex.question for ex in read_jsonl(world / "train.jsonl")]
    ranker_tok = build_encoder_tokenizer(None, train_texts=texts + rel_dm.inventory.texts, vocab_size=2000)
    return {
        "detector": detector,
        "linker": FCEntityLinker(IndexMentionLinker(index), store, top_k=10),
        "plain_linker": FCEntityLinker(IndexMentionLinker(index), None),
        "pairs": PairBuilder(rel_dm.ontology, store, type_match="kb"),
        "parser": MultitaskGenerator(model_config=T5, tokenizer=sk_dm.tokenizer, alpha=0.0).eval(),
        "composer": ComposerStage(
            MultitaskGenerator(model_config=T5, tokenizer=co_dm.tokenizer, alpha=0.0).eval(),
            store,
            num_beams=args.beams,
            max_new_tokens=96,
            max_input_words=240,
        ),
        "neighbours": NeighbourSkeletons([world / "train.jsonl"]),
        "ranker": LogicalFormRanker(encoder_name_or_path=None, encoder_config=BERT, tokenizer=ranker_tok).eval(),
    }


def run(examples: list[Any], parts: dict[str, Any], store: Any) -> dict[str, Any]:
    """Seconds per question per stage of FC-KBQA and of the baseline."""
    fc = {"detection": 0.0, "linking": 0.0, "skeleton": 0.0, "pairs": 0.0, "composition": 0.0}
    components, filled = [], []
    neighbour_time = 0.0
    for ex in examples:
        found, t = _timed(parts["detector"].detect, ex.question)
        fc["detection"] += t
        link, t = _timed(parts["linker"].link, ex.question, [r for r, _ in found.relations])
        fc["linking"] += t
        masked = mask_mentions(ex.question, [e.mention for e in link.entities])
        beams, t = _timed(generate_beams, parts["parser"], [masked], 4, 48)
        skeletons = top2_skeletons(beams[0])
        fc["skeleton"] += t
        pairs, t = _timed(parts["pairs"].build, found.classes, found.relations, link.entities, skeletons)
        fc["pairs"] += t
        entities = {e.id: e.label or e.mention for e in link.entities}
        rels, classes = [r for r, _ in found.relations], [c for c, _ in found.classes]
        rel_scores, class_scores = [x for _, x in found.relations], [x for _, x in found.classes]
        components.append(Components(pairs.all, entities, skeletons, rels, classes, rel_scores, class_scores))
        ranked, t = _timed(parts["neighbours"].beams, [masked])
        neighbour_time += t
        nb = Components(pairs.all, entities, top2_skeletons(ranked[0]), rels, classes, rel_scores, class_scores)
        nb.skeleton_beams = ranked[0]
        filled.append(nb)
    _, fc["composition"] = _timed(parts["composer"].answer, examples, components)
    filler, selector = SkeletonFiller(), ExecutionGuidedSelector(store, max_beams=100)
    start = time.perf_counter()
    for ex, comp in zip(examples, filled, strict=True):
        fillings = filler.fillings(comp, detect_literals(ex.question))
        selector.select([f.sexpr for f in fillings], semantics=ex.semantics, label_to_ids={})
    fill = time.perf_counter() - start
    base = {"linking": 0.0, "enumeration": 0.0, "ranking": 0.0}
    sizes = []
    for ex in examples:
        link, t = _timed(parts["plain_linker"].link, ex.question, [])
        base["linking"] += t
        start = time.perf_counter()
        forms = [f for e in link.entities for f in enumerate_paths(store, e.id)]
        base["enumeration"] += time.perf_counter() - start
        labels = {e.id: e.label or e.mention for e in link.entities}
        if forms:
            _, t = _timed(parts["ranker"].score, ex.question, [normalize_sexpr(f, labels) for f in forms])
            base["ranking"] += t
        sizes.append(len(forms))
    n = len(examples)
    per_fc = {k: round(v / n, 4) for k, v in fc.items()}
    per_base = {k: round(v / n, 4) for k, v in base.items()}
    total_fc, total_base = sum(fc.values()) / n, sum(base.values()) / n
    total_fill = (sum(fc.values()) - fc["composition"] - fc["skeleton"] + neighbour_time + fill) / n
    return {
        "questions": n,
        "fc_seconds_per_question": {**per_fc, "total": round(total_fc, 4)},
        "fc_fill_seconds_per_question": {
            "skeleton_neighbours": round(neighbour_time / n, 4),
            "fill": round(fill / n, 4),
            "total": round(total_fill, 4),
        },
        "baseline_over_fc_fill": round(total_base / total_fill, 3),
        "baseline_seconds_per_question": {**per_base, "total": round(total_base, 4)},
        "baseline_over_fc": round(total_base / total_fc, 3),
        "baseline_candidates": {"median": statistics.median(sizes), "max": max(sizes)},
    }


def main() -> None:
    """Build the world, the store and the parts; time both systems; print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="small", choices=["small", "medium", "large"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--questions", type=int, default=30, help="test questions timed")
    parser.add_argument("--beams", type=int, default=10, help="composer beams (composer.yaml: 10; GPU config: 50)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        build_world(world, args.seed, args.size)
        build_store(Path(tmp) / "kb", [world / "kb.nt"], "nt")
        store = open_store(Path(tmp) / "kb")
        try:
            parts = build_parts(world, store, args)
            examples = list(read_jsonl(world / "test.jsonl"))[: args.questions]
            report = run(examples, parts, store)
        finally:
            store.close()
    print(json.dumps({"settings": vars(args), **report}, indent=2))


if __name__ == "__main__":
    main()
