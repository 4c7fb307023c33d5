"""Build the synthetic world: the KB, its schema and the train/dev/test questions, in one call.

:func:`build_world` writes, into ``out_dir``:

- ``kb.nt``: the knowledge base as sorted N-Triples under ``http://rdf.freebase.com/ns/``;
- ``schema.json``: domains, classes, relations and reverse-property pairs;
- ``train.jsonl``, ``dev.jsonl``, ``test.jsonl``: :class:`~kbqa_lit.data.schema.KBQAExample`
  lines whose gold answers come from executing the gold S-expression on an Oxigraph store built
  from ``kb.nt``.

Everything is drawn from one ``random.Random(seed)``; outputs are sorted and carry no timestamps,
so one seed and size give byte-identical files on every machine, and other seeds other worlds.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from kbqa_lit.data.schema import KBQAExample, write_jsonl
from kbqa_lit.data.synthetic.catalog import HELDOUT_TEMPLATES, IID_TEMPLATES
from kbqa_lit.data.synthetic.execution import StoreExecutor
from kbqa_lit.data.synthetic.generate import generate_world
from kbqa_lit.data.synthetic.kb import World
from kbqa_lit.data.synthetic.questions import Executor, QuestionMaker
from kbqa_lit.data.synthetic.sizes import SizeSpec, size_spec
from kbqa_lit.data.synthetic.splits import LEVELS, SPLITS, assign_splits
from kbqa_lit.data.synthetic.world_schema import schema_document

KB_FILE = "kb.nt"
SCHEMA_FILE = "schema.json"


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.replace(path)


def build_world(out_dir: str | Path, seed: int = 0, size: str = "small") -> dict[str, Any]:
    """Write the synthetic world (KB, schema, questions) into ``out_dir``.

    Args:
        out_dir: Output folder (created if needed; the world's files are overwritten).
        seed: Random seed; the same seed and size give byte-identical files.
        size: ``"small"`` (a few hundred questions per split), ``"medium"`` (about 4×) or
            ``"large"`` (about 16×).

    Returns:
        ``{"out", "seed", "size", "triples", "entities", "cvt_nodes", "questions": {"train",
        "dev", "test"}, "test_generalization": {"iid", "compositional", "zero-shot"},
        "templates", "queries", "seconds"}``.

    Raises:
        UserInputError: For an unknown size.
        GoldExecutionError: When a gold S-expression does not execute (a bug, never expected).
    """
    start = time.perf_counter()
    spec = size_spec(size)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    world = generate_world(rng, spec)
    kb_path = out / KB_FILE
    _write_text(kb_path, world.ntriples())
    _write_text(out / SCHEMA_FILE, json.dumps(schema_document(), indent=2, ensure_ascii=False) + "\n")
    with StoreExecutor(kb_path) as execute:
        splits = make_questions(world, rng, spec, execute)
        queries = execute.queries
    counts = {}
    for split in SPLITS:
        counts[split] = write_jsonl(splits[split], out / f"{split}.jsonl")
    levels = dict.fromkeys(LEVELS, 0)
    for ex in splits["test"]:
        levels[ex.meta["generalization"]] += 1
    stats = world.stats()
    return {
        "out": str(out),
        "seed": seed,
        "size": size,
        "triples": stats["triples"],
        "entities": stats["entities"],
        "cvt_nodes": stats["cvt_nodes"],
        "questions": counts,
        "test_generalization": levels,
        "templates": len(IID_TEMPLATES) + len(HELDOUT_TEMPLATES),
        "queries": queries,
        "seconds": round(time.perf_counter() - start, 3),
    }


def make_questions(world: World, rng: random.Random, spec: SizeSpec, execute: Executor) -> dict[str, list[KBQAExample]]:
    """Generate, execute and split every question of a world.

    Args:
        world: The generated :class:`~kbqa_lit.data.synthetic.kb.World`.
        rng: The world's seeded generator (continues the sequence that built the world).
        spec: The :class:`~kbqa_lit.data.synthetic.sizes.SizeSpec`.
        execute: Runs a gold S-expression on the store built from the world's ``kb.nt``.

    Returns:
        ``{"train": [...], "dev": [...], "test": [...]}`` of examples.
    """
    maker = QuestionMaker(world, rng, execute)
    iid = maker.generate(IID_TEMPLATES, spec.iid_total)
    compositional = maker.generate([t for t in HELDOUT_TEMPLATES if t.role == "compositional"], spec.test_compositional)
    zero_shot = maker.generate([t for t in HELDOUT_TEMPLATES if t.role == "zero-shot"], spec.test_zero_shot)
    return assign_splits(iid, compositional + zero_shot, spec, rng)
