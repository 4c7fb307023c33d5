"""Example files without their gold fields, for the "no gold at predict time" tests of each stage.

A stage's predict path may read the question, dataset-level settings (``meta["semantics"]``...) and
what earlier stages predicted (candidates, refined items, patterns, a decomposition an LLM wrote);
never the answer key. :func:`strip_gold` drops the answer key from an example; a stage passes when
its output on the stripped file is its output on the full file, stripped the same way
(:func:`assert_same_predictions`): its predictions are identical, and it echoes no gold field it
was not given. ``tests/callbacks/test_no_gold_at_test.py`` (the generator and the execution-guided
callback) strips its test files with it too.

:func:`stage_world` writes a small cut of the synthetic world whose test rows carry every kind of
gold a stage could trip on: the dataset's own decompositions (ending with the gold answers),
``kbqa decompose --source gold`` rows with the gold relations in their ``[SCHEMA]`` part (an
oracle), gold-form entity labels a linker could never produce, and the world's annotations
(template, hops, generalization); a third of the rows carry an LLM-style predicted decomposition
(status ``ok``), which is a prediction and stays.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from kbqa_lit.data.schema import KBQAExample, read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.kb.lf.normalize import schema_to_words
from kbqa_lit.kb.lf.sexpr import schema_items
from kbqa_lit.pipelines.coq.decomposition.parser import parse_decomposition, render_schema
from kbqa_lit.pipelines.coq.decomposition.variants import gold_decomposition, write_fields

#: Meta a predict-time input may carry: dataset-level settings and earlier stages' predictions.
#: Every other key (``entity_labels``, ``parses``, ``answers_by_name``, ``gold_patterns``, the
#: synthetic world's ``template``/``hops``/``generalization``...) is gold meta.
INPUT_META_KEYS = frozenset(
    {
        "dataset",
        "semantics",
        "split",
        "linking",
        # CoQ step 1 (a predicted decomposition's fields; dropped for a gold-source one)
        "decomposition_schema",
        "decomposition_status",
        "decomposition_error",
        "decomposition_variant",
        # step 2a
        "entity_candidates",
        "entity_candidate_scores",
        "entity_relations",
        "relation_candidates",
        # steps 2b-3 (patterns dropped when written by the oracle mode)
        "refined_relations",
        "refined_entities",
        "patterns",
        "patterns_mode",
        # FC-KBQA (the pipeline's detected pairs, entities, skeletons and mentions)
        "fc",
    }
)
#: ``meta["decomposition_status"]`` of a decomposition a predictor (an LLM) wrote.
PREDICTED_STATUS = "ok"
#: A gold-form label no linker produces (``meta["entity_labels"]`` of the test rows).
GOLD_ONLY_LABELS = {"m.gold_only": "Gold Only Person"}


def strip_gold(ex: KBQAExample, keep_answers: bool = False) -> KBQAExample:
    """``ex`` without its answer key: gold answers (unless ``keep_answers``), S-expression, SPARQL,
    topic entities, a decomposition no predictor wrote, and every gold meta key."""
    status = ex.meta.get("decomposition_status")
    meta = {k: v for k, v in ex.meta.items() if k in INPUT_META_KEYS}
    if status == "gold":  # kbqa decompose --source gold: an annotation, schema included
        meta = {k: v for k, v in meta.items() if not k.startswith("decomposition_")}
    if meta.get("patterns_mode") == "oracle":
        meta = {k: v for k, v in meta.items() if k not in ("patterns", "patterns_mode")}
    return dataclasses.replace(
        ex,
        answers=list(ex.answers) if keep_answers else [],
        topic_entities={},
        s_expression=None,
        sparql=None,
        decomposition=ex.decomposition if status == PREDICTED_STATUS else None,
        meta=meta,
    )


def is_stripped(ex: KBQAExample) -> bool:
    """Whether ``ex`` carries no gold field (answers aside)."""
    return strip_gold(ex, keep_answers=True) == ex


def write_full_and_stripped(rows: Sequence[KBQAExample], folder: Path, name: str) -> tuple[Path, Path]:
    """Write ``rows`` to ``folder/full/name`` and their stripped copies to ``folder/stripped/name``."""
    full, stripped = folder / "full" / name, folder / "stripped" / name
    for path in (full, stripped):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(rows, full)
    write_jsonl([strip_gold(ex) for ex in rows], stripped)
    assert all(is_stripped(ex) for ex in read_jsonl(stripped))
    return full, stripped


def assert_same_predictions(full_out: Path | Iterable[KBQAExample], stripped_out: Path | Iterable[KBQAExample]) -> None:
    """The stage's output rows on the stripped file are its output rows on the full file, stripped.

    Compares whole rows: every prediction the stage wrote must be identical (floats included), and
    the stripped run's rows must carry no gold field.
    """
    full = list(read_jsonl(full_out)) if isinstance(full_out, Path) else list(full_out)
    stripped = list(read_jsonl(stripped_out)) if isinstance(stripped_out, Path) else list(stripped_out)
    assert [ex.qid for ex in stripped] == [ex.qid for ex in full]
    for f, s in zip(full, stripped, strict=True):
        assert strip_gold(f) == s, f"{f.qid}: the predictions differ, or the stripped run wrote a gold field"


def predicted_decomposition(ex: KBQAExample) -> KBQAExample:
    """``ex`` with an LLM-style predicted decomposition (status ``ok``): its chain, and a
    ``[SCHEMA]`` part naming its topic entities and its relations in words."""
    relations = [schema_to_words(r) for r in schema_items(ex.s_expression or "").relations]
    text = f"{ex.decomposition} {render_schema(list(ex.topic_entities.values()), relations)}"
    parsed = parse_decomposition(text, ex.question)
    assert parsed.ok, parsed.error
    return write_fields(dataclasses.replace(ex, meta=dict(ex.meta)), parsed, variant="full", status=PREDICTED_STATUS)


def with_gold_extras(rows: Sequence[KBQAExample]) -> list[KBQAExample]:
    """Test rows with every kind of gold a stage could read (see the module docstring)."""
    out = []
    for i, ex in enumerate(rows):
        ex = dataclasses.replace(ex, meta={**ex.meta, "entity_labels": dict(GOLD_ONLY_LABELS)})
        if ex.decomposition and i % 3 == 0:
            ex = predicted_decomposition(ex)
        elif ex.decomposition and i % 3 == 1:  # kbqa decompose --source gold with gold_relations: an oracle
            ex = write_fields(ex, gold_decomposition(ex, with_relations=True), variant="full", status="gold")
        out.append(ex)
    return out


def stage_world(root: Path, n_train: int = 10, n_dev: int = 4, n_test: int = 6) -> Path:
    """A small cut of the synthetic world (seed 0) in ``root/data``: ``kb.nt``, ``schema.json``, the
    split files (test rows :func:`with_gold_extras`). Returns the data folder."""
    world, data = root / "world", root / "data"
    build_world(world, seed=0)
    data.mkdir(parents=True, exist_ok=True)
    for name in ("kb.nt", "schema.json"):
        shutil.copyfile(world / name, data / name)
    write_jsonl(list(read_jsonl(world / "train.jsonl"))[:n_train], data / "train.jsonl")
    write_jsonl(list(read_jsonl(world / "dev.jsonl"))[:n_dev], data / "dev.jsonl")
    write_jsonl(with_gold_extras(list(read_jsonl(world / "test.jsonl"))[:n_test]), data / "test.jsonl")
    return data


__all__ = [
    "GOLD_ONLY_LABELS",
    "INPUT_META_KEYS",
    "PREDICTED_STATUS",
    "assert_same_predictions",
    "is_stripped",
    "predicted_decomposition",
    "stage_world",
    "strip_gold",
    "with_gold_extras",
    "write_full_and_stripped",
]
