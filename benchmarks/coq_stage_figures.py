"""Print the end-to-end figures of CoQ's refinement and pattern stage for a file ``kbqa predict`` wrote.

    python benchmarks/coq_stage_figures.py outputs/coq_pipeline/patterns/test.jsonl

prints one JSON object: patterns per question, the share of questions (with gold pairs) that get a
gold pattern, and precision / recall / F1 of the refined relations and entities against the gold
S-expression, counting the gold items the retriever missed (``retrieved``: the share it proposed at
all). See :mod:`kbqa_lit.pipelines.coq.stage_figures`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kbqa_lit.data.schema import read_jsonl
from kbqa_lit.errors import KBQAError
from kbqa_lit.pipelines.coq.stage_figures import schema_stage_figures


def main(argv: list[str] | None = None) -> int:
    """Print the figures of each file given; one line on stderr and status 2 for a bad file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="PatternWriter output (JSON lines)")
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.is_file():
            print(f"coq_stage_figures: error: no such file: {path}", file=sys.stderr)
            return 2
        try:
            figures = schema_stage_figures(read_jsonl(path))
        except KBQAError as exc:
            print(f"coq_stage_figures: error: {exc}", file=sys.stderr)
            return 2
        print(json.dumps({"file": str(path), **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
