"""Print the figures of CoQ's decomposition stage for a file ``kbqa decompose`` wrote, against the split's gold file.

    python benchmarks/coq_decomposition_figures.py outputs/coq_pipeline/world/test.jsonl \
        outputs/coq_pipeline/decomposed/test.jsonl

prints one JSON object: the share of questions with a parsed decomposition, with as many sub-questions as the
gold one, naming a gold topic entity, and the recall of the gold relations among the ``[SCHEMA]`` phrases. See
:mod:`kbqa_lit.pipelines.coq.decomposition.figures`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.errors import KBQAError
from kbqa_lit.pipelines.coq.decomposition.figures import decomposition_figures


def main(argv: list[str] | None = None) -> int:
    """Print the figures; one line on stderr and status 2 for a missing or bad file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gold", type=Path, help="the split's own file (gold decompositions and S-expressions)")
    parser.add_argument("predicted", type=Path, help="the same split after kbqa decompose")
    args = parser.parse_args(argv)
    for path in (args.gold, args.predicted):
        if not path.is_file():
            print(f"coq_decomposition_figures: error: no such file: {path}", file=sys.stderr)
            return 2
    try:
        figures = decomposition_figures(read_jsonl(args.predicted), read_jsonl(args.gold))
    except KBQAError as exc:
        print(f"coq_decomposition_figures: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"file": str(args.predicted), **{k: round(v, 3) for k, v in figures.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
