"""Do the project's SPARQL and each dataset's gold SPARQL give the same answers? Random KBs decide.

For every GrailQA dev question that carries ``sparql_query`` and every CWQ question with an
S-expression in ``../shared/data``, and for each seed, a small KB is built from the gold query's
triple patterns (:mod:`kbqa_lit.kb.lf.gold_agreement`); the normalised gold query and
``sexpr_to_sparql(S-expression, semantics=<dataset>, ontology=...)`` run on it in Oxigraph. A
question agrees when every seed gives the same answers (for a gold ``ORDER BY ... LIMIT 1``, any
one of the tied best members). Prints the agreement rate per dataset and the first misses.

usage: python benchmarks/bench_gold_sparql_agreement.py [--seeds 20] [--data ../shared/data]
           [--show 5] [--baseline OLD_SPARQL_PY]

``--baseline`` also scores another converter module (e.g. ``git show main:kbqa_lit/kb/lf/sparql.py
> /tmp/old_sparql.py``) called as its readers called it: ``exclude-topic`` for both datasets,
ties kept, no ontology.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kbqa_lit.kb.lf.gold_agreement import agreement, load_gold_pairs
from kbqa_lit.kb.lf.ontology import Ontology
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _baseline(path: str) -> Callable[[str, str], str]:
    spec = importlib.util.spec_from_file_location("baseline_sparql", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda sexpr, _dataset: module.sexpr_to_sparql(sexpr, semantics="exclude-topic")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="random KBs per question (default 20)")
    parser.add_argument("--data", default=str(DATA), help="the shared data folder")
    parser.add_argument("--show", type=int, default=5, help="misses printed per dataset")
    parser.add_argument("--baseline", help="another sparql.py to score the same way (old behaviour)")
    args = parser.parse_args()
    onto = Ontology.load(Path(args.data) / "ontology")
    pairs = load_gold_pairs(args.data)
    converters: dict[str, Callable[[str, str], str]] = {
        "kbqa_lit": lambda sexpr, dataset: sexpr_to_sparql(sexpr, semantics=dataset, ontology=onto),
        "kbqa_lit, no ontology": lambda sexpr, dataset: sexpr_to_sparql(sexpr, semantics=dataset),
    }
    if args.baseline:
        converters["baseline"] = _baseline(args.baseline)
    for name, convert in converters.items():
        for dataset, items in pairs.items():
            start = time.perf_counter()
            rate, misses = agreement(items, lambda s, d=dataset, c=convert: c(s, d), args.seeds, onto)
            row = {
                "converter": name,
                "dataset": dataset,
                "questions": len(items),
                "seeds": args.seeds,
                "agree": len(items) - len(misses),
                "agreement": round(rate, 4),
                "seconds": round(time.perf_counter() - start, 1),
            }
            print(json.dumps(row))
            for qid, sexpr, seed in misses[: args.show]:
                print(json.dumps({"miss": qid, "seed": seed, "s_expression": sexpr}))


if __name__ == "__main__":
    main()
