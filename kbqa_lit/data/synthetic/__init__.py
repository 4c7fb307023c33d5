"""The synthetic world: a small Freebase-like KB with questions, built offline and deterministically.

``build_world(out_dir, seed=0, size="small")`` writes ``kb.nt``, ``schema.json`` and
``{train,dev,test}.jsonl`` (see :mod:`kbqa_lit.data.synthetic.world`). It is the embedded default
dataset of the demo, the quickstart config and the tests: no network and no external data.
"""

from kbqa_lit.data.synthetic.sizes import SIZES
from kbqa_lit.data.synthetic.world import build_world

__all__ = ["SIZES", "build_world"]
