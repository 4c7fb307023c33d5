"""Keqing's dense retrieval beside the templates' chains: the start nodes' relations nearest the sub-question.

The paper adds dense retrieval (DPR) to the template chains, so a sub-question whose fact no matched
template's chain reaches can still find it. :class:`DenseHopRetriever` does this with a sentence
encoder in place of DPR (all-MiniLM-L6-v2, offline): it reads the fact relations of the step's start
nodes in both directions (at most ``edges`` edges per node and direction, one batch of ``LIMIT``
queries: :func:`~kbqa_lit.kb.index.neighbourhood.read_edges`), writes each as the pattern of a triple
around the start node — ``something directed by`` for ``e r ?x`` (forward), ``directed by
something`` for ``?x r e`` (backward) — and returns the ``top_k`` one-hop chains whose pattern is
most similar (cosine) to the sub-question, its ``[mask]`` read as ``something``. The caller executes
them like a template's chains, so their candidates, paths and triples join the step's, and the
reasoner chooses among all of them.

Bounds: at most ``max_nodes`` start nodes are read (the first ones: a dependency can pass thousands
of paths), at most ``edges`` edges per node and direction (a hub's rarer relations beyond them are
not seen), literal nodes are skipped, and each distinct pattern is embedded once per run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.backbones.sentence_encoder import CachedEmbeddings
from kbqa_lit.data.keqing.decomposition import MASK
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.index.neighbourhood import OUT, read_edges
from kbqa_lit.kb.index.relation_inventory import is_fact_relation
from kbqa_lit.kb.lf.chains import Chain, Hop
from kbqa_lit.pipelines.keqing.verbalize import relation_words

_MASK_RE = re.compile(re.escape(MASK), re.IGNORECASE)
#: The word a sub-question's slot and a pattern's start node are written as (as in template matching).
SLOT_WORD = "something"


def hop_pattern(hop: Hop) -> str:
    """A one-hop chain as the pattern of a triple around its start node (see the module docstring)."""
    words = relation_words(hop.relation)
    return f"{SLOT_WORD} {words}" if hop.forward else f"{words} {SLOT_WORD}"


class DenseHopRetriever:
    """The one-hop chains from a step's start nodes nearest its sub-question (the module docstring).

    Args:
        store: The knowledge base (embedded store or endpoint).
        top_k: Chains returned per sub-question.
        encoder: Encoder name or folder; loaded on first use.
        max_nodes: Most start nodes whose relations are read.
        edges: Most edges read per start node and direction (the queries' ``LIMIT``).
        is_entity: Whether a node id is an entity (``False`` for literal answers); all are by default.

    Raises:
        UserInputError: When ``top_k`` or ``max_nodes`` is below 1.
    """

    def __init__(
        self,
        store: object,
        top_k: int = 2,
        encoder: str = MINILM,
        max_nodes: int = 100,
        edges: int = 200,
        is_entity: Callable[[str], bool] | None = None,
    ) -> None:
        if top_k < 1 or max_nodes < 1 or edges < 1:
            raise UserInputError(f"dense top_k, max_nodes and edges must be >= 1, got {top_k}, {max_nodes} and {edges}")
        self.store = store
        self.top_k = int(top_k)
        self.max_nodes = int(max_nodes)
        self.edges = int(edges)
        self.is_entity = is_entity or (lambda _: True)
        self.embeddings = CachedEmbeddings(encoder)

    def hops(self, nodes: Sequence[str]) -> list[Hop]:
        """The distinct fact-relation hops out of (forward) and into (backward) the first ``max_nodes`` entity nodes."""
        ids = [n for n in dict.fromkeys(nodes) if self.is_entity(n)][: self.max_nodes]
        found = {
            Hop(e.relation, e.direction == OUT)
            for node_edges in read_edges(self.store, ids, self.edges).values()
            for e in node_edges
            if is_fact_relation(e.relation)
        }
        return sorted(found, key=lambda h: (h.relation, not h.forward))

    def chains(self, text: str, nodes: Sequence[str]) -> list[tuple[Chain, float]]:
        """The ``top_k`` one-hop chains from ``nodes`` nearest ``text``, best first, with their cosine.

        Raises:
            StoreError: When the relations cannot be read.
        """
        hops = self.hops(nodes)
        if not hops:
            return []
        question = " ".join(_MASK_RE.sub(SLOT_WORD, text).split())
        vectors = self.embeddings.embed([question, *(hop_pattern(h) for h in hops)])
        scores = (vectors[1:] @ vectors[0]).tolist()
        order = sorted(range(len(hops)), key=lambda i: (-scores[i], i))[: self.top_k]
        return [((hops[i],), float(scores[i])) for i in order]


__all__ = ["SLOT_WORD", "DenseHopRetriever", "hop_pattern"]
